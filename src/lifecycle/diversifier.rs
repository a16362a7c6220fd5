//! The diversifier `D`, XORed into a thread's key at every (re)seed (`K ⊕ S ⊕ D`) so that
//! clones of one VM snapshot differ whatever their kernels give. Invariant: `D` comes from
//! the CPU and clocks alone ([`crate::os::cpu`], [`crate::os::clock`]), never from `K` or
//! `S`, so the key is never easier to guess.

use crate::generator::KEY_LEN;
use crate::os::{clock, cpu};
#[cfg(test)]
pub(crate) use tests::LAST;

/// Writes `D` into `d`: cycle counter (bytes 0..8) and clocks (8..16); with `cpu_rng` (restore and
/// `reseed_all` reseeds) three CPU generator words XORed over 8..32, each zero if none or failing.
pub(crate) fn diversifier(d: &mut [u8; KEY_LEN], cpu_rng: bool) {
    d.fill(0);
    d[..8].copy_from_slice(&cpu::cycle_counter().to_le_bytes());
    d[8..16].copy_from_slice(&clock::clocks().to_le_bytes());
    if cpu_rng {
        mix_cpu_words(&mut d[8..], cpu::random_word);
    }
    #[cfg(test)]
    LAST.set(*d);
}

/// XORs one checked word of `next` (the CPU's generator) over each 8 bytes of `out`. A word
/// that is all zeros, all ones or a repeat of the one before counts as none: a stuck generator
/// adds nothing rather than a known value. Every copy of a word made here is wiped.
fn mix_cpu_words(out: &mut [u8], mut next: impl FnMut() -> Option<u64>) {
    let mut previous = None;
    for chunk in out.as_chunks_mut::<8>().0 {
        let word = next().filter(|&w| w != 0 && w != u64::MAX && Some(w) != previous);
        previous = word.or(previous);
        let mut bytes = word.unwrap_or(0).to_le_bytes();
        for (b, w) in chunk.iter_mut().zip(&bytes) {
            *b ^= w;
        }
        zeroize::Zeroize::zeroize(&mut bytes);
    }
    zeroize::Zeroize::zeroize(&mut previous);
}

#[cfg(test)]
mod tests {
    use super::*;

    std::thread_local! {
        /// The last diversifier made on this thread, for tests that check a key exactly.
        pub(crate) static LAST: core::cell::Cell<[u8; KEY_LEN]> =
            const { core::cell::Cell::new([0; KEY_LEN]) };
    }

    /// Stuck words (all zeros, all ones, a repeat of the word before) add nothing.
    #[test]
    fn stuck_cpu_words_count_as_none() {
        let mix = |words: [Option<u64>; 3]| {
            let mut out = [0u8; 24];
            let mut it = words.into_iter();
            mix_cpu_words(&mut out, || it.next().flatten());
            [0, 8, 16].map(|i| u64::from_le_bytes(out[i..i + 8].try_into().unwrap()))
        };
        let (a, b, c) = (
            0x0123_4567_89ab_cdef,
            0x1111_2222_3333_4444,
            0x5a5a_a5a5_0f0f_f0f0,
        );
        assert_eq!(mix([Some(a), Some(b), Some(c)]), [a, b, c]);
        assert_eq!(mix([Some(u64::MAX); 3]), [0, 0, 0], "all ones");
        assert_eq!(mix([Some(0), Some(a), None]), [0, a, 0], "zero and none");
        assert_eq!(mix([Some(a), Some(a), Some(b)]), [a, 0, b], "a repeat");
        assert_eq!(
            mix([Some(a), Some(u64::MAX), Some(a)]),
            [a, 0, 0],
            "a repeat across a stuck word"
        );
    }

    /// The counter part differs from call to call, and the CPU part is present exactly where
    /// the CPU has a generator. (Miri reads no counter, clock or CPU generator: there `D` is
    /// zero.)
    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri has no cycle counter, clock or CPU generator here"
    )]
    fn diversifiers_differ_between_calls() {
        let mut a = [0u8; KEY_LEN];
        let mut b = [0u8; KEY_LEN];
        diversifier(&mut a, false);
        diversifier(&mut b, false);
        assert_ne!(a[..16], b[..16], "the counter and clocks moved");
        assert_eq!(a[16..], [0u8; 16], "no CPU words without cpu_rng");
        assert_ne!(a[..16], [0u8; 16], "a counter and clocks were read");
        diversifier(&mut a, true);
        diversifier(&mut b, true);
        if cpu::random_word().is_some() {
            assert_ne!(a[16..], b[16..], "two draws of the CPU generator");
            assert_ne!(a[16..], [0u8; 16]);
        }
    }
}
