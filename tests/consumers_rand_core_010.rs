//! fkrng handed to real crates on `rand_core` 0.10: AEAD keys and nonces (aes-gcm 0.11,
//! chacha20poly1305 0.11), signing keys (ed25519-dalek 3), key exchange (x25519-dalek 3),
//! password salts (argon2 0.6) and rand 0.10's extension methods. Each test uses the RNG the
//! way an application does (seal and open, sign and verify) and checks that what it draws in
//! a loop never repeats.

use std::collections::HashSet;

use fkrng::FkeRng;
use rand_core::SeedableRng;

/// Nonces drawn per distinctness check.
const NONCES: usize = 10_000;

/// Collects `n` values from `draw` and asserts that they are pairwise distinct.
fn assert_distinct<T: std::hash::Hash + Eq + std::fmt::Debug>(
    n: usize,
    mut draw: impl FnMut() -> T,
) {
    let mut seen = HashSet::with_capacity(n);
    for i in 0..n {
        let v = draw();
        assert!(seen.insert(v), "draw {i} repeated an earlier value");
    }
    assert_eq!(seen.len(), n);
}

mod aes_gcm_011 {
    use super::*;
    use aes_gcm::aead::{Aead, AeadInOut, Generate, Key, KeyInit, Nonce, Payload};
    use aes_gcm::{Aes128Gcm, Aes256Gcm};

    #[test]
    fn nonces_and_keys_from_thread_rng_seal_and_open() {
        let mut rng = fkrng::rng();
        let key = Key::<Aes256Gcm>::generate_from_rng(&mut rng);
        assert_ne!(key.as_slice(), [0u8; 32]);
        let cipher = Aes256Gcm::new(&key);

        let mut sealed = Vec::with_capacity(NONCES);
        assert_distinct(NONCES, || {
            let nonce = Nonce::<Aes256Gcm>::generate_from_rng(&mut rng);
            if sealed.len() < 100 {
                let msg = format!("message {}", sealed.len());
                let ct = cipher
                    .encrypt(
                        &nonce,
                        Payload {
                            msg: msg.as_bytes(),
                            aad: b"hdr",
                        },
                    )
                    .expect("seal");
                sealed.push((nonce, msg, ct));
            }
            <[u8; 12]>::from(nonce)
        });

        for (nonce, msg, ct) in &sealed {
            assert_eq!(ct.len(), msg.len() + 16);
            let pt = cipher
                .decrypt(
                    nonce,
                    Payload {
                        msg: ct,
                        aad: b"hdr",
                    },
                )
                .expect("open");
            assert_eq!(pt, msg.as_bytes());
            // A wrong nonce must not open the message.
            let other = Nonce::<Aes256Gcm>::generate_from_rng(&mut rng);
            assert!(
                cipher
                    .decrypt(
                        &other,
                        Payload {
                            msg: ct,
                            aad: b"hdr"
                        }
                    )
                    .is_err()
            );
        }
    }

    #[test]
    fn keys_from_thread_rng_are_distinct() {
        let mut rng = fkrng::rng();
        assert_distinct(1_000, || {
            <[u8; 16]>::from(Key::<Aes128Gcm>::generate_from_rng(&mut rng))
        });
    }

    #[test]
    fn in_place_seal_with_fke_rng_is_reproducible() {
        // A seeded FkeRng gives the cipher the same key and nonce as the raw stream.
        let mut rng = FkeRng::from_seed([3; 32]);
        let key = Key::<Aes256Gcm>::generate_from_rng(&mut rng);
        let nonce = Nonce::<Aes256Gcm>::generate_from_rng(&mut rng);
        let mut raw = FkeRng::from_seed([3; 32]);
        assert_eq!(key.as_slice(), raw.array::<32>());
        assert_eq!(nonce.as_slice(), raw.array::<12>());

        let cipher = Aes256Gcm::new(&key);
        let mut buf = *b"in-place message";
        let tag = cipher
            .encrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into())
            .expect("seal");
        assert_ne!(&buf, b"in-place message");
        cipher
            .decrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into(), &tag)
            .expect("open");
        assert_eq!(&buf, b"in-place message");
    }
}

mod chacha20poly1305_011 {
    use super::*;
    use chacha20poly1305::aead::{Aead, Generate, KeyInit};
    use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, XChaCha20Poly1305, XNonce};

    #[test]
    fn chacha20poly1305_nonces_seal_and_open() {
        let mut rng = fkrng::rng();
        let cipher = ChaCha20Poly1305::new(&Key::generate_from_rng(&mut rng));
        let mut last = None;
        assert_distinct(NONCES, || {
            let nonce = Nonce::generate_from_rng(&mut rng);
            last = Some(nonce);
            <[u8; 12]>::from(nonce)
        });
        let nonce = last.expect("drew nonces");
        let ct = cipher.encrypt(&nonce, b"chacha".as_ref()).expect("seal");
        assert_eq!(
            cipher.decrypt(&nonce, ct.as_ref()).expect("open"),
            b"chacha"
        );
    }

    #[test]
    fn xchacha20poly1305_192_bit_nonces_seal_and_open() {
        let mut rng = fkrng::rng();
        let cipher = XChaCha20Poly1305::new(&Key::generate_from_rng(&mut rng));
        let mut opened = 0;
        assert_distinct(NONCES, || {
            let nonce = XNonce::generate_from_rng(&mut rng);
            if opened < 100 {
                let ct = cipher.encrypt(&nonce, b"x".as_ref()).expect("seal");
                assert_eq!(cipher.decrypt(&nonce, ct.as_ref()).expect("open"), b"x");
                opened += 1;
            }
            <[u8; 24]>::from(nonce)
        });
        assert_eq!(opened, 100);
    }
}

mod ed25519_dalek_3 {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey, Verifier};

    #[test]
    fn signing_keys_sign_and_verify_and_are_distinct() {
        let mut rng = fkrng::rng();
        let key = SigningKey::generate(&mut rng);
        let sig = key.sign(b"release 1.0");
        key.verifying_key()
            .verify(b"release 1.0", &sig)
            .expect("verify");
        assert!(key.verifying_key().verify(b"release 1.1", &sig).is_err());

        assert_distinct(1_000, || SigningKey::generate(&mut rng).to_bytes());
    }

    #[test]
    fn signing_key_from_fke_rng_is_its_first_32_bytes() {
        let key = SigningKey::generate(&mut FkeRng::from_seed([5; 32]));
        assert_eq!(key.to_bytes(), FkeRng::from_seed([5; 32]).array::<32>());
    }
}

mod x25519_dalek_3 {
    use super::*;
    use chacha20poly1305::aead::{Aead, KeyInit};
    use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
    use x25519_dalek::{EphemeralSecret, PublicKey};

    #[test]
    fn ephemeral_secrets_agree_and_seal() {
        let mut rng = fkrng::rng();
        let alice = EphemeralSecret::random_from_rng(&mut rng);
        let bob = EphemeralSecret::random_from_rng(&mut rng);
        let (alice_pub, bob_pub) = (PublicKey::from(&alice), PublicKey::from(&bob));
        assert_ne!(alice_pub.as_bytes(), bob_pub.as_bytes());
        let k_alice = alice.diffie_hellman(&bob_pub);
        let k_bob = bob.diffie_hellman(&alice_pub);
        assert_eq!(k_alice.as_bytes(), k_bob.as_bytes());
        assert!(k_alice.was_contributory());

        // The shared secret keys a message from one side to the other.
        let nonce: [u8; 12] = fkrng::array();
        let nonce = Nonce::from(nonce);
        let ct = ChaCha20Poly1305::new(&Key::from(*k_alice.as_bytes()))
            .encrypt(&nonce, b"hi bob".as_ref())
            .expect("seal");
        let pt = ChaCha20Poly1305::new(&Key::from(*k_bob.as_bytes()))
            .decrypt(&nonce, ct.as_ref())
            .expect("open");
        assert_eq!(pt, b"hi bob");
    }

    #[test]
    fn ephemeral_public_keys_are_distinct() {
        let mut rng = fkrng::rng();
        assert_distinct(500, || {
            *PublicKey::from(&EphemeralSecret::random_from_rng(&mut rng)).as_bytes()
        });
    }
}

mod argon2_06 {
    use super::*;
    use argon2::password_hash::phc::{PasswordHash, SaltString};
    use argon2::{Algorithm, Argon2, Params, PasswordHasher, PasswordVerifier, Version};

    /// Small parameters (64 KiB, 1 pass, 1 lane): this checks the salt, not the cost.
    fn hasher() -> Argon2<'static> {
        let params = Params::new(64, 1, 1, None).expect("valid parameters");
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
    }

    #[test]
    fn salted_hashes_verify_and_salts_are_distinct() {
        let mut rng = fkrng::rng();
        let argon2 = hasher();
        let a: PasswordHash = argon2
            .hash_password_with_rng(&mut rng, b"hunter2")
            .expect("hash");
        let b: PasswordHash = argon2
            .hash_password_with_rng(&mut rng, b"hunter2")
            .expect("hash");
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.hash, b.hash);
        argon2.verify_password(b"hunter2", &a).expect("verify");
        assert!(argon2.verify_password(b"hunter3", &a).is_err());

        assert_distinct(NONCES, || SaltString::from_rng(&mut rng).to_string());
    }
}

mod rand_010 {
    use rand::seq::SliceRandom;
    use rand::{Rng, RngExt};

    #[test]
    fn random_range_stays_in_range_and_hits_every_value() {
        let mut rng = fkrng::rng();
        fkrng_test_support::sampling::assert_fair_die(|| rng.random_range(1..=6));
    }

    #[test]
    fn shuffle_permutes() {
        let mut rng = fkrng::rng();
        let sorted: Vec<u32> = (0..100).collect();
        let mut a = sorted.clone();
        let mut b = sorted.clone();
        a.shuffle(&mut rng);
        b.shuffle(&mut rng);
        assert_ne!(a, sorted);
        assert_ne!(a, b);
        a.sort_unstable();
        assert_eq!(a, sorted);
    }

    #[test]
    fn random_u128_values_are_distinct() {
        let mut rng = fkrng::rng();
        super::assert_distinct(super::NONCES, || rng.random::<u128>());
        // The trait methods of rand_core 0.10, through rand's re-export.
        assert_ne!(rng.next_u64(), rng.next_u64());
    }
}
