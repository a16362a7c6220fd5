/* A read abandoned by siglongjmp, as C hosts do that jump out of signal handlers: the
 * first thread starts 64 MiB fills and a SIGALRM handler jumps out of one 2 ms later,
 * leaving that read unfinished; the thread then exits. A second thread, started after,
 * takes the state slot the first one left and makes READS 16-byte reads, which must come
 * from its state, not from the one-off path (a getrandom system call each):
 * scripts/ffi.sh counts the second thread's getrandom calls under `strace -ff`.
 * Prints the second thread's id on stdout. Usage: abandon_test READS */
#define _GNU_SOURCE
#include "fkrng.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static sigjmp_buf jump;
static volatile sig_atomic_t jumped;

static void on_alarm(int sig) {
    (void)sig;
    jumped = 1;
    siglongjmp(jump, 1);
}

static void *abandon(void *arg) {
    (void)arg;
    size_t len = (size_t)64 << 20;
    unsigned char *buf = malloc(len);
    unsigned char first[16];
    if (!buf || fkrng_fill(first, sizeof first) != 0) return (void *)1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &alarm, NULL);
    if (sigsetjmp(jump, 1) == 0) {
        struct itimerval t = {{0, 0}, {0, 2000}};
        setitimer(ITIMER_REAL, &t, NULL);
        for (;;) fkrng_fill(buf, len);
    }
    free(buf);
    return NULL;
}

static long reads;

static void *read_on(void *arg) {
    (void)arg;
    unsigned char b[16], acc = 0;
    printf("%d\n", gettid());
    fflush(stdout);
    for (long i = 0; i < reads; i++) {
        if (fkrng_fill(b, sizeof b) != 0) return (void *)1;
        acc ^= b[0];
    }
    return (void *)(size_t)(acc & 0);
}

int main(int argc, char **argv) {
    reads = argc > 1 ? atol(argv[1]) : 100000;
    /* Only the first thread takes the alarm. */
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm, NULL);
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, abandon, NULL) != 0 || pthread_join(t, &r) != 0 || r) {
        fprintf(stderr, "abandon_test: the first thread failed\n");
        return 1;
    }
    if (!jumped) {
        fprintf(stderr, "abandon_test: the alarm never jumped out of a fill\n");
        return 1;
    }
    if (pthread_create(&t, NULL, read_on, NULL) != 0 || pthread_join(t, &r) != 0 || r) {
        fprintf(stderr, "abandon_test: the second thread failed\n");
        return 1;
    }
    return 0;
}
