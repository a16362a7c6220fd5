/* The C interface linked statically: fills of every small length, argument errors,
 * integers, arc4random_uniform's range, a forked child and a second thread, each of
 * whose bytes must differ from the parent's. Exits 0 when every check holds. */
#include "fkrng.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "static_test: FAILED at line %d: %s\n", __LINE__, #cond); \
            failures++;                                                                \
        }                                                                              \
    } while (0)

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static void *thread_fill(void *out) {
    if (fkrng_fill(out, 32) != 0) return NULL;
    return out;
}

int main(void) {
    unsigned char buf[2048 + 8];
    for (size_t len = 1; len <= 2048; len++) {
        memset(buf, 0xa5, sizeof buf);
        memset(buf, 0, len);
        CHECK(fkrng_fill(buf, len) == 0);
        for (size_t i = len; i < len + 8; i++) CHECK(buf[i] == 0xa5);
        if (len >= 16) CHECK(!all_zero(buf + len - 16, 16));
    }

    errno = 0;
    CHECK(fkrng_fill(NULL, 16) == -1);
    CHECK(errno == EINVAL);
    CHECK(fkrng_fill(NULL, 0) == 0);

    uint64_t a = fkrng_u64(), b = fkrng_u64();
    CHECK(a != b);
    uint32_t c = fkrng_u32(), d = fkrng_u32(), e = arc4random();
    CHECK(!(c == d && d == e));
    CHECK(arc4random_uniform(0) == 0);
    CHECK(arc4random_uniform(1) == 0);
    unsigned seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint32_t v = arc4random_uniform(7);
        CHECK(v < 7);
        if (v < 7) seen[v]++;
    }
    for (int i = 0; i < 7; i++) CHECK(seen[i] > 800);
    unsigned char x[32], y[32];
    arc4random_buf(x, sizeof x);
    arc4random_buf(y, sizeof y);
    CHECK(memcmp(x, y, 32) != 0);
    CHECK(fkrng_reseed() == 0);
    CHECK(fkrng_reseed_all() == 0);

    /* fork: the child's next 32 bytes against the parent's next 32 bytes. */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char child[32];
        int ok = fkrng_fill(child, sizeof child) == 0;
        ok = ok && write(fds[1], child, sizeof child) == (ssize_t)sizeof child;
        _exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    unsigned char parent[32], child[32];
    CHECK(fkrng_fill(parent, sizeof parent) == 0);
    CHECK(read(fds[0], child, sizeof child) == (ssize_t)sizeof child);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(memcmp(parent, child, 32) != 0);
    CHECK(!all_zero(child, 32));

    /* A second thread: its own generator, its own bytes. */
    unsigned char theirs[32] = {0}, ours[32];
    pthread_t t;
    void *ret = NULL;
    CHECK(pthread_create(&t, NULL, thread_fill, theirs) == 0);
    CHECK(pthread_join(t, &ret) == 0);
    CHECK(ret == theirs);
    CHECK(fkrng_fill(ours, sizeof ours) == 0);
    CHECK(!all_zero(theirs, 32));
    CHECK(memcmp(theirs, ours, 32) != 0);

    if (failures) return 1;
    printf("static_test: fills 1..2048, EINVAL, integers, uniform, fork, thread: ok\n");
    return 0;
}
