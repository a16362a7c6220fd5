//! Unit tests of the generator state: zeroing of served bytes, key changes, wiping.

use super::*;
use rand_core::SeedableRng;

#[test]
fn served_bytes_are_zero_and_key_changes_at_every_refill() {
    let mut rng = FkeRng::from_seed([7; 32]);
    let mut keys = vec![*rng.fke().key()];
    let mut out = [0u8; 100];
    for _ in 0..40 {
        let before = rng.fke().available();
        rng.fill(&mut out);
        assert_ne!(out, [0u8; 100]);
        if rng.fke().available() > before {
            keys.push(*rng.fke().key());
        }
        let served = BUFFER_LEN - rng.fke().available();
        assert!(rng.fke().buffer()[..served].iter().all(|&b| b == 0));
        assert!(rng.fke().buffer()[served..].iter().any(|&b| b != 0));
    }
    assert_eq!(keys.len(), 1 + 40 * 100 / BUFFER_LEN + 1);
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn small_reads_of_every_length_copy_and_zero_exactly_their_bytes() {
    for n in 0..=65usize {
        let mut reference = FkeRng::from_seed([3; 32]);
        let mut rng = FkeRng::from_seed([3; 32]);
        let mut whole = [0u8; 992];
        reference.fill(&mut whole);
        rng.fill(&mut [0u8; 7]); // an odd offset into the buffer
        let before = rng.fke().buffer().to_vec();
        let mut out = vec![0u8; n];
        rng.fill(&mut out);
        assert_eq!(out[..], whole[7..7 + n], "length {n}");
        let after = rng.fke().buffer();
        assert!(after[..7 + n].iter().all(|&b| b == 0), "length {n}");
        assert_eq!(
            after[7 + n..],
            before[7 + n..],
            "length {n}: untouched tail"
        );
        assert_eq!(rng.fke().available(), BUFFER_LEN - 7 - n);
    }
}

#[test]
fn direct_fill_replaces_key_and_leaves_buffer_empty() {
    let mut rng = FkeRng::from_seed([9; 32]);
    let before = *rng.fke().key();
    let mut big = vec![0u8; 5000];
    rng.fill(&mut big);
    assert_ne!(*rng.fke().key(), before);
    assert_eq!(rng.fke().available(), 0);
    assert!(rng.fke().buffer().iter().all(|&b| b == 0));
}

#[test]
fn wipe_zeroes_every_byte_padding_included() {
    let mut mem = core::mem::MaybeUninit::<FkeState>::uninit();
    let len = size_of::<FkeState>();
    assert!(
        len > REFILL_LEN + size_of::<usize>(),
        "FkeState has padding"
    );
    // SAFETY: writes `len` bytes into the `FkeState`-sized allocation; any bytes make a valid
    // `FkeState` (a byte array and an integer).
    let fke = unsafe {
        mem.as_mut_ptr().cast::<u8>().write_bytes(0xa5, len);
        mem.assume_init_mut()
    };
    fke.wipe();
    let base = mem.as_ptr().cast::<u8>();
    let nonzero = (0..len)
        // SAFETY: in bounds of `mem`, whose every byte was written above.
        .filter(|&i| unsafe { core::ptr::read_volatile(base.add(i)) } != 0)
        .count();
    assert_eq!(nonzero, 0);
}

#[test]
fn debug_shows_no_bytes() {
    let rng = FkeRng::from_seed([0xab; 32]);
    let text = format!("{rng:?}");
    assert_eq!(text, "FkeRng { .. }");
}

/// `take` (the fast path of `array`, `next_u32`, `next_u64`) serves exactly what `fill`
/// would, zeroes those bytes, and takes nothing when fewer than `N` are left.
#[test]
fn take_serves_the_next_bytes_and_zeroes_them() {
    fn check<const N: usize>() {
        let mut reference = FkeRng::from_seed([4; 32]);
        let mut rng = FkeRng::from_seed([4; 32]);
        let mut whole = [0u8; 992];
        reference.fill(&mut whole);
        rng.fill(&mut [0u8; 5]);
        let mut at = 5;
        while at + N <= BUFFER_LEN {
            let got = rng.fke.take::<N>().expect("enough left");
            assert_eq!(got[..], whole[at..at + N], "N = {N}, at {at}");
            at += N;
            assert!(rng.fke().buffer()[..at].iter().all(|&b| b == 0), "N = {N}");
            assert_eq!(rng.fke().available(), BUFFER_LEN - at);
        }
        let left = rng.fke().buffer().to_vec();
        assert_eq!(rng.fke.take::<N>(), None, "N = {N}: too few left");
        assert_eq!(rng.fke().buffer(), &left[..], "N = {N}: nothing taken");
        // Across the refill, `array` equals `fill`.
        let mut expected = [0u8; N];
        let (old, new) = expected.split_at_mut(BUFFER_LEN - at);
        old.copy_from_slice(&whole[at..]);
        reference.fill(new);
        assert_eq!(rng.array::<N>(), expected, "N = {N}: across a refill");
    }
    check::<1>();
    check::<4>();
    check::<8>();
    check::<12>();
    check::<32>();
    check::<64>();
}

/// As `FkeRng`'s docs say: reads below 992 bytes give one stream however they are split; a
/// read that still needs 992 bytes or more past the buffer's unserved bytes is a direct fill.
#[test]
fn the_stream_depends_on_the_split_only_through_direct_fills() {
    let split = |sizes: &[usize]| {
        let mut rng = FkeRng::from_seed([7; 32]);
        let mut out = Vec::new();
        for &n in sizes.iter().cycle().take(60) {
            let mut buf = vec![0u8; n];
            rng.fill(&mut buf);
            out.extend_from_slice(&buf);
        }
        out.truncate(3000);
        out
    };
    let ones = {
        let mut rng = FkeRng::from_seed([7; 32]);
        (0..3000).map(|_| rng.array::<1>()[0]).collect::<Vec<u8>>()
    };
    assert_eq!(split(&[991, 1, 500, 7, 64]), ones);
    assert_eq!(split(&[100]), ones);
    let mut whole = vec![0u8; 3000];
    FkeRng::from_seed([7; 32]).fill(&mut whole);
    assert_ne!(whole, ones, "one 3000-byte read is a direct fill");
    // 10 bytes from the buffer, then 2990 still needed: a direct fill for those.
    let mut rng = FkeRng::from_seed([7; 32]);
    let mut parts = [vec![0u8; 10], vec![0u8; 2990]];
    parts.iter_mut().for_each(|p| rng.fill(p));
    assert_eq!(parts[0], ones[..10]);
    assert_ne!(parts[1], ones[10..]);
}
