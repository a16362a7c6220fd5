/* A program that knows nothing of fkrng: N calls of arc4random_buf for 16 bytes each (glibc
 * 2.36 declares it in <stdlib.h>). Run under LD_PRELOAD=libfkrng_ffi.so the calls go to
 * fkrng; with --expect-fkrng it fails unless they do. Prints how many 16-byte results
 * were distinct from their predecessor (all, for a working generator). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int expect_fkrng = argc > 2 && strcmp(argv[2], "--expect-fkrng") == 0;
    if (expect_fkrng && !dlsym(RTLD_DEFAULT, "fkrng_fill")) {
        fprintf(stderr, "preload_test: FAILED: libfkrng_ffi.so is not loaded\n");
        return 1;
    }
    unsigned char prev[16] = {0}, cur[16];
    long distinct = 0;
    for (long i = 0; i < n; i++) {
        arc4random_buf(cur, sizeof cur);
        if (memcmp(prev, cur, sizeof cur) != 0) distinct++;
        memcpy(prev, cur, sizeof cur);
    }
    printf("preload_test: %ld calls of arc4random_buf(16), %ld distinct from the previous\n", n,
           distinct);
    return distinct == n ? 0 : 1;
}
