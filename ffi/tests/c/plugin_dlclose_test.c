/* Loads a Rust library that embeds fkrng (argv[1], built from ffi/plugin-check without
 * -z nodelete), reads through it on a second thread, closes the library while that thread
 * is alive, then lets the thread exit. Anything fkrng left registered for the thread that
 * points into the library (a destructor, a descriptor) must stay mapped, or the host dies
 * here with SIGSEGV. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int (*plugin_fill)(void *, size_t);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int has_read, may_exit;
static unsigned char bytes[32];

static void *reader(void *unused) {
    (void)unused;
    int ok = plugin_fill(bytes, sizeof bytes) == 0;
    pthread_mutex_lock(&lock);
    has_read = ok ? 1 : -1;
    pthread_cond_broadcast(&changed);
    while (!may_exit) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: plugin_dlclose_test PATH/libfkrng_plugin_check.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "plugin_dlclose_test: FAILED: %s\n", dlerror());
        return 1;
    }
    plugin_fill = (int (*)(void *, size_t))dlsym(lib, "plugin_fill");
    pthread_t t;
    if (!plugin_fill || pthread_create(&t, NULL, reader, NULL) != 0) {
        fprintf(stderr, "plugin_dlclose_test: FAILED: symbol or thread\n");
        return 1;
    }
    pthread_mutex_lock(&lock);
    while (!has_read) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    static const unsigned char zero[32];
    if (has_read != 1 || memcmp(bytes, zero, sizeof bytes) == 0 || dlclose(lib) != 0) {
        fprintf(stderr, "plugin_dlclose_test: FAILED: read or dlclose\n");
        return 1;
    }
    pthread_mutex_lock(&lock);
    may_exit = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    printf("plugin_dlclose_test: a thread that read through a dlclosed library exited: ok\n");
    return 0;
}
