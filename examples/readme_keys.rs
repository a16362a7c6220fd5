use ed25519_dalek::SigningKey;
use x25519_dalek::{EphemeralSecret, PublicKey};

fn main() {
    let signing_key = SigningKey::generate(&mut fkrng::rng());
    let secret = EphemeralSecret::random_from_rng(&mut fkrng::rng());
    let salt = argon2::password_hash::phc::SaltString::from_rng(&mut fkrng::rng());
    println!("{:02x?}", signing_key.verifying_key().as_bytes());
    println!("{:02x?} {salt}", PublicKey::from(&secret).as_bytes());
}
