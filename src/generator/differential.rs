//! Differential tests: `FkeRng` against the reference model of `fkrng-test-support` (its own
//! ChaCha20 from RFC 8439, the spec's `fill` loop over a `Vec`), from the same seed, over
//! random sequences of reads concentrated on the construction's boundaries. After every
//! read the model's runner also checks the spec's invariants through
//! [`FkeRng::inspect`]: served bytes are zero in the buffer, and the key changes at every
//! refill and direct fill.

use super::{FkeRng, KEY_LEN};
use fkrng_test_support::kat::{self, Expect, Step};
use fkrng_test_support::model::{self, BOUNDARY_SIZES, Model, Op, Subject};
use proptest::prelude::*;
use rand_core::SeedableRng;

impl Subject for FkeRng {
    fn fill(&mut self, dest: &mut [u8]) {
        FkeRng::fill(self, dest);
    }
    fn next_u32(&mut self) -> u32 {
        FkeRng::next_u32(self)
    }
    fn next_u64(&mut self) -> u64 {
        FkeRng::next_u64(self)
    }
    fn key(&self) -> [u8; KEY_LEN] {
        *self.inspect().key
    }
    fn available(&self) -> usize {
        self.inspect().available
    }
    fn buffer(&self) -> Vec<u8> {
        self.inspect().buffer.to_vec()
    }
}

/// Random cases per property: enough to hit every boundary pair many times, few enough
/// that `cargo test` spends a few seconds here. `PROPTEST_CASES=N` in the environment runs
/// N cases instead (long runs: see docs/ASSURANCE.md).
const CASES: u32 = 256;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

/// Read sizes: mostly the boundary sizes, then anything up to two refills, then anything up
/// to 320 KiB (direct fills of many blocks).
fn read_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => prop::sample::select(BOUNDARY_SIZES),
        3 => 0usize..=2100,
        1 => 0usize..=320 * 1024,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => read_size().prop_map(Op::Fill),
        2 => Just(Op::U32),
        2 => Just(Op::U64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Identical bytes, keys, buffers and unserved counts after every operation of a random
    /// sequence of up to 48 reads.
    #[test]
    fn fke_rng_matches_the_model(
        seed in any::<[u8; KEY_LEN]>(),
        ops in prop::collection::vec(op(), 0..48),
    ) {
        model::run(seed, &mut FkeRng::from_seed(seed), &ops);
    }

    /// Runs of small reads only: many refills in one case, served from partly used buffers.
    #[test]
    fn fke_rng_matches_the_model_on_small_reads(
        seed in any::<[u8; KEY_LEN]>(),
        ops in prop::collection::vec((0usize..=100).prop_map(Op::Fill), 0..200),
    ) {
        model::run(seed, &mut FkeRng::from_seed(seed), &ops);
    }
}

#[test]
fn model_block_function_matches_rfc8439_test_vector() {
    assert!(model::rfc8439_block_vector_holds());
}

/// The model alone against the independent vectors in tests/data/fke-kat.txt: every line
/// given in hex or as an integer is checked; lines given as a SHA-256 digest are read to
/// keep the stream in step and compared with `FkeRng` instead.
#[test]
fn model_matches_known_answer_vectors() {
    let mut model: Option<(Model, FkeRng)> = None;
    let mut checked = 0;
    for vector in kat::vectors() {
        let line = vector.text;
        if let Step::Seed(seed) = vector.step {
            model = Some((Model::new(seed), FkeRng::from_seed(seed)));
            continue;
        }
        let (m, rng) = model.as_mut().expect("seeded");
        match vector.step {
            Step::Fill { len, expect } => {
                let mut want = vec![0u8; len];
                m.fill(&mut want);
                match expect {
                    Expect::Sha256(_) => {
                        let mut got = vec![0u8; len];
                        rng.fill(&mut got);
                        assert!(got == want, "{line}");
                        continue;
                    }
                    Expect::Bytes(bytes) => {
                        rng.fill(&mut vec![0u8; len]);
                        assert_eq!(want, bytes, "{line}");
                    }
                }
            }
            Step::U32(v) => {
                rng.next_u32();
                assert_eq!(m.next_u32(), v, "{line}");
            }
            Step::U64(v) => {
                rng.next_u64();
                assert_eq!(m.next_u64(), v, "{line}");
            }
            Step::Seed(_) => unreachable!(),
        }
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} vectors checked");
}

/// Every pair of boundary sizes up to 4097 bytes, as two reads and a third read of the
/// first size, from a fresh generator: 1600 deterministic runs.
#[test]
fn every_pair_of_boundary_sizes_matches_the_model() {
    let sizes: Vec<usize> = BOUNDARY_SIZES
        .iter()
        .copied()
        .filter(|&n| n <= 4097)
        .collect();
    let mut batches = 0;
    for (i, &a) in sizes.iter().enumerate() {
        for &b in &sizes {
            let seed = [i as u8; KEY_LEN];
            let ops = [Op::Fill(a), Op::Fill(b), Op::Fill(a), Op::U64];
            batches += model::run(seed, &mut FkeRng::from_seed(seed), &ops);
        }
    }
    assert!(batches > 1600, "{batches} batches");
}

/// How a [`Mutant`] departs from the spec.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// Reports a served buffer byte as still holding data.
    LeaveServedByte,
    /// Flips one bit of each fill's output.
    FlipOutputBit,
    /// Reports the seed as the key forever, as if refills kept the key.
    StaleKey,
}

/// A subject that breaks one rule of the spec, to show that the runner notices.
struct Mutant {
    inner: FkeRng,
    seed: [u8; KEY_LEN],
    fault: Fault,
}

impl Mutant {
    fn new(seed: [u8; KEY_LEN], fault: Fault) -> Self {
        Mutant {
            inner: FkeRng::from_seed(seed),
            seed,
            fault,
        }
    }
}

impl Subject for Mutant {
    fn fill(&mut self, dest: &mut [u8]) {
        self.inner.fill(dest);
        if let (Fault::FlipOutputBit, Some(b)) = (self.fault, dest.first_mut()) {
            *b ^= 1;
        }
    }
    fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
    fn key(&self) -> [u8; KEY_LEN] {
        match self.fault {
            Fault::StaleKey => self.seed,
            _ => Subject::key(&self.inner),
        }
    }
    fn available(&self) -> usize {
        Subject::available(&self.inner)
    }
    fn buffer(&self) -> Vec<u8> {
        let mut b = Subject::buffer(&self.inner);
        if self.fault == Fault::LeaveServedByte {
            b[0] = 0x5a;
        }
        b
    }
}

#[test]
#[should_panic(expected = "op 0 (Fill(10)): a served byte is still in the buffer")]
fn runner_detects_a_served_byte_left_in_the_buffer() {
    let seed = [1; KEY_LEN];
    model::run(
        seed,
        &mut Mutant::new(seed, Fault::LeaveServedByte),
        &[Op::Fill(10)],
    );
}

#[test]
#[should_panic(expected = "op 1 (Fill(10)): output differs")]
fn runner_detects_wrong_output() {
    let seed = [2; KEY_LEN];
    let ops = [Op::Fill(0), Op::Fill(10)];
    model::run(seed, &mut Mutant::new(seed, Fault::FlipOutputBit), &ops);
}

#[test]
#[should_panic(expected = "op 0 (Fill(992)): key")]
fn runner_detects_a_key_that_is_not_erased() {
    let seed = [3; KEY_LEN];
    model::run(
        seed,
        &mut Mutant::new(seed, Fault::StaleKey),
        &[Op::Fill(992)],
    );
}
