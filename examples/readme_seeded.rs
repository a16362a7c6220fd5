use fkrng::FkeRng;
use rand_core::SeedableRng;

fn main() {
    let mut rng = FkeRng::from_seed([0u8; 32]);
    assert_eq!(rng.next_u32().to_le_bytes(), [0xda, 0x41, 0x59, 0x7c]);
}
