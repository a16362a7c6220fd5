/* Run under strace with every getrandom system call failing with EIO
 * (-e inject=getrandom:error=EIO): fkrng_fill and fkrng_reseed return -1 with errno EIO and
 * leave zeros in the buffer; fkrng_u32 and arc4random_buf abort with a one-line message
 * on stderr (checked in forked children). Exits 0 when every check holds. */
#include "fkrng.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int aborts(int which) {
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char b[16];
        if (which == 0) (void)fkrng_u32();
        else arc4random_buf(b, sizeof b);
        _exit(0); /* reached only if the call returned */
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 0;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main(void) {
    int ok = 1;
    unsigned char buf[64], zeros[64];
    memset(buf, 0x55, sizeof buf);
    memset(zeros, 0, sizeof zeros);
    errno = 0;
    if (fkrng_fill(buf, sizeof buf) != -1 || errno != EIO) ok = 0, fprintf(stderr, "fill\n");
    if (memcmp(buf, zeros, sizeof buf) != 0) ok = 0, fprintf(stderr, "not zeroed\n");
    errno = 0;
    if (fkrng_reseed() != -1 || errno != EIO) ok = 0, fprintf(stderr, "reseed\n");
    if (!aborts(0)) ok = 0, fprintf(stderr, "fkrng_u32 did not abort\n");
    if (!aborts(1)) ok = 0, fprintf(stderr, "arc4random_buf did not abort\n");
    if (!ok) {
        fprintf(stderr, "fail_test: FAILED\n");
        return 1;
    }
    printf("fail_test: EIO from fkrng_fill and fkrng_reseed (buffer zeroed), aborts: ok\n");
    return 0;
}
