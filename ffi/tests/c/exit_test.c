/* The process exits while other threads read: fkrng's unload code runs at exit (its
 * DT_FINI_ARRAY entry) and must leave mapped every state a running thread holds. 8 threads
 * read in a loop, 8 more start and make their first reads during the exit; the process must
 * end with status 0, never a fault. */
#include <fkrng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t started;

static int first_wave;

static void *reader(void *first) {
    unsigned char bytes[64];
    if (first) pthread_barrier_wait(&started);
    for (;;)
        if (fkrng_fill(bytes, sizeof bytes) != 0) abort();
    return NULL;
}

static void *spawner(void *unused) {
    (void)unused;
    pthread_t t;
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t, NULL, reader, NULL) != 0) abort();
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_barrier_init(&started, NULL, 9);
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t, NULL, reader, &first_wave) != 0) return 1;
    pthread_barrier_wait(&started);
    if (pthread_create(&t, NULL, spawner, NULL) != 0) return 1;
    exit(0);
}
