//! Checks of fkrng's thread-local generator and `FkeRng` in a WebAssembly module without an
//! OS, exported as `smoke`, which returns 0 when every check holds and otherwise the number
//! of the first that failed. The Node script reads the source's call count beside it.

use rand_core::{Rng, SeedableRng};

#[cfg(getrandom_backend = "custom")]
unsafe extern "C" {
    /// Fills `len` bytes at `dest` from the host (`crypto.getRandomValues`); 0 on success.
    fn host_random(dest: *mut u8, len: usize) -> i32;
}

/// getrandom's custom backend: the host's source.
///
/// # Safety
/// `dest` points to `len` writable bytes (getrandom's contract for this function).
#[cfg(getrandom_backend = "custom")]
#[unsafe(no_mangle)]
unsafe extern "Rust" fn __getrandom_v03_custom(
    dest: *mut u8,
    len: usize,
) -> Result<(), getrandom::Error> {
    // SAFETY: `dest` and `len` are passed on as getrandom received them.
    match unsafe { host_random(dest, len) } {
        0 => Ok(()),
        _ => Err(getrandom::Error::UNSUPPORTED),
    }
}

/// Runs the checks: 0 when all hold, else the number of the first that failed.
#[unsafe(no_mangle)]
pub extern "C" fn smoke() -> u32 {
    // 1: the seeded generator gives its known first word (README's example).
    let mut seeded = fkrng::FkeRng::from_seed([0u8; 32]);
    if seeded.next_u32().to_le_bytes() != [0xda, 0x41, 0x59, 0x7c] {
        return 1;
    }
    // 2: two 16-byte reads of the thread's generator differ, and neither is zero.
    let a: [u8; 16] = fkrng::array();
    let b: [u8; 16] = fkrng::array();
    if a == b || a == [0; 16] || b == [0; 16] {
        return 2;
    }
    // 3: a fallible read works (no clock is needed: the first read does not panic).
    let mut c = [0u8; 32];
    if fkrng::try_fill(&mut c).is_err() || c == [0; 32] {
        return 3;
    }
    // 4: 3 MiB of output, more than the largest reseed budget (2 MiB), in refills and
    // direct fills; the script checks that the source was read again for the reseed.
    let mut big = vec![0u8; 1 << 20];
    for _ in 0..3 {
        fkrng::fill(&mut big[..1000]);
        fkrng::fill(&mut big);
    }
    if big.iter().all(|&x| x == 0) {
        return 4;
    }
    // 5: no fork exists here, and the crate says so.
    if fkrng::fork_protection() != Some(fkrng::ForkProtection::None) {
        return 5;
    }
    // 6: a handle from `rng()` works through the rand_core traits.
    let mut rng = fkrng::rng();
    if rng.next_u64() == rng.next_u64() {
        return 6;
    }
    0
}
