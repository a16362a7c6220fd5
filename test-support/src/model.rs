//! A reference model of the fast-key-erasure generator, written to be read against the spec
//! (docs/DESIGN.md, "The construction") rather than to be fast: the ChaCha20 block function
//! of [`crate::chacha`] (RFC 8439, section 2.3), the keystream as a `Vec`, and the spec's
//! `fill` loop line by line.
//!
//! It shares no code with `src/generator.rs` and uses no ChaCha20 crate, so the differential
//! tests that run it side by side with `FkeRng` (the unit tests in
//! `src/generator/differential.rs` and the fuzz target `fuzz/fuzz_targets/differential.rs`)
//! compare two independent implementations.

pub use crate::chacha::{BLOCK_LEN, KEY_LEN, block as chacha20_block};

/// One refill: 16 blocks, 1024 bytes.
pub const REFILL_LEN: usize = 1024;
/// Bytes served per refill: 992.
pub const BUFFER_LEN: usize = REFILL_LEN - KEY_LEN;

/// `keystream(K, n)`: the first `n` bytes of ChaCha20 under `key`, nonce 0, block counter
/// 0, 1, 2, ...
pub fn keystream(key: &[u8; KEY_LEN], n: usize) -> Vec<u8> {
    let mut z = Vec::with_capacity(n + BLOCK_LEN);
    let mut counter = 0u64;
    while z.len() < n {
        z.extend_from_slice(&chacha20_block(key, counter, &[0; 8]));
        counter += 1;
    }
    z.truncate(n);
    z
}

/// The generator as the spec states it.
pub struct Model {
    /// The key `K`.
    pub key: [u8; KEY_LEN],
    /// The last refill's keystream batch `Z` (1024 bytes): `Z[..32]` is wiped (it became the
    /// key), `Z[32..]` is the buffer, and every served byte of it is overwritten with zero.
    pub z: Vec<u8>,
    /// Index into `z` of the next byte to serve; `REFILL_LEN` when the buffer is empty.
    pub cursor: usize,
    /// Batches of keystream produced so far (refills plus direct fills): each one replaced
    /// the key.
    pub batches: u64,
}

impl Model {
    /// An empty generator with key `seed`: nothing to serve, so the first read refills.
    pub fn new(seed: [u8; KEY_LEN]) -> Self {
        Model {
            key: seed,
            z: vec![0; REFILL_LEN],
            cursor: REFILL_LEN,
            batches: 0,
        }
    }

    /// Unserved bytes in the buffer.
    pub fn available(&self) -> usize {
        REFILL_LEN - self.cursor
    }

    /// The 992-byte buffer as the spec leaves it: served bytes zero, unserved bytes as
    /// produced.
    pub fn buffer(&self) -> &[u8] {
        &self.z[KEY_LEN..]
    }

    fn refill(&mut self) {
        let mut z = keystream(&self.key, REFILL_LEN);
        self.key.copy_from_slice(&z[..KEY_LEN]);
        z[..KEY_LEN].fill(0);
        self.z = z;
        self.cursor = KEY_LEN;
        self.batches += 1;
    }

    /// The spec's `fill` loop.
    pub fn fill(&mut self, dest: &mut [u8]) {
        let mut done = 0;
        while done < dest.len() {
            let n = dest.len() - done;
            let r = self.available();
            if r > 0 {
                let m = n.min(r);
                dest[done..done + m].copy_from_slice(&self.z[self.cursor..self.cursor + m]);
                self.z[self.cursor..self.cursor + m].fill(0);
                self.cursor += m;
                done += m;
            } else if n >= BUFFER_LEN {
                let z = keystream(&self.key, KEY_LEN + n);
                self.key.copy_from_slice(&z[..KEY_LEN]);
                dest[done..].copy_from_slice(&z[KEY_LEN..]);
                self.batches += 1;
                done = dest.len();
            } else {
                self.refill();
            }
        }
    }

    /// `u32::from_le_bytes(fill 4 bytes)`.
    pub fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill(&mut b);
        u32::from_le_bytes(b)
    }

    /// `u64::from_le_bytes(fill 8 bytes)`.
    pub fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        u64::from_le_bytes(b)
    }
}

/// One operation of a differential run.
#[derive(Clone, Debug)]
pub enum Op {
    /// `fill` of this many bytes.
    Fill(usize),
    /// `next_u32`.
    U32,
    /// `next_u64`.
    U64,
}

/// Read sizes around the spec's boundaries: the key (32), the buffer (992), one refill
/// (1024), two buffers (1984), the ChaCha20 block (64), and the same plus and minus one.
pub const BOUNDARY_SIZES: &[usize] = &[
    0, 1, 2, 3, 4, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 960, 961, 991, 992, 993, 1023,
    1024, 1025, 1055, 1056, 1057, 1983, 1984, 1985, 2015, 2016, 2017, 2047, 2048, 2049, 2975, 2976,
    2977, 4095, 4096, 4097, 65535, 65536, 65537,
];

/// The generator under test, seen through its inspection hook.
pub trait Subject {
    /// `fill`.
    fn fill(&mut self, dest: &mut [u8]);
    /// `next_u32`.
    fn next_u32(&mut self) -> u32;
    /// `next_u64`.
    fn next_u64(&mut self) -> u64;
    /// The current key.
    fn key(&self) -> [u8; KEY_LEN];
    /// Unserved bytes in the buffer.
    fn available(&self) -> usize;
    /// The whole 992-byte buffer, served and unserved parts, with the unserved bytes at
    /// its end (the first `992 - available` bytes are the served ones).
    fn buffer(&self) -> Vec<u8>;
}

/// Runs `ops` on `subject` and on a model with the same `seed`, and panics at the first
/// difference: output bytes or values, key, unserved byte count, buffer contents. After
/// every operation it also checks the spec's invariants on the subject: the served part of
/// the buffer is all zero, the key changed exactly when a batch of keystream was produced
/// (a refill or a direct fill) and never returns to an earlier value. Returns the number of
/// batches the run produced.
pub fn run<S: Subject>(seed: [u8; KEY_LEN], subject: &mut S, ops: &[Op]) -> u64 {
    let mut model = Model::new(seed);
    let mut keys = vec![model.key];
    assert_eq!(subject.key(), model.key, "seed");
    assert_eq!(subject.available(), 0, "a fresh generator is empty");
    for (i, op) in ops.iter().enumerate() {
        let batches_before = model.batches;
        let key_before = subject.key();
        match *op {
            Op::Fill(n) => {
                let mut got = vec![0u8; n];
                let mut want = vec![0u8; n];
                subject.fill(&mut got);
                model.fill(&mut want);
                assert!(got == want, "op {i} ({op:?}): output differs");
            }
            Op::U32 => assert_eq!(subject.next_u32(), model.next_u32(), "op {i} ({op:?})"),
            Op::U64 => assert_eq!(subject.next_u64(), model.next_u64(), "op {i} ({op:?})"),
        }
        let key = subject.key();
        assert_eq!(key, model.key, "op {i} ({op:?}): key");
        let avail = subject.available();
        assert_eq!(avail, model.available(), "op {i} ({op:?}): unserved bytes");
        let buffer = subject.buffer();
        assert_eq!(buffer.len(), BUFFER_LEN);
        let served = BUFFER_LEN - avail;
        assert!(
            buffer[..served].iter().all(|&b| b == 0),
            "op {i} ({op:?}): a served byte is still in the buffer"
        );
        assert!(buffer == model.buffer(), "op {i} ({op:?}): buffer contents");
        if model.batches > batches_before {
            assert_ne!(
                key, key_before,
                "op {i} ({op:?}): batch without key erasure"
            );
            assert!(
                !keys.contains(&key),
                "op {i} ({op:?}): key returned to an earlier value"
            );
            keys.push(key);
        } else {
            assert_eq!(
                key, key_before,
                "op {i} ({op:?}): key changed without a batch"
            );
        }
    }
    model.batches
}

/// The RFC 8439 section 2.3.2 test vector for the block function: key 00 01 .. 1f, nonce
/// 00:00:00:09:00:00:00:4a:00:00:00:00, block count 1. In the 64-bit-counter layout the
/// nonce's first word is the counter's high word, so the same input state is counter
/// `0x0900_0000_0000_0001`, nonce `00 00 00 4a 00 00 00 00`.
pub fn rfc8439_block_vector_holds() -> bool {
    let mut key = [0u8; KEY_LEN];
    for (i, b) in key.iter_mut().enumerate() {
        *b = i as u8;
    }
    let got = chacha20_block(&key, 0x0900_0000_0000_0001, &[0, 0, 0, 0x4a, 0, 0, 0, 0]);
    // The serialized block of section 2.3.2.
    let want: [u8; 64] = [
        0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71,
        0xc4, 0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22, 0xaa, 0x9a, 0xc3, 0xd4,
        0x6c, 0x4e, 0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9,
        0x8b, 0x02, 0xa2, 0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8,
        0xa2, 0x50, 0x3c, 0x4e,
    ];
    got == want
}
