use super::*;
use crate::ThreadRng;
use rand_core_06::RngCore;

#[test]
fn errors_without_an_os_code_map_to_custom_start() {
    for e in [
        crate::Error::ALL_ZERO,
        crate::Error::from(getrandom::Error::UNSUPPORTED),
    ] {
        let code = to_rand_core_error(e).code().map(NonZeroU32::get);
        assert_eq!(code, Some(rand_core_06::Error::CUSTOM_START));
    }
}

#[test]
fn try_fill_bytes_fills() {
    let mut a = [0u8; 48];
    let mut b = [0u8; 48];
    RngCore::try_fill_bytes(&mut ThreadRng::default(), &mut a).expect("seeded");
    RngCore::try_fill_bytes(&mut ThreadRng::default(), &mut b).expect("seeded");
    assert_ne!(a, b);
    assert_ne!(a, [0u8; 48]);
}
