//! The C functions called from Rust: argument errors, lengths, distinct outputs and the
//! range of `arc4random_uniform`.

use fkrng_ffi::{
    arc4random, arc4random_buf, arc4random_uniform, fkrng_fill, fkrng_reseed, fkrng_reseed_all,
    fkrng_u32, fkrng_u64,
};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

#[test]
fn fill_refuses_null_and_oversized_requests_with_einval() {
    // SAFETY: NULL with a length is refused before anything is written.
    assert_eq!(unsafe { fkrng_fill(core::ptr::null_mut(), 16) }, -1);
    assert_eq!(errno(), libc::EINVAL);
    let mut buf = [0x55u8; 8];
    // SAFETY: a length above PTRDIFF_MAX is refused before anything is written.
    assert_eq!(
        unsafe { fkrng_fill(buf.as_mut_ptr().cast(), usize::MAX) },
        -1
    );
    assert_eq!(errno(), libc::EINVAL);
    assert_eq!(buf, [0x55u8; 8], "nothing written");
    // SAFETY: a zero length touches nothing, even through NULL.
    assert_eq!(unsafe { fkrng_fill(core::ptr::null_mut(), 0) }, 0);
}

#[test]
fn fills_of_every_small_length_write_exactly_that_many_bytes() {
    for len in 1..=1100usize {
        let mut buf = vec![0u8; len + 8];
        let guard = [0xa5u8; 8];
        buf[len..].copy_from_slice(&guard);
        // SAFETY: `buf` holds `len + 8` bytes.
        assert_eq!(unsafe { fkrng_fill(buf.as_mut_ptr().cast(), len) }, 0);
        assert_eq!(buf[len..], guard, "wrote past {len} bytes");
        if len >= 16 {
            assert_ne!(
                buf[len - 16..len],
                [0u8; 16],
                "the tail of {len} bytes was not filled"
            );
        }
    }
}

#[test]
fn integers_and_buffers_differ_between_calls() {
    let a: Vec<u64> = (0..64).map(|_| fkrng_u64()).collect();
    let mut sorted = a.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 64);
    let b: Vec<u32> = (0..64).map(|_| fkrng_u32() ^ arc4random()).collect();
    assert!(b.iter().any(|&v| v != 0));
    let (mut x, mut y) = ([0u8; 32], [0u8; 32]);
    // SAFETY: both arrays are valid for writes of 32 bytes.
    unsafe {
        arc4random_buf(x.as_mut_ptr().cast(), 32);
        arc4random_buf(y.as_mut_ptr().cast(), 32);
    }
    assert_ne!(x, y);
    assert_eq!(fkrng_reseed(), 0);
    assert_eq!(fkrng_reseed_all(), 0);
    assert_ne!(fkrng_u64(), fkrng_u64());
}

#[test]
fn uniform_stays_below_the_bound_and_reaches_every_value() {
    assert_eq!(arc4random_uniform(0), 0);
    assert_eq!(arc4random_uniform(1), 0);
    let mut seen = [0u32; 6];
    for _ in 0..6000 {
        seen[arc4random_uniform(6) as usize] += 1;
    }
    // Each face 1000 times on average; below 800 has probability under 1e-10.
    assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    let upper = (1u32 << 31) + 1;
    assert!((0..1000).all(|_| arc4random_uniform(upper) < upper));
}
