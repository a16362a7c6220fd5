use ed25519_dalek::{Signer, SigningKey, Verifier};

fn main() {
    let signing_key = SigningKey::generate(&mut fkrng::rng());
    let sig = signing_key.sign(b"release 1.0");
    assert!(
        signing_key
            .verifying_key()
            .verify(b"release 1.0", &sig)
            .is_ok()
    );

    let secret = x25519_dalek::EphemeralSecret::random_from_rng(&mut fkrng::rng());
    let public = x25519_dalek::PublicKey::from(&secret);

    let salt = argon2::password_hash::phc::SaltString::from_rng(&mut fkrng::rng());
    println!("{:?} {salt}", public.as_bytes());
}
