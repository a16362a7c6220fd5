/* Threads that read and exit, for valgrind's thread checkers: two waves of argv[1] threads
 * (the second takes the slots the first released at its exit), each making argv[2] reads of
 * 16 bytes and one of each integer. With a third argument, two more threads race, which the
 * checkers must report: "race" increments a counter of this program's without a lock,
 * "buffer-race" has fkrng fill one buffer from both threads at once. */
#include <fkrng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reads;
static long unlocked_counter;
static unsigned char shared[16];

static void *reader(void *out) {
    unsigned char bytes[16];
    for (int i = 0; i < reads; i++)
        if (fkrng_fill(bytes, sizeof bytes) != 0) return NULL;
    ((unsigned char *)out)[0] = (unsigned char)(fkrng_u32() ^ fkrng_u64() ^ bytes[0]);
    return out;
}

static void *racer(void *in_buffer) {
    for (int i = 0; i < 1000; i++)
        if (in_buffer)
            fkrng_fill(shared, sizeof shared);
        else
            unlocked_counter++;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: threads_test THREADS READS [race]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    reads = atoi(argv[2]);
    int race = argc > 3 && strcmp(argv[3], "race") == 0;
    int buffer_race = argc > 3 && strcmp(argv[3], "buffer-race") == 0;
    pthread_t t[64], r[2];
    unsigned char out[64];
    if (threads < 1 || threads > 64) return 2;
    for (int wave = 0; wave < 2; wave++) {
        for (int i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, reader, &out[i]) != 0) return 1;
        for (int i = 0; i < threads; i++) {
            void *ok;
            if (pthread_join(t[i], &ok) != 0 || !ok) {
                fprintf(stderr, "threads_test: FAILED: a read\n");
                return 1;
            }
        }
    }
    if (race || buffer_race) {
        for (int i = 0; i < 2; i++) pthread_create(&r[i], NULL, racer, buffer_race ? shared : NULL);
        for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
    }
    printf("threads_test: 2 waves of %d threads, %d reads each%s: ok\n", threads, reads,
           race ? ", and an unlocked counter" : buffer_race ? ", and one buffer filled by two" : "");
    return 0;
}
