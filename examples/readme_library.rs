fn main() {
    // Any number of bytes from the calling thread's generator.
    let mut salt = [0u8; 16];
    fkrng::fill(&mut salt);

    // A 96-bit AEAD nonce and a 256-bit key as arrays.
    let nonce: [u8; 12] = fkrng::array();
    let key: [u8; 32] = fkrng::array();

    // Integers.
    let id = fkrng::u64();

    // Wherever a rand_core 0.10 RNG is accepted, with rand's extension methods.
    use rand::RngExt;
    let mut rng = fkrng::rng();
    let roll: u32 = rng.random_range(1..=6);
    assert!((1..=6).contains(&roll));

    // Handle an OS failure at first seeding instead of panicking.
    let mut buf = [0u8; 32];
    fkrng::try_fill(&mut buf).expect("OS random source");
    let token: [u8; 16] = fkrng::try_array().expect("OS random source");

    println!("{} {} {} {id} {roll}", nonce.len(), key.len(), token.len());
}
