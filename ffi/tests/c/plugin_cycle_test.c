/* Loads and unloads a Rust library that embeds fkrng (argv[1], built from ffi/plugin-check
 * without -z nodelete) argv[2] times, reading through it on a new thread each time and
 * joining that thread before the dlclose. Every cycle must give back what it took: the
 * pthread keys free afterwards are those free before, the mappings are as many, VmRSS grows
 * by under 1 MiB, and the host can still create a key. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int (*plugin_fill)(void *, size_t);

static void *reader(void *out) {
    return (void *)(long)(plugin_fill(out, 32) == 0);
}

/* pthread keys that can still be created (each made, then deleted). */
static int free_keys(void) {
    static pthread_key_t keys[4096];
    int n = 0;
    while (n < 4096 && pthread_key_create(&keys[n], NULL) == 0) n++;
    for (int i = 0; i < n; i++) pthread_key_delete(keys[i]);
    return n;
}

static long mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    for (int c; f && (c = getc(f)) != EOF;) n += c == '\n';
    if (f) fclose(f);
    return n;
}

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

static int cycle(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "plugin_cycle_test: FAILED: %s\n", dlerror());
        return 0;
    }
    plugin_fill = (int (*)(void *, size_t))dlsym(lib, "plugin_fill");
    unsigned char bytes[32] = {0};
    static const unsigned char zero[32];
    pthread_t t;
    void *ok = NULL;
    if (!plugin_fill || pthread_create(&t, NULL, reader, bytes) != 0 || pthread_join(t, &ok) != 0 ||
        !ok || memcmp(bytes, zero, sizeof bytes) == 0) {
        fprintf(stderr, "plugin_cycle_test: FAILED: symbol, thread or read\n");
        return 0;
    }
    if (dlclose(lib) != 0 || dlopen(path, RTLD_NOW | RTLD_NOLOAD)) {
        fprintf(stderr, "plugin_cycle_test: FAILED: the library stayed loaded after dlclose\n");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: plugin_cycle_test PATH/libfkrng_plugin_check.so CYCLES\n");
        return 2;
    }
    int cycles = atoi(argv[2]);
    /* A few cycles first, so that the allocator's arenas and the thread stack cache exist. */
    for (int i = 0; i < 8; i++)
        if (!cycle(argv[1])) return 1;
    int keys = free_keys();
    long maps = mappings(), rss = rss_kib();
    for (int i = 0; i < cycles; i++)
        if (!cycle(argv[1])) {
            fprintf(stderr, "plugin_cycle_test: FAILED at cycle %d\n", i);
            return 1;
        }
    int keys_after = free_keys();
    long maps_after = mappings(), growth = rss_kib() - rss;
    pthread_key_t key;
    int created = pthread_key_create(&key, NULL) == 0;
    printf("plugin_cycle_test: %d cycles: free pthread keys %d -> %d, mappings %ld -> %ld, "
           "VmRSS %+ld KiB, a new key: %s\n",
           cycles, keys, keys_after, maps, maps_after, growth, created ? "created" : "refused");
    if (!created || keys_after != keys || maps_after != maps || growth >= 1024) {
        fprintf(stderr, "plugin_cycle_test: FAILED: a cycle left a key, a mapping or memory\n");
        return 1;
    }
    return 0;
}
