/* A thread reads through a Rust library that embeds fkrng (argv[1], built from
 * ffi/plugin-check without -z nodelete), then exits; while it runs a pthread key destructor
 * of the host (a key created before the library's first read, then one created after it),
 * the host dlcloses the library, which is unloaded then (its thread-local destructors have
 * run). The C library must not call into the unloaded copy: the host survives the thread's
 * exit. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int (*plugin_fill)(void *, size_t);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int in_destructor, closed, read_ok;
static pthread_key_t key;

/* The host's key destructor: says it runs, and holds the thread until the host dlclosed. */
static void hold(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lock);
    in_destructor = 1;
    pthread_cond_broadcast(&changed);
    while (!closed) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void *reader(void *unused) {
    (void)unused;
    unsigned char bytes[32] = {0};
    static const unsigned char zero[32];
    pthread_setspecific(key, &key);
    read_ok = plugin_fill(bytes, sizeof bytes) == 0 && memcmp(bytes, zero, sizeof bytes) != 0;
    return NULL;
}

static void *first_read(void *unused) {
    unsigned char bytes[16];
    (void)unused;
    return (void *)(long)(plugin_fill(bytes, sizeof bytes) == 0);
}

/* One dlopen, read on a new thread, dlclose in that thread's key destructor, exit. */
static int run(const char *path, int key_after_first_read) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib || !(plugin_fill = (int (*)(void *, size_t))dlsym(lib, "plugin_fill"))) {
        fprintf(stderr, "plugin_key_dtor_test: FAILED: dlopen or dlsym\n");
        return 0;
    }
    pthread_t t;
    void *ok = (void *)1;
    /* The library's own key, if any, is created at its first read: before or after ours. */
    if (key_after_first_read &&
        (pthread_create(&t, NULL, first_read, NULL) != 0 || pthread_join(t, &ok) != 0 || !ok)) {
        fprintf(stderr, "plugin_key_dtor_test: FAILED: the first read\n");
        return 0;
    }
    in_destructor = closed = read_ok = 0;
    if (pthread_key_create(&key, hold) != 0 || pthread_create(&t, NULL, reader, NULL) != 0) {
        fprintf(stderr, "plugin_key_dtor_test: FAILED: key or thread\n");
        return 0;
    }
    pthread_mutex_lock(&lock);
    while (!in_destructor) pthread_cond_wait(&changed, &lock);
    int unloaded = dlclose(lib) == 0 && !dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    closed = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    pthread_key_delete(key);
    if (!read_ok || !unloaded) {
        fprintf(stderr, "plugin_key_dtor_test: FAILED: %s\n",
                read_ok ? "the library stayed loaded after dlclose" : "the read");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: plugin_key_dtor_test PATH/libfkrng_plugin_check.so\n");
        return 2;
    }
    if (!run(argv[1], 0) || !run(argv[1], 1)) return 1;
    printf("plugin_key_dtor_test: dlclose in a reader's key destructor (a key made before the "
           "first read, one made after): unloaded, the thread exited: ok\n");
    return 0;
}
