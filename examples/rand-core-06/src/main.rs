use aes_gcm::aead::AeadCore;

fn main() {
    let nonce = aes_gcm::Aes256Gcm::generate_nonce(&mut fkrng::rng());
    assert_eq!(nonce.len(), 12);
}
