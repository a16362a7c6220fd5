use rand::RngExt;

fn main() {
    let mut salt = [0u8; 16];
    fkrng::fill(&mut salt); // any number of bytes
    let nonce: [u8; 12] = fkrng::array(); // a 96-bit AEAD nonce
    let id = fkrng::u64();

    // Wherever a rand_core 0.10 RNG is accepted, with rand's methods.
    let roll: u32 = fkrng::rng().random_range(1..=6);

    // An OS failure at the first seeding as an error, not a panic.
    let key: [u8; 32] = fkrng::try_array().expect("OS random source");
    println!("{salt:02x?} {nonce:02x?} {id} {roll} {}", key.len());
}
