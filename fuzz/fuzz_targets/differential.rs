//! `FkeRng` against the reference model (`fkrng-test-support`) on read sequences chosen by the
//! fuzzer: identical output, key, buffer and unserved count after every read, served bytes
//! zero, key erased at every batch.
//!
//! Input: 32 bytes of seed, then 3 bytes per operation: a tag (fill, fill, u32, u64) and a
//! 16-bit size selector (a boundary size, 0..4095, 0..16383, or a multiple of 20 up to
//! 320 KiB). At most 64 operations and 1 MiB of output per input.
#![no_main]

use fkrng::FkeRng;
use libfuzzer_sys::fuzz_target;
use fkrng_test_support::model::{self, BOUNDARY_SIZES, KEY_LEN, Op, Subject};
use rand_core::SeedableRng;

struct Under(FkeRng);

impl Subject for Under {
    fn fill(&mut self, dest: &mut [u8]) {
        self.0.fill(dest);
    }
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn key(&self) -> [u8; KEY_LEN] {
        *self.0.inspect().key
    }
    fn available(&self) -> usize {
        self.0.inspect().available
    }
    fn buffer(&self) -> Vec<u8> {
        self.0.inspect().buffer.to_vec()
    }
}

fn size(selector: u16) -> usize {
    let v = usize::from(selector);
    match selector >> 14 {
        0 => BOUNDARY_SIZES[v % BOUNDARY_SIZES.len()],
        1 => v & 0x0fff,
        2 => v & 0x3fff,
        _ => (v & 0x3fff) * 20,
    }
}

fn decode(op: &[u8]) -> Op {
    let selector = u16::from_le_bytes([
        op.get(1).copied().unwrap_or(0),
        op.get(2).copied().unwrap_or(0),
    ]);
    match op[0] % 4 {
        0 | 1 => Op::Fill(size(selector)),
        2 => Op::U32,
        _ => Op::U64,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((seed, rest)) = data.split_first_chunk::<KEY_LEN>() else {
        return;
    };
    let mut budget = 1usize << 20;
    let ops: Vec<Op> = rest
        .chunks(3)
        .take(64)
        .map(decode)
        .take_while(|op| {
            let n = match *op {
                Op::Fill(n) => n,
                Op::U32 => 4,
                Op::U64 => 8,
            };
            budget = budget.saturating_sub(n);
            budget > 0
        })
        .collect();
    model::run(*seed, &mut Under(FkeRng::from_seed(*seed)), &ops);
});
