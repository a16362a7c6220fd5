//! A dependent's tests of fkrng, for Miri (`cargo +nightly miri test`): Miri checks every
//! memory access of fkrng's code on these paths against Rust's aliasing and validity rules.

#[cfg(test)]
mod tests {
    use rand_core::{Rng, SeedableRng};

    /// The seeded generator's known answers (tests/data/fke-kat.txt: the first words of the
    /// stream for the all-zero seed, README's example).
    #[test]
    fn seeded_generator_gives_its_known_answer() {
        let mut rng = fkrng::FkeRng::from_seed([0u8; 32]);
        assert_eq!(rng.next_u32().to_le_bytes(), [0xda, 0x41, 0x59, 0x7c]);
        // The same calls on the same seed give the same bytes, through refills (reads below
        // 992 bytes) and a direct fill (from 992 bytes on, with the buffer empty).
        fn stream(seed: [u8; 32]) -> Vec<u8> {
            let mut rng = fkrng::FkeRng::from_seed(seed);
            let mut out = vec![0u8; 3000];
            for chunk in out[..2000].chunks_mut(100) {
                rng.fill_bytes(chunk);
            }
            rng.fill_bytes(&mut out[2000..]);
            out
        }
        let x = stream([7u8; 32]);
        assert!(x == stream([7u8; 32]), "one seed, one stream");
        assert!(x != stream([8u8; 32]), "another seed, another stream");
        assert!(x.iter().filter(|&&v| v != 0).count() > 2500);
    }

    #[test]
    fn thread_local_reads_differ() {
        let mut salt = [0u8; 16];
        fkrng::fill(&mut salt);
        let nonce: [u8; 12] = fkrng::array();
        let key: [u8; 32] = fkrng::try_array().expect("seeded");
        assert_ne!(salt, [0; 16]);
        assert_ne!(nonce, [0; 12]);
        assert_ne!(key, [0; 32]);
        assert_ne!(fkrng::u64(), fkrng::u64());
        // A fill larger than the buffer: a direct fill of keystream.
        let mut big = vec![0u8; 2500];
        fkrng::fill(&mut big);
        assert!(big.iter().filter(|&&x| x != 0).count() > 2000);
    }

    #[test]
    fn handle_and_threads() {
        let mut rng = fkrng::rng();
        let here = rng.next_u64();
        let there = std::thread::spawn(move || rng.next_u64()).join().unwrap();
        assert_ne!(here, there);
        fkrng::reseed().expect("reseed");
        fkrng::reseed_all();
        assert_ne!(fkrng::u32().to_le_bytes(), [0; 4]);
    }
}
