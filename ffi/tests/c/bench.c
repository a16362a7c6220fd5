/* Times N calls per request size of glibc's arc4random_buf (called directly) against
 * fkrng_fill and fkrng's arc4random_buf, both looked up in libfkrng_ffi.so (argv[1]) loaded
 * with RTLD_LOCAL, so that the direct call still reaches glibc. Prints one line per
 * function and size: the median of 5 runs in ns per call. A measurement, not a test. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*buf_fn)(void *, size_t);
typedef int (*fill_fn)(void *, size_t);

static fill_fn fk_fill;
static buf_fn fk_arc4;

static void call_glibc(void *p, size_t n) { arc4random_buf(p, n); }
static void call_fkrng_fill(void *p, size_t n) {
    if (fk_fill(p, n) != 0) abort();
}
static void call_fkrng_arc4(void *p, size_t n) { fk_arc4(p, n); }

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char sink[1 << 16];

static double time_one(buf_fn f, size_t len, long n) {
    double runs[5];
    f(sink, len); /* first read: seeding and set-up, not timed */
    for (int r = 0; r < 5; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            f(sink, len);
            __asm__ volatile("" ::: "memory");
        }
        runs[r] = (now_ns() - t0) / n;
    }
    qsort(runs, 5, sizeof runs[0], cmp);
    return runs[2];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench PATH/libfkrng_ffi.so [CALLS]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 200000;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "bench: %s\n", dlerror());
        return 1;
    }
    fk_fill = (fill_fn)dlsym(lib, "fkrng_fill");
    fk_arc4 = (buf_fn)dlsym(lib, "arc4random_buf");
    if (!fk_fill || !fk_arc4) return 1;
    size_t sizes[] = {16, 32, 1024, 65536};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = sizes[s];
        long calls = len >= 65536 ? n / 100 : n;
        double g = time_one(call_glibc, len, calls);
        double f = time_one(call_fkrng_fill, len, calls);
        double a = time_one(call_fkrng_arc4, len, calls);
        printf("bench: bytes=%zu glibc_arc4random_buf_ns=%.1f fkrng_fill_ns=%.1f "
               "fkrng_arc4random_buf_ns=%.1f ratio_fill=%.3f ratio_arc4=%.3f\n",
               len, g, f, a, f / g, a / g);
    }
    return 0;
}
