/* Calls that succeed leave errno as the caller set it. The process's first fkrng_fill
 * (which seeds the thread and probes for the VMClock device), fkrng_reseed, the read after
 * a reseed, the other functions, a new thread's first call and a forked child's first call
 * are each made with errno set to a sentinel no call sets, which must still be there
 * afterwards. Run it as a process of its own: the first call must be the first of the
 * process. Prints what errno held after each call; exits 0 when every check holds. */
#include "fkrng.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Larger than any errno value the kernel or the C library sets. */
#define SENTINEL 7919

static int failures;

static void check(const char *what, int rc, int expected_rc) {
    int after = errno;
    printf("errno_test: %-36s returned %d, errno %d\n", what, rc, after);
    if (rc != expected_rc || after != SENTINEL) {
        fprintf(stderr, "errno_test: FAILED: %s: returned %d (expected %d), errno %d (%s), expected %d\n",
                what, rc, expected_rc, after, strerror(after), SENTINEL);
        failures++;
    }
}

static void *thread_main(void *arg) {
    (void)arg;
    unsigned char b[32];
    errno = SENTINEL;
    check("a new thread's first fkrng_fill", fkrng_fill(b, sizeof b), 0);
    return NULL;
}

int main(void) {
    unsigned char buf[4096];

    errno = SENTINEL;
    check("the process's first fkrng_fill", fkrng_fill(buf, 32), 0);
    errno = SENTINEL;
    check("fkrng_reseed", fkrng_reseed(), 0);
    errno = SENTINEL;
    check("fkrng_fill after fkrng_reseed", fkrng_fill(buf, 32), 0);
    errno = SENTINEL;
    check("fkrng_fill of 4096 bytes", fkrng_fill(buf, sizeof buf), 0);
    errno = SENTINEL;
    check("fkrng_fill of 0 bytes", fkrng_fill(NULL, 0), 0);
    errno = SENTINEL;
    check("fkrng_reseed_all", fkrng_reseed_all(), 0);
    errno = SENTINEL;
    check("fkrng_fill after fkrng_reseed_all", fkrng_fill(buf, 32), 0);
    errno = SENTINEL;
    check("fkrng_u32", (fkrng_u32(), 0), 0);
    errno = SENTINEL;
    check("fkrng_u64", (fkrng_u64(), 0), 0);
    errno = SENTINEL;
    check("arc4random", (arc4random(), 0), 0);
    errno = SENTINEL;
    check("arc4random_uniform", (arc4random_uniform(1000), 0), 0);
    errno = SENTINEL;
    arc4random_buf(buf, 64);
    check("arc4random_buf", 0, 0);

    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "errno_test: FAILED: could not run a second thread\n");
        failures++;
    }

    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        failures = 0;
        errno = SENTINEL;
        check("a forked child's first fkrng_fill", fkrng_fill(buf, 32), 0);
        fflush(stdout);
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "errno_test: FAILED: the forked child's checks\n");
        failures++;
    }

    /* A failing call still sets errno as the header says. */
    errno = SENTINEL;
    int rc = fkrng_fill(NULL, 16);
    if (rc != -1 || errno != EINVAL) {
        fprintf(stderr, "errno_test: FAILED: fkrng_fill(NULL, 16) returned %d, errno %d\n", rc, errno);
        failures++;
    }

    if (failures) return 1;
    printf("errno_test: errno unchanged by every call that succeeded\n");
    return 0;
}
