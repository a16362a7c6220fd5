use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, Generate, Key, KeyInit, Nonce};

fn main() {
    let mut rng = fkrng::rng();
    let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::generate_from_rng(&mut rng));
    let nonce = Nonce::<Aes256Gcm>::generate_from_rng(&mut rng);
    let sealed = cipher.encrypt(&nonce, b"hello".as_ref()).expect("seal");
    let opened = cipher.decrypt(&nonce, sealed.as_ref()).expect("open");
    assert_eq!(opened, b"hello");
}
