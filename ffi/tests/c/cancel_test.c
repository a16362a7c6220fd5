/* A deferred pthread_cancel pending on a thread that calls into fkrng: the call returns its
 * value and the thread is cancelled at its next cancellation point (pthread_testcancel), so
 * pthread_join gives PTHREAD_CANCELED. Run once per function, each time as the process's
 * first read (the VMClock probe), and again with getrandom failing with ENOSYS (the
 * /dev/random and /dev/urandom fallback). Usage: cancel_test arc4random|fkrng_fill
 * (arc4random through LD_PRELOAD=libfkrng_ffi.so; the test fails unless it is fkrng's). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkrng.h"

static const char *function;
/* Set by the reader once the call returned, before its next cancellation point. */
static volatile int returned;
static unsigned char bytes[32];

static void *reader(void *unused) {
    (void)unused;
    if (pthread_cancel(pthread_self()) != 0) return NULL; /* deferred: only pending */
    if (strcmp(function, "arc4random") == 0) {
        uint32_t value = arc4random();
        memcpy(bytes, &value, sizeof value);
        returned = 1;
    } else if (fkrng_fill(bytes, sizeof bytes) == 0) {
        returned = 1;
    }
    pthread_testcancel();
    returned = 2; /* not reached: the pending cancel acts above */
    return NULL;
}

int main(int argc, char **argv) {
    function = argc > 1 ? argv[1] : "";
    if (strcmp(function, "arc4random") != 0 && strcmp(function, "fkrng_fill") != 0) {
        fprintf(stderr, "usage: cancel_test arc4random|fkrng_fill\n");
        return 2;
    }
    Dl_info info;
    if (!dladdr((void *)arc4random, &info) || !strstr(info.dli_fname, "fkrng")) {
        fprintf(stderr, "cancel_test: FAILED: arc4random is not fkrng's\n");
        return 1;
    }
    pthread_t thread;
    void *result = NULL;
    if (pthread_create(&thread, NULL, reader, NULL) != 0 || pthread_join(thread, &result) != 0) {
        fprintf(stderr, "cancel_test: FAILED: pthread_create or pthread_join\n");
        return 1;
    }
    static const unsigned char zero[32];
    size_t filled = strcmp(function, "arc4random") == 0 ? 4 : sizeof bytes;
    if (result != PTHREAD_CANCELED || returned != 1 || memcmp(bytes, zero, filled) == 0) {
        fprintf(stderr, "cancel_test: FAILED: %s: cancelled %d, returned %d\n", function,
                result == PTHREAD_CANCELED, returned);
        return 1;
    }
    printf("cancel_test: %s returned with a cancel pending; the thread was cancelled after\n",
           function);
    return 0;
}
