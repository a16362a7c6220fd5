/*
 * fkrng.h: the C interface of fkrng, a per-thread fast-key-erasure ChaCha20 CSPRNG.
 *
 * Link with libfkrng_ffi.so (-lfkrng_ffi) or libfkrng_ffi.a (then also -lpthread -ldl -lm;
 * `cargo rustc -p fkrng-ffi --crate-type staticlib -- --print native-static-libs` lists
 * them). Linux and Android.
 *
 * Each thread has its own generator, seeded from the kernel (the getrandom system call,
 * or /dev/urandom where that is missing or refused) on its first read, reseeded at the first
 * refill or direct fill after 1 to 2 MiB of output or 60 seconds (a single large read is one
 * batch under one key), in a forked child before its first output, and after a VM
 * snapshot restore where the VMClock device is present. Small reads are a copy from the
 * thread's 992-byte buffer: no system call, no lock, no allocation. Every function may be
 * called from any thread, from signal handlers and from thread-exit destructors (those
 * reads use a one-off generator keyed from the kernel), except that a thread's first call
 * must not be made in a signal handler: it sets up the thread's state, which is not
 * async-signal-safe (glibc allocates to register the thread-exit destructor). Call once
 * on each thread that may run such a handler.
 *
 * errno: a call that succeeds leaves errno as it was before the call (the system calls
 * made inside, such as the probe for the VMClock device at a process's first seeding, may
 * fail on the way; their errno is not passed on), so a signal handler may call any of these
 * functions without saving errno itself.
 *
 * Errors: fkrng_fill and fkrng_reseed return -1 and set errno. The functions without an
 * error return (fkrng_u32, fkrng_u64, arc4random_buf, arc4random, arc4random_uniform)
 * abort the process with a one-line message on stderr when the kernel's random source
 * fails at a (re)seeding; they never return output from an unseeded key. No function
 * unwinds or longjmps into the caller.
 */
#ifndef FKRNG_H
#define FKRNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fills len bytes at buf with random bytes.
 * Returns 0 (errno unchanged), or -1 with errno set:
 *   EINVAL  buf is NULL while len is not 0, or len exceeds PTRDIFF_MAX (nothing written);
 *   the kernel's error number (EIO if there is none) when the random source fails at a
 *   (re)seeding: buf then holds len zero bytes, never output. The next call tries the
 *   kernel again.
 * len 0 returns 0 and touches nothing.
 */
int fkrng_fill(void *buf, size_t len);

/* A random 32-bit integer (4 bytes, little-endian). Aborts if the source fails. */
uint32_t fkrng_u32(void);

/* A random 64-bit integer (8 bytes, little-endian). Aborts if the source fails. */
uint64_t fkrng_u64(void);

/*
 * Reseeds the calling thread's generator now with 32 bytes from the kernel.
 * Returns 0 (errno unchanged), or -1 with errno set (the kernel's error number, EIO if
 * there is none); on error the thread keeps its current key.
 */
int fkrng_reseed(void);

/*
 * Makes every thread of the process reseed before its next output: call it after
 * restoring a VM snapshot or a process checkpoint. Always returns 0; each thread's next
 * read reports (or aborts on) a failure of the source itself.
 */
int fkrng_reseed_all(void);

/*
 * OpenBSD's interface, defined by libfkrng_ffi.so and libfkrng_ffi.a. Linking the library
 * before the C library, or LD_PRELOAD=libfkrng_ffi.so, makes a program's calls to these
 * (glibc 2.36 and later also declares them in <stdlib.h>) go to fkrng.
 *
 * arc4random_buf  fills len bytes at buf; aborts if buf is NULL with len > 0.
 * arc4random      a random 32-bit integer.
 * arc4random_uniform
 *                 a uniform integer in [0, upper_bound), without modulo bias (draws below
 *                 2^32 mod upper_bound are rejected and drawn again); 0 for upper_bound
 *                 0 or 1.
 * All three abort if the source fails.
 */
#if defined(__cplusplus) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 36))
/* glibc declares them, with its own exception specification, which C++ requires to match. */
#include <stdlib.h>
#else
void arc4random_buf(void *buf, size_t len);
uint32_t arc4random(void);
uint32_t arc4random_uniform(uint32_t upper_bound);
#endif

#ifdef __cplusplus
}
#endif

#endif /* FKRNG_H */
