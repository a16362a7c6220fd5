//! A `#![no_std]` user of `fkrng::FkeRng`.
#![no_std]

use core::panic::PanicInfo;
use fkrng::FkeRng;
use rand_core::{Rng, SeedableRng};

/// Fills `out[..len]` from an `FkeRng` seeded with the 32 bytes at `seed`.
///
/// # Safety
/// `seed` must point to 32 readable bytes and `out` to `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fkrng_no_std_fill(seed: *const u8, out: *mut u8, len: usize) -> u32 {
    // SAFETY: the caller guarantees 32 readable bytes at `seed`.
    let seed = unsafe { *seed.cast::<[u8; 32]>() };
    // SAFETY: the caller guarantees `len` writable bytes at `out`.
    let out = unsafe { core::slice::from_raw_parts_mut(out, len) };
    let mut rng = FkeRng::from_seed(seed);
    rng.fill_bytes(out);
    rng.next_u32()
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    loop {}
}
