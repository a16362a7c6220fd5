/* Loads libfkrng_ffi.so with dlopen (the path is argv[1]), as a plugin or Python would:
 * a library built with the initial-exec TLS model fails here ("cannot allocate memory in
 * static TLS block"). Reads from the main thread and a second thread, then closes it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int (*fill_fn)(void *, size_t);
static fill_fn fill;

static void *thread_fill(void *out) { return fill(out, 32) == 0 ? out : NULL; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_test PATH/libfkrng_ffi.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen_test: FAILED: %s\n", dlerror());
        return 1;
    }
    fill = (fill_fn)dlsym(lib, "fkrng_fill");
    uint64_t (*u64)(void) = (uint64_t (*)(void))dlsym(lib, "fkrng_u64");
    if (!fill || !u64) {
        fprintf(stderr, "dlopen_test: FAILED: missing symbols\n");
        return 1;
    }
    unsigned char a[32] = {0}, b[32] = {0}, zero[32] = {0};
    pthread_t t;
    void *ret = NULL;
    int ok = fill(a, sizeof a) == 0 && memcmp(a, zero, 32) != 0;
    ok = ok && pthread_create(&t, NULL, thread_fill, b) == 0 && pthread_join(t, &ret) == 0;
    ok = ok && ret == b && memcmp(b, zero, 32) != 0 && memcmp(a, b, 32) != 0;
    ok = ok && u64() != u64();
    if (dlclose(lib) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "dlopen_test: FAILED\n");
        return 1;
    }
    printf("dlopen_test: dlopen, fills in two threads, integers, dlclose: ok\n");
    return 0;
}
