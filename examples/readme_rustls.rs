use rustls::crypto::{CryptoProvider, ring};

fn main() {
    let provider = CryptoProvider {
        secure_random: &fkrng::RustlsRandom,
        ..ring::default_provider()
    };
    provider.install_default().expect("the first provider");
}
