//! Checks of sampled values that the consumer tests run against several `rand` versions.

/// Rolls a die 6000 times with `roll` (which must return 1 to 6) and checks that every face
/// came up between 700 and 1300 times: each face has probability 1/6, so a count outside
/// that range is more than 9 standard deviations from 1000.
///
/// # Panics
/// If a roll is outside 1..=6 or a count outside 700..1300, listing the counts.
pub fn assert_fair_die(mut roll: impl FnMut() -> usize) {
    let mut counts = [0u32; 6];
    for _ in 0..6_000 {
        let face = roll();
        assert!((1..=6).contains(&face), "a die roll of {face}");
        counts[face - 1] += 1;
    }
    assert!(
        counts.iter().all(|&c| (700..1300).contains(&c)),
        "{counts:?}"
    );
}
