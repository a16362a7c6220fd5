//! fkrng handed to real crates on `rand_core` 0.6 (feature `rand_core_0_6`): aes-gcm 0.10's
//! `generate_nonce`, ed25519-dalek 2 signing keys and rand 0.8's `gen_range`.
#![cfg(all(feature = "rand_core_0_6", feature = "std"))]

use std::collections::HashSet;

use fkrng::FkeRng;

/// Nonces drawn per distinctness check.
const NONCES: usize = 10_000;

fn assert_distinct<T: std::hash::Hash + Eq>(n: usize, mut draw: impl FnMut() -> T) {
    let mut seen = HashSet::with_capacity(n);
    for i in 0..n {
        assert!(seen.insert(draw()), "draw {i} repeated an earlier value");
    }
    assert_eq!(seen.len(), n);
}

mod aes_gcm_0_10 {
    use super::*;
    use aes_gcm_010::Aes256Gcm;
    use aes_gcm_010::aead::{Aead, AeadCore, KeyInit};

    #[test]
    fn generate_nonce_and_key_seal_and_open() {
        let mut rng = fkrng::rng();
        let key = Aes256Gcm::generate_key(&mut rng);
        let cipher = Aes256Gcm::new(&key);
        let mut checked = 0;
        assert_distinct(NONCES, || {
            let nonce = Aes256Gcm::generate_nonce(&mut rng);
            if checked < 100 {
                let ct = cipher
                    .encrypt(&nonce, b"rand_core 0.6".as_ref())
                    .expect("seal");
                assert_eq!(
                    cipher.decrypt(&nonce, ct.as_ref()).expect("open"),
                    b"rand_core 0.6"
                );
                checked += 1;
            }
            <[u8; 12]>::from(nonce)
        });
        assert_eq!(checked, 100);
    }

    #[test]
    fn fke_rng_gives_the_cipher_its_stream() {
        // rand 0.8 re-exports rand_core 0.6's SeedableRng.
        let mut rng = <FkeRng as rand_08::SeedableRng>::from_seed([4; 32]);
        let nonce = Aes256Gcm::generate_nonce(&mut rng);
        let mut raw = <FkeRng as rand_core::SeedableRng>::from_seed([4; 32]);
        assert_eq!(nonce.as_slice(), raw.array::<12>());
    }
}

mod ed25519_dalek_v2 {
    use super::*;
    use ed25519_dalek_2::{Signer, SigningKey, Verifier};

    #[test]
    fn signing_keys_sign_verify_and_are_distinct() {
        let mut rng = fkrng::rng();
        let key = SigningKey::generate(&mut rng);
        let sig = key.sign(b"rand_core 0.6");
        key.verifying_key()
            .verify(b"rand_core 0.6", &sig)
            .expect("verify");
        assert!(key.verifying_key().verify(b"rand_core 0.7", &sig).is_err());
        assert_distinct(1_000, || SigningKey::generate(&mut rng).to_bytes());
    }
}

mod rand_0_8 {
    use rand_08::{Rng, RngCore};

    #[test]
    fn gen_range_stays_in_range_and_hits_every_value() {
        let mut rng = fkrng::rng();
        let mut counts = [0u32; 6];
        for _ in 0..6_000 {
            counts[rng.gen_range(0..6usize)] += 1;
        }
        // Below 700 or above 1300 of 6000 is more than 9 standard deviations from 1000.
        assert!(
            counts.iter().all(|&c| (700..1300).contains(&c)),
            "{counts:?}"
        );
        super::assert_distinct(super::NONCES, || rng.r#gen::<u128>());
    }

    #[test]
    fn try_fill_bytes_succeeds() {
        let mut rng = fkrng::rng();
        let mut buf = [0u8; 64];
        rng.try_fill_bytes(&mut buf).expect("seeded");
        assert_ne!(buf, [0u8; 64]);
    }
}
