//! The fallible twins (`try_array`, `try_u32`, `try_u64`) and `fill_uninit`: they return the
//! thread generator's output, distinct from call to call, and `fill_uninit` hands back the
//! very memory it was given, filled.
#![cfg(feature = "std")]

use std::collections::HashSet;
use std::mem::MaybeUninit;

#[test]
fn try_array_values_are_distinct() {
    let values: HashSet<[u8; 16]> = (0..1000).map(|_| fkrng::try_array().unwrap()).collect();
    assert_eq!(values.len(), 1000);
    assert!(!values.contains(&[0u8; 16]));
    let empty: [u8; 0] = fkrng::try_array().unwrap();
    assert_eq!(empty, []);
}

#[test]
fn try_integers_are_distinct() {
    let u64s: HashSet<u64> = (0..1000).map(|_| fkrng::try_u64().unwrap()).collect();
    assert_eq!(u64s.len(), 1000);
    // 1000 random 32-bit values collide with probability about 1.2e-4.
    let u32s: HashSet<u32> = (0..1000).map(|_| fkrng::try_u32().unwrap()).collect();
    assert!(u32s.len() >= 998, "{} distinct of 1000", u32s.len());
}

#[test]
fn fill_uninit_fills_the_given_memory() {
    for len in [0usize, 1, 16, 991, 992, 4096, 100_000] {
        let mut a = Box::<[u8]>::new_uninit_slice(len);
        let mut b = vec![MaybeUninit::<u8>::uninit(); len];
        let start = a.as_ptr() as usize;
        let filled = fkrng::fill_uninit(&mut a);
        assert_eq!(filled.as_ptr() as usize, start, "same memory");
        assert_eq!(filled.len(), len);
        let filled = filled.to_vec();
        let other = fkrng::try_fill_uninit(&mut b).unwrap().to_vec();
        if len >= 16 {
            assert_ne!(filled, other, "{len}: two fills agree");
            assert!(filled.iter().filter(|&&x| x != 0).count() > len / 2);
            assert!(other.iter().filter(|&&x| x != 0).count() > len / 2);
        }
    }
}

#[test]
fn spare_capacity_of_a_vec() {
    let mut v: Vec<u8> = Vec::with_capacity(64);
    let n = fkrng::fill_uninit(&mut v.spare_capacity_mut()[..64]).len();
    // SAFETY: `fill_uninit` initialised the first 64 bytes of the spare capacity.
    unsafe { v.set_len(n) };
    assert_eq!(v.len(), 64);
    assert_ne!(v, vec![0u8; 64]);
}
