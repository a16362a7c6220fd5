//! Backtracking resistance in memory: once fkrng has produced keystream, nothing in the
//! process's writable memory may let an attacker recompute output already handed out.
//!
//! - `refills_leave_no_old_key_behind` and `direct_fills_leave_no_old_key_behind`: a seeded
//!   `FkeRng` (running the keystream code the thread-local generator runs too) goes through
//!   refills or direct fills. Every key it used before its current one is searched for as 32
//!   contiguous bytes and as a *broadcast* of any of its eight words: eight equal
//!   little-endian words in a row at 4-byte alignment, which is what a vector register
//!   holding one key word in every lane leaves when it is spilled to a stack frame (eight
//!   such registers give the key back). Independently of byte order and layout, memory is
//!   also searched for *clusters*: four or more distinct native-endian 32-bit words, at
//!   4-byte alignment within 256 bytes, from one old key's eight words and the working
//!   states of its block function (see [`CLUSTER_WORDS`] for the false-positive rate).
//! - `signal_frames_leave_no_old_key_behind`: a signal storm during refills and direct
//!   fills; after each batch the dead stack below the reads, where the kernel puts signal
//!   frames, is searched for the batch's key and block-function words.
//! - `one_off_read_leaves_no_key_behind`: after a read served from fresh OS bytes (a
//!   thread-local destructor after the thread's state was released; the same path serves
//!   signal handlers that interrupt a read), no 32-byte window may be a ChaCha20 key whose
//!   keystream reproduces the bytes served. The exited thread's stack stays mapped (glibc
//!   caches thread stacks for reuse), so a seed copy left in a dead stack frame is found.
//!
//! Each test reads every writable mapping through `/proc/self/maps` and `/proc/self/mem`, one
//! test at a time (a scan's buffer holds copies of whatever it read, so concurrent scans would
//! see each other's search data).
//!
//! Every build profile: CI runs these tests in the default test profile, in release, with
//! fkrng and the `chacha20` crate at opt-level 0 (as a dependent's debug build compiles
//! them), and in release under emulated CPUs without AVX-512 or AVX2 (each keystream path).

#![cfg(target_os = "linux")]

use fkrng::FkeRng;
use rand_core::{Rng, SeedableRng};
use std::hash::BuildHasher;
use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// Held by each test for the whole time it reads process memory.
static MEMORY_SCAN: Mutex<()> = Mutex::new(());

/// Bytes of process memory read at a time.
const SCAN_CHUNK: usize = 1 << 22;

/// Length of the windows the scans compare: one ChaCha20 key, 32 bytes.
const WINDOW: usize = 32;

/// A writable mapping of the process, from one line of `/proc/self/maps`.
struct Mapping {
    range: Range<usize>,
    /// The pathname column: `[stack]`, `[heap]`, a file, or empty for anonymous memory
    /// (thread stacks among it).
    name: String,
}

/// Reads every writable mapping of the process except `skip` (the caller's own search data
/// and buffer) into `buf`, one chunk at a time, and calls `visit(mapping, address, bytes)`
/// for each chunk. Consecutive chunks overlap by 31 bytes, so every 32-byte window of a
/// mapping lies whole in exactly one chunk as a window starting at offset
/// `0..=bytes.len() - 32`. Kernel mappings such as `[vvar]` are skipped, and an unreadable
/// page ends the scan of its mapping. Returns the number of bytes read.
fn scan_writable_memory(
    buf: &mut [u8],
    skip: Range<usize>,
    mut visit: impl FnMut(&Mapping, usize, &[u8]),
) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut total = 0;
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let name = fields.get(5).copied().unwrap_or("");
        if !fields[1].starts_with("rw") || name.starts_with("[v") {
            continue;
        }
        let (start, end) = fields[0].split_once('-').unwrap();
        let mapping = Mapping {
            range: usize::from_str_radix(start, 16).unwrap()
                ..usize::from_str_radix(end, 16).unwrap(),
            name: name.to_owned(),
        };
        // The parts of the mapping before and after `skip`.
        let parts = [
            mapping.range.start..mapping.range.end.min(skip.start),
            mapping.range.start.max(skip.end)..mapping.range.end,
        ];
        for part in parts {
            let mut at = part.start;
            while at < part.end {
                let len = (part.end - at).min(buf.len());
                if mem.seek(SeekFrom::Start(at as u64)).is_err() {
                    break;
                }
                let got = match mem.read(&mut buf[..len]) {
                    Ok(n) if n > 0 => n,
                    _ => break,
                };
                visit(&mapping, at, &buf[..got]);
                total += got;
                if at + got >= part.end {
                    break;
                }
                at += if got >= WINDOW {
                    got - (WINDOW - 1)
                } else {
                    got
                };
            }
        }
    }
    total
}

// ---- Refills and direct fills ------------------------------------------------------------

/// Size of a ChaCha20 key, in bytes.
const KEY_LEN: usize = 32;

/// Size of a ChaCha20 block, in bytes.
const BLOCK_LEN: usize = 64;

/// Bytes served from one refill: 1024 bytes of keystream minus the 32-byte next key.
const BUFFER_LEN: usize = 992;

/// Keystream batches (refills and direct fills) a test may run, at most.
const MAX_BATCHES: usize = 32;

/// Stack kept between the test's frame and the reads, so that the residue the reads may
/// leave in dead frames lies deeper than anything the scan itself calls can reach.
const STACK_GAP: usize = 32 << 10;

/// How many bytes of each keystream batch a sequence of reads serves, batch by batch, by the
/// generator's rules (docs/DESIGN.md): a read takes unserved buffer bytes first; with the
/// buffer empty, a read with 992 bytes or more to go is a direct fill of all of them, and a
/// shorter one refills (992 bytes to serve). Batch `b` runs under key `b` (key 0 is the seed)
/// and serves bytes `32..32 + served[b]` of its keystream.
#[derive(Default)]
struct Batches {
    served: Vec<usize>,
    /// Unserved bytes of the last refill.
    avail: usize,
}

impl Batches {
    fn read(&mut self, mut len: usize) {
        while len > 0 {
            if self.avail > 0 {
                let n = len.min(self.avail);
                *self.served.last_mut().unwrap() += n;
                self.avail -= n;
                len -= n;
            } else if len >= BUFFER_LEN {
                self.served.push(len);
                len = 0;
            } else {
                self.served.push(0);
                self.avail = BUFFER_LEN;
            }
        }
    }
}

/// Everything a test derives from the generator's keys, and the scan buffer, in one heap
/// allocation that the scans skip. The keys are computed in place, so no copy of them exists
/// outside it.
#[repr(C)]
struct Evidence {
    /// `keys[0]` is the seed; `keys[b + 1]` is the first 32 bytes of the ChaCha20 keystream
    /// under `keys[b]` (nonce 0, block 0): the key after batch `b`.
    keys: [[u8; KEY_LEN]; MAX_BATCHES + 1],
    /// First 8 bytes (little-endian) of every key searched for and its index, sorted.
    prefixes: [(u64, usize); MAX_BATCHES],
    /// Every word of every key searched for, with the key's index and the word's, sorted.
    words: [(u32, usize, usize); 8 * MAX_BATCHES],
    /// The block function's input and working state, and its output block.
    input: [u32; 16],
    state: [u32; 16],
    block: [u8; BLOCK_LEN],
    /// The words of every key searched for and of its block function (see [`KeyWords`]),
    /// sorted, each with the key's index; the first `table_len` entries are in use.
    table: [(u32, u32); MAX_BATCHES * WORDS_PER_KEY],
    table_len: usize,
    /// A bit per value of a word's top 24 bits: set where some word of `table` has them.
    filter: [u64; FILTER_WORDS],
    scan: [u8; SCAN_CHUNK],
}

/// Words searched for per key: its 8 key words and, for each of the 16 blocks of a refill
/// (block counters 0 to 15, which every batch computes), the 16 words of the block
/// function's working state after each of its first 19 rounds. The state after round 20
/// is the output block minus the input, which is served (and words 13 to 15 of the input
/// are zero, so those output words equal it): no secret.
const WORDS_PER_KEY: usize = 8 + REFILL_BLOCKS * 19 * 16;

/// Blocks of a refill.
const REFILL_BLOCKS: usize = 16;

/// Length of [`Evidence::filter`]: 2^24 bits.
const FILTER_WORDS: usize = (1 << 24) / 64;

/// A *cluster* is at least this many distinct words of one old key's [`WORDS_PER_KEY`]
/// within [`CLUSTER_SPAN`] bytes.
///
/// False positives: a word of memory that is not derived from the key equals one of a key's
/// 4872 words with probability at most q = 4872 / 2^32 = 1.13e-6 (the words are uniformly
/// random 32-bit values; runs of one value count once, as distinct words are counted). A
/// window of 64 words holds 4 distinct ones by chance with probability at most
/// C(64, 4) q^4 = 6.4e5 × 1.7e-24 = 1.1e-18. A scan reads at most 2^24 word positions
/// (64 MiB; the tests print what they read) for at most 32 keys: 2^24 × 32 × 1.1e-18 =
/// 6e-10 chance clusters per scan. Single words, by contrast, match by chance about
/// 2^24 × 32 × q = 600 times per scan, which is why they alone are no finding.
const CLUSTER_WORDS: usize = 4;

/// See [`CLUSTER_WORDS`]: 256 bytes, 64 words.
const CLUSTER_SPAN: usize = 256;

impl Evidence {
    fn new() -> Box<Self> {
        let layout = std::alloc::Layout::new::<Self>();
        // SAFETY: `layout` is not zero-sized. The memory comes from the global allocator with
        // the layout of `Self`, as `Box::from_raw` requires, and all-zero bytes are a valid
        // `Evidence` (plain integer arrays).
        unsafe {
            let ptr = std::alloc::alloc_zeroed(layout).cast::<Self>();
            if ptr.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(ptr)
        }
    }

    fn range(&self) -> Range<usize> {
        let start = self as *const Self as usize;
        start..start + size_of::<Self>()
    }

    /// Computes ChaCha20 keystream block `counter` under `keys[key]` (RFC 8439, section 2.3,
    /// with D. J. Bernstein's original layout: constants in words 0-3, key in words 4-11, a
    /// 64-bit block counter in words 12-13, the 64-bit nonce 0 in words 14-15), and writes
    /// it to `out`. Every intermediate value is in `self.input` and `self.state`.
    fn chacha20_block(&mut self, key: usize, counter: u64, out: Output) {
        block_function(
            &self.keys[key],
            counter,
            &mut self.input,
            &mut self.state,
            |_| (),
        );
        let out = match out {
            Output::NextKey => &mut self.keys[key + 1][..],
            Output::Block => &mut self.block[..],
        };
        for (i, bytes) in out.chunks_exact_mut(4).enumerate() {
            bytes.copy_from_slice(&self.state[i].wrapping_add(self.input[i]).to_le_bytes());
        }
    }

    /// Puts the words of `keys[..old]` and of their block functions into the table, sorted.
    fn build_table(&mut self, old: usize) {
        self.table_len = 0;
        for key in 0..old {
            let start = self.table_len;
            for (i, word) in self.keys[key].chunks_exact(4).enumerate() {
                self.table[start + i] = (u32::from_le_bytes(word.try_into().unwrap()), key as u32);
            }
            let mut len = start + 8;
            let Self {
                keys,
                input,
                state,
                table,
                ..
            } = self;
            for counter in 0..REFILL_BLOCKS as u64 {
                let mut round = 0;
                block_function(&keys[key], counter, input, state, |state| {
                    round += 1;
                    if round < 20 {
                        for &w in state {
                            table[len] = (w, key as u32);
                            len += 1;
                        }
                    }
                });
            }
            let mine = &mut self.table[start..len];
            mine.sort_unstable();
            let mut kept = 0;
            for i in 0..mine.len() {
                if i == 0 || mine[i] != mine[kept - 1] {
                    mine[kept] = mine[i];
                    kept += 1;
                }
            }
            self.table_len = start + kept;
        }
        self.table[..self.table_len].sort_unstable();
    }

    /// Sets the filter from the table.
    fn build_filter(&mut self) {
        self.filter.fill(0);
        for &(w, _) in &self.table[..self.table_len] {
            self.filter[(w >> 14) as usize] |= 1 << ((w >> 8) & 63);
        }
    }

    /// Draws a seed from the process's random hash keys and computes the keys of `batches`
    /// batches; draws again in the unlikely case (2^-31 per word) that a key has a word 0 or
    /// `u32::MAX`, values that memory holds in long runs anyway.
    fn draw_keys(&mut self, batches: usize) {
        assert!(batches <= MAX_BATCHES);
        let hash_keys = std::collections::hash_map::RandomState::new();
        for attempt in 0u64.. {
            for (i, bytes) in self.keys[0].chunks_exact_mut(8).enumerate() {
                bytes.copy_from_slice(&hash_keys.hash_one((attempt, i)).to_le_bytes());
            }
            for key in 0..batches {
                self.chacha20_block(key, 0, Output::NextKey);
            }
            let degenerate = self.keys[..batches]
                .iter()
                .flat_map(|key| key.chunks_exact(4))
                .any(|w| w == [0; 4] || w == [0xff; 4]);
            if !degenerate {
                break;
            }
        }
    }

    /// Checks that `served` is bytes `32..32 + served.len()` of the keystream of
    /// `keys[batch]`: that the keys computed here are the generator's.
    fn check_batch(&mut self, batch: usize, served: &[u8]) {
        let mut at = KEY_LEN;
        let mut rest = served;
        while !rest.is_empty() {
            self.chacha20_block(batch, (at / BLOCK_LEN) as u64, Output::Block);
            let within = at % BLOCK_LEN;
            let n = (BLOCK_LEN - within).min(rest.len());
            assert!(
                rest[..n] == self.block[within..within + n],
                "batch {batch}: the bytes served at offset {} are not the keystream of the key \
                 computed here",
                at - KEY_LEN
            );
            rest = &rest[n..];
            at += n;
        }
    }

    /// Scans the process's writable memory, except this allocation, for `keys[..old]`: as
    /// 32 contiguous bytes, as a broadcast of one of their words, and as clusters of the
    /// words of their block functions (native-endian 32-bit words at 4-byte alignment).
    /// Returns what it found and the number of bytes it read.
    fn scan_for_keys(&mut self, old: usize, scan: usize) -> (Vec<Finding>, usize) {
        self.build_table(old);
        self.build_filter();
        for key in 0..old {
            let bytes = &self.keys[key];
            self.prefixes[key] = (u64::from_le_bytes(bytes[..8].try_into().unwrap()), key);
            for (i, word) in bytes.chunks_exact(4).enumerate() {
                self.words[8 * key + i] = (u32::from_le_bytes(word.try_into().unwrap()), key, i);
            }
        }
        self.prefixes[..old].sort_unstable();
        self.words[..8 * old].sort_unstable();
        // Computing the table leaves words of the keys in the dead frames of this code.
        scrub_scan_frames();
        let skip = self.range();
        let Self {
            keys,
            prefixes,
            words,
            table,
            table_len,
            filter,
            scan: buf,
            ..
        } = self;
        let (prefixes, words, table) = (&prefixes[..old], &words[..8 * old], &table[..*table_len]);
        let mut found = Vec::new();
        let mut hits = Vec::new();
        let scanned = scan_writable_memory(buf, skip, |mapping, at, bytes| {
            for i in 0..bytes.len().saturating_sub(WINDOW - 1) {
                let window = &bytes[i..i + WINDOW];
                if (at + i) % 4 == 0 {
                    let word = u32::from_ne_bytes(window[..4].try_into().unwrap());
                    if word != 0 && filter[(word >> 14) as usize] & (1 << ((word >> 8) & 63)) != 0 {
                        let first = table.partition_point(|&(w, _)| w < word);
                        for (entry, &(_, key)) in table
                            .iter()
                            .enumerate()
                            .skip(first)
                            .take_while(|&(_, &(w, _))| w == word)
                        {
                            hits.push(WordHit {
                                at: at + i,
                                key: key as usize,
                                entry,
                                mapping: mapping.range.clone(),
                                mapping_name: mapping.name.clone(),
                            });
                        }
                    }
                }
                let prefix = u64::from_le_bytes(window[..8].try_into().unwrap());
                if prefix != 0 {
                    let first = prefixes.partition_point(|&(p, _)| p < prefix);
                    for &(_, key) in prefixes[first..].iter().take_while(|&&(p, _)| p == prefix) {
                        if window == keys[key] {
                            found.push(Finding::new(mapping, at + i, key, Kind::Contiguous, scan));
                        }
                    }
                }
                let word = &window[..4];
                if (at + i) % 4 == 0 && word != [0; 4] && window.chunks_exact(4).all(|w| w == word)
                {
                    let word = u32::from_ne_bytes(word.try_into().unwrap());
                    let first = words.partition_point(|&(w, _, _)| w < word);
                    for &(_, key, index) in
                        words[first..].iter().take_while(|&&(w, _, _)| w == word)
                    {
                        found.push(Finding::new(
                            mapping,
                            at + i,
                            key,
                            Kind::Broadcast(index),
                            scan,
                        ));
                    }
                }
            }
        });
        // Clusters: runs of hits of one key, each within CLUSTER_SPAN bytes of the run's
        // first, with at least CLUSTER_WORDS distinct words.
        hits.sort_by_key(|h| (h.key, h.at));
        let mut start = 0;
        while start < hits.len() {
            let first = &hits[start];
            let end = start
                + hits[start..]
                    .iter()
                    .take_while(|h| h.key == first.key && h.at < first.at + CLUSTER_SPAN)
                    .count();
            let mut entries: Vec<usize> = hits[start..end].iter().map(|h| h.entry).collect();
            entries.sort_unstable();
            entries.dedup();
            if entries.len() >= CLUSTER_WORDS {
                let key_words = entries
                    .iter()
                    .filter(|&&e| is_key_word(keys, first.key, table[e].0))
                    .count();
                let last = hits[end - 1].at;
                found.push(Finding {
                    at: first.at..last + 4,
                    key: first.key,
                    kind: Kind::Cluster {
                        words: entries.len(),
                        key_words,
                    },
                    scan,
                    mapping: first.mapping.clone(),
                    mapping_name: first.mapping_name.clone(),
                });
                start = end;
            } else {
                start += 1;
            }
        }
        (found, scanned)
    }

    /// Zeroes the keys and everything derived from them.
    fn wipe(&mut self) {
        // SAFETY: `self` is a valid, exclusive pointer to plain data whose all-zero value is
        // valid; volatile writes are not elided.
        unsafe {
            let bytes = (self as *mut Self).cast::<u8>();
            for i in 0..core::mem::offset_of!(Self, scan) {
                bytes.add(i).write_volatile(0);
            }
        }
    }
}

/// A word of memory equal to a word of an old key's block function.
struct WordHit {
    at: usize,
    key: usize,
    /// Its entry in [`Evidence::table`]: distinct entries of one key are distinct words.
    entry: usize,
    mapping: Range<usize>,
    mapping_name: String,
}

/// Whether `word` is one of the eight words of `keys[key]`.
fn is_key_word(keys: &[[u8; KEY_LEN]], key: usize, word: u32) -> bool {
    keys[key]
        .chunks_exact(4)
        .any(|w| u32::from_le_bytes(w.try_into().unwrap()) == word)
}

/// Where [`Evidence::chacha20_block`] writes its block.
#[derive(Clone, Copy)]
enum Output {
    /// The first 32 bytes, as the next key.
    NextKey,
    /// All 64 bytes, to `Evidence::block`.
    Block,
}

/// The rounds of the ChaCha20 block function for block `counter` under `key` (RFC 8439,
/// section 2.3, with D. J. Bernstein's original layout: constants in words 0-3, key in
/// words 4-11, a 64-bit block counter in words 12-13, the 64-bit nonce 0 in words 14-15):
/// leaves the input in `input` and the working state after round 20 in `state`;
/// `each_round` sees the working state after every round.
fn block_function(
    key: &[u8; KEY_LEN],
    counter: u64,
    input: &mut [u32; 16],
    state: &mut [u32; 16],
    mut each_round: impl FnMut(&[u32; 16]),
) {
    input[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
    for (word, bytes) in input[4..12].iter_mut().zip(key.chunks_exact(4)) {
        *word = u32::from_le_bytes(bytes.try_into().unwrap());
    }
    input[12] = counter as u32;
    input[13] = (counter >> 32) as u32;
    input[14] = 0;
    input[15] = 0;
    *state = *input;
    for _ in 0..10 {
        // Columns, then diagonals.
        for round in [
            [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]],
            [[0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]],
        ] {
            for [a, b, c, d] in round {
                quarter_round(state, a, b, c, d);
            }
            each_round(state);
        }
    }
}

fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// How an old key was found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The whole key as 32 contiguous bytes.
    Contiguous,
    /// Word `i` of the key (its little-endian bytes `4 i..4 i + 4`, as a native-endian
    /// word) at least eight times in a row.
    Broadcast(usize),
    /// At least [`CLUSTER_WORDS`] distinct words of the key and its block function within
    /// [`CLUSTER_SPAN`] bytes: `words` distinct ones, `key_words` of them key words.
    Cluster { words: usize, key_words: usize },
}

/// An old key in memory outside the generator.
struct Finding {
    /// The bytes it occupies.
    at: Range<usize>,
    /// Index of the key in the generator's sequence (0 is the seed).
    key: usize,
    kind: Kind,
    /// The scan that found it first (scan `g` runs after read group `g`).
    scan: usize,
    mapping: Range<usize>,
    mapping_name: String,
}

impl Finding {
    fn new(mapping: &Mapping, addr: usize, key: usize, kind: Kind, scan: usize) -> Self {
        Finding {
            at: addr..addr + WINDOW,
            key,
            kind,
            scan,
            mapping: mapping.range.clone(),
            mapping_name: mapping.name.clone(),
        }
    }

    /// One line for the failure report; `frame` is an address in the test's stack frame.
    fn describe(&self, frame: usize) -> String {
        let what = match self.kind {
            Kind::Contiguous => "as 32 contiguous bytes".to_owned(),
            Kind::Broadcast(i) => {
                format!(
                    "as a broadcast of its word {i} ({} copies)",
                    self.at.len() / 4
                )
            }
            Kind::Cluster { words, key_words } => format!(
                "as a cluster of {words} distinct words of its block function ({key_words} \
                 of them key words)"
            ),
        };
        let place = if self.mapping.contains(&frame) {
            let depth = frame.saturating_sub(self.at.start);
            format!("the stack of the thread that read, {depth} bytes below the test's frame")
        } else if self.mapping_name.is_empty() {
            "anonymous memory (heap arena or another thread's stack)".to_owned()
        } else {
            self.mapping_name.clone()
        };
        format!(
            "old key {} (key 0 is the seed) {what} at {:#x}..{:#x}, in {place} (mapping \
             {:#x}..{:#x}), after read group {}",
            self.key, self.at.start, self.at.end, self.mapping.start, self.mapping.end, self.scan
        )
    }
}

/// Merges the overlapping windows of one broadcast run (sixteen equal words from a 512-bit
/// register are nine windows) and the same key found again by a later scan into one
/// finding, and sorts the findings by scan and address.
fn merge_findings(mut found: Vec<Finding>) -> Vec<Finding> {
    found.sort_by_key(|f| (f.key, f.at.start, f.scan));
    let mut merged: Vec<Finding> = Vec::new();
    for f in found {
        if let Some(last) = merged.last_mut()
            && f.kind == last.kind
            && f.key == last.key
            && (f.at.start == last.at.start
                || f.kind != Kind::Contiguous && f.at.start <= last.at.end)
        {
            last.at.end = last.at.end.max(f.at.end);
            continue;
        }
        merged.push(f);
    }
    merged.sort_by_key(|f| (f.scan, f.at.start));
    merged
}

/// The generator under test, built from the seed without leaving a copy of it in the
/// caller's frame (`Box::new` builds the generator in this frame and copies it to the heap;
/// this frame is dead once it returns, and the caller scrubs it).
#[inline(never)]
fn boxed_generator(seed: &[u8; KEY_LEN]) -> Box<FkeRng> {
    Box::new(FkeRng::from_seed(*seed))
}

/// Zeroes the stack below the caller's frame where the test's own code (drawing the keys,
/// building the generator) may have left key bytes: only the generator's residue counts.
#[inline(never)]
fn scrub_stack_below() {
    let mut area = [0u8; 2 * STACK_GAP];
    black_box(&mut area);
}

/// Zeroes the stack the scan's own frames may have used (it compares words of the keys in
/// registers that may be spilled), above the reads' dead frames, which lie deeper than
/// [`STACK_GAP`] and are left for the next scan.
#[inline(never)]
fn scrub_scan_frames() {
    let mut area = [0u8; STACK_GAP / 2];
    black_box(&mut area);
}

/// Runs `reads` with [`STACK_GAP`] bytes of stack kept between the caller's frame and it.
#[inline(never)]
fn run_deeper(reads: &mut dyn FnMut()) {
    let mut gap = [0u8; STACK_GAP];
    black_box(&mut gap);
    reads();
    black_box(&gap);
}

/// Seeds a boxed `FkeRng` with a seed drawn at run time, makes the reads of each group in
/// turn (their lengths in bytes), and after each group scans the process's writable memory
/// for every key used so far except the generator's current one, as 32 contiguous bytes and
/// as a broadcast of any of its words. Panics, listing every finding, if any is found, or
/// if the bytes served are not the keystream of the keys computed here.
fn check_no_old_key_after(groups: &[Vec<usize>]) {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    let frame = 0u8;
    let frame = &raw const frame as usize;

    // Old keys at each scan: the keys of every batch run so far.
    let mut batches = Batches::default();
    let old_after: Vec<usize> = groups
        .iter()
        .map(|group| {
            group.iter().for_each(|&len| batches.read(len));
            batches.served.len()
        })
        .collect();

    let mut evidence = Evidence::new();
    evidence.draw_keys(batches.served.len());
    let mut rng = boxed_generator(&evidence.keys[0]);
    let mut served = vec![0u8; groups.iter().flatten().sum()];
    scrub_stack_below();

    let mut found = Vec::new();
    let mut scanned = 0;
    let mut rest = &mut served[..];
    for (scan, (group, &old)) in groups.iter().zip(&old_after).enumerate() {
        let (now, later) = rest.split_at_mut(group.iter().sum());
        // The reads, then at once the scan, which runs above the reads' dead frames.
        run_deeper(&mut || {
            let mut now = &mut now[..];
            for &len in group {
                let (read, later) = core::mem::take(&mut now).split_at_mut(len);
                rng.fill(read);
                now = later;
            }
        });
        let (more, bytes) = evidence.scan_for_keys(old, scan);
        scrub_scan_frames();
        found.extend(more);
        scanned += bytes;
        rest = later;
    }

    // The scans only mean something if the keys computed here are the generator's.
    let mut stream = &served[..];
    for (batch, &n) in batches.served.iter().enumerate() {
        let (bytes, later) = stream.split_at(n);
        evidence.check_batch(batch, bytes);
        stream = later;
    }
    evidence.wipe();
    drop(rng);

    let found = merge_findings(found);
    eprintln!(
        "{} keystream batches, {} bytes served, {} scans ({} KiB read): {} copies of old keys \
         found",
        batches.served.len(),
        served.len(),
        groups.len(),
        scanned >> 10,
        found.len()
    );
    for f in &found {
        eprintln!("  {}", f.describe(frame));
    }
    assert!(
        found.is_empty(),
        "{} copies of old keys in memory; the first: {}",
        found.len(),
        found[0].describe(frame)
    );
}

/// Refills: a first read of 1 byte refills; each 992-byte read then takes the 991 bytes
/// left, refills and takes one more (never finding the buffer empty with 992 bytes or more
/// to go, which would be a direct fill); 200 reads of 1 to 61 bytes refill when they run the
/// buffer dry. 15 refills in all, all through the AVX-512 kernel on CPUs with AVX-512F, the
/// AVX2 kernel on CPUs with AVX2 only, and the `chacha20` crate elsewhere.
#[test]
fn refills_leave_no_old_key_behind() {
    check_no_old_key_after(&[
        vec![1],
        vec![BUFFER_LEN; 8],
        (0..200).map(|n| 1 + (n * 37) % 61).collect(),
    ]);
}

/// Direct fills: reads of 992 bytes or more that find the buffer empty, each one batch
/// written straight into the caller's memory. Beyond its first 1024 bytes (16 blocks), a
/// 992-byte read needs no keystream, a 5000-byte read 62 blocks and 40 bytes, a 3000-byte
/// read 31 blocks and 24 bytes, an 1100-byte read one block and 44 bytes, and a 1504-byte
/// read exactly 8 blocks (one eight-block pass and no tail, so no later scrub covers for
/// that pass's): whole passes written in place and tails of different lengths written
/// through a scratch area, by whichever kernel (or the `chacha20` crate) the CPU and the
/// length select.
#[test]
fn direct_fills_leave_no_old_key_behind() {
    check_no_old_key_after(&[
        vec![5000],
        vec![BUFFER_LEN],
        vec![3000],
        vec![1100],
        vec![1504],
    ]);
}

// ---- The one-off path ---------------------------------------------------------------------

static SERVED: Mutex<Option<[u8; 16]>> = Mutex::new(None);

struct ReadsAtExit;

impl Drop for ReadsAtExit {
    fn drop(&mut self) {
        let v: [u8; 16] = fkrng::array();
        *SERVED.lock().unwrap() = Some(v);
    }
}

std::thread_local! {
    static READS_AT_EXIT: ReadsAtExit = const { ReadsAtExit };
}

/// Addresses of 32-byte windows in writable memory under which ChaCha20 (nonce 0, block 0)
/// gives `served` as bytes 32..48: the first 16 bytes a fast-key-erasure batch serves.
fn keys_reproducing(served: &[u8; 16]) -> Vec<usize> {
    let mut buf = vec![0u8; SCAN_CHUNK];
    let own = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut found = Vec::new();
    scan_writable_memory(&mut buf, own, |_, at, bytes| {
        for i in 0..bytes.len().saturating_sub(WINDOW - 1) {
            let window: [u8; WINDOW] = bytes[i..i + WINDOW].try_into().unwrap();
            if window == [0; WINDOW] {
                continue;
            }
            let mut z = [0u8; 48];
            chacha20::ChaCha20Rng::from_seed(window).fill_bytes(&mut z);
            if z[32..] == served[..] {
                found.push(at + i);
            }
        }
    });
    found
}

#[test]
fn one_off_read_leaves_no_key_behind() {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    let one_offs = fkrng::test_hooks::counters::one_off_reads_unavailable();
    std::thread::spawn(|| {
        // Registered before fkrng's own thread-local, so destroyed after it.
        READS_AT_EXIT.with(|_| ());
        let _: [u8; 1] = fkrng::array();
    })
    .join()
    .unwrap();
    assert_eq!(
        fkrng::test_hooks::counters::one_off_reads_unavailable() - one_offs,
        1,
        "the destructor's read took the one-off path"
    );
    let served = SERVED.lock().unwrap().expect("the destructor read");
    assert_eq!(keys_reproducing(&served), Vec::<usize>::new());
}

// ---- Signal frames ------------------------------------------------------------------------

/// Batches (refills and direct fills, alternating) the signal-storm scan runs at least.
const STORM_MIN_BATCHES: usize = 1000;

/// Batches interrupted by a signal that the signal-storm scan waits for, at least.
const STORM_MIN_INTERRUPTED: usize = 200;

/// Batches after which the signal-storm scan gives up waiting for interrupted ones.
const STORM_MAX_BATCHES: usize = 400_000;

/// Bytes of dead stack below the reading code that the signal-storm scan reads after each
/// batch: more than the deepest keystream frame plus the red zone plus the largest signal
/// frame (`getauxval(AT_MINSIGSTKSZ)`, 3.3 KiB with AVX-512 state).
const STORM_SPAN: usize = 16 << 10;

/// Signals the storm handler has run.
static STORM_SIGNALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn count_signal(_: libc::c_int) {
    STORM_SIGNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// What the signal-storm scan found after one batch, in the dead stack below the reads.
#[derive(Default)]
struct StormFindings {
    /// Batches with at least two distinct words of the key just made old.
    key_words: usize,
    /// Batches with all eight.
    whole_keys: usize,
    /// Batches with a cluster of block-function words of that key.
    clusters: usize,
    /// Deepest finding below the reading code's frame, in bytes.
    deepest: usize,
}

/// Signal frames: a POSIX timer sends `SIGUSR2` to the reading thread every 50 µs while
/// it alternates refills and direct fills; the handler (on the reading thread's own
/// stack, as most handlers run) only counts. The kernel saves the interrupted registers,
/// vector registers included, in a frame below the interrupted code's stack pointer. After
/// every batch the test reads the 16 KiB of dead stack below the reading code and searches
/// it for the key that batch ran under (now old): two or more of its eight words, or a
/// cluster of the words of its block function ([`CLUSTER_WORDS`] within [`CLUSTER_SPAN`]
/// bytes). Two given words of a key in 4096 random words occur with probability under
/// C(4096, 2) (8 / 2^32)^2 = 3e-11. Runs until at least [`STORM_MIN_INTERRUPTED`] batches
/// were interrupted by a signal. Fails on x86-64 only, where fkrng wipes signal frames
/// below a keystream computation; elsewhere it reports what the frames leave.
#[test]
fn signal_frames_leave_no_old_key_behind() {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    use std::sync::atomic::Ordering::Relaxed;

    // SAFETY: a handler that only increments an atomic; `sa_mask` is initialised empty.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()),
            0
        );
    }
    let timer = StormTimer::start();

    let mut evidence = Evidence::new();
    evidence.draw_keys(1);
    let mut rng = boxed_generator(&evidence.keys[0]);
    scrub_stack_below();
    let mut served = vec![0u8; 1100];
    let mut findings = StormFindings::default();
    let wiped_before = fkrng::test_hooks::counters::signal_frames_wiped();
    let (mut batches, mut interrupted) = (0, 0);
    while batches < STORM_MIN_BATCHES
        || interrupted < STORM_MIN_INTERRUPTED && batches < STORM_MAX_BATCHES
    {
        // A refill (a 1-byte read, then the other 991 bytes) or a direct fill of 1100 bytes.
        let refill = batches % 2 == 0;
        let len = if refill { BUFFER_LEN } else { 1100 };
        let mut frame = 0usize;
        let before = STORM_SIGNALS.load(Relaxed);
        run_deeper_unpainted(&mut || {
            let here = 0u8;
            frame = black_box(&raw const here) as usize;
            if refill {
                let (one, rest) = served[..len].split_at_mut(1);
                rng.fill(one);
                rng.fill(rest);
            } else {
                rng.fill(&mut served[..len]);
            }
        });
        if STORM_SIGNALS.load(Relaxed) != before {
            interrupted += 1;
        }
        evidence.check_batch(0, &served[..len]);
        evidence.storm_scan(frame, &mut findings);
        evidence.keys.copy_within(1..2, 0);
        evidence.chacha20_block(0, 0, Output::NextKey);
        batches += 1;
    }
    drop(timer);
    let wiped = fkrng::test_hooks::counters::signal_frames_wiped() - wiped_before;
    evidence.wipe();
    drop(rng);
    eprintln!(
        "{batches} batches, {interrupted} interrupted by one of {} signals; after {} of them \
         two or more words of the old key in the dead stack below the reads, after {} all \
         eight, after {} a cluster of its block function's words; deepest {} bytes below; \
         {wiped} signal frames below a computation wiped",
        STORM_SIGNALS.load(Relaxed),
        findings.key_words,
        findings.whole_keys,
        findings.clusters,
        findings.deepest
    );
    assert!(
        interrupted >= STORM_MIN_INTERRUPTED,
        "only {interrupted} of {batches} batches were interrupted by a signal"
    );
    // Optimised x86-64 builds scrub less stack than a signal frame takes, so frames
    // reach below the scrubbed area and must have been found there.
    if cfg!(all(target_arch = "x86_64", not(debug_assertions))) {
        assert!(
            wiped > 0,
            "no signal frame was found below a keystream computation"
        );
    }
    // Signal frames are wiped on x86-64 Linux only; elsewhere what they leave is the
    // documented residue (docs/SECURITY.md), reported above and not a failure.
    if cfg!(target_arch = "x86_64") {
        assert!(
            findings.key_words == 0 && findings.clusters == 0,
            "old key material in dead stack after {} batches (key words) and {} (clusters)",
            findings.key_words,
            findings.clusters
        );
    }
}

/// [`run_deeper`] without zeroing the gap (which would take most of the time between
/// batches, when a signal is then least useful).
#[inline(never)]
fn run_deeper_unpainted(reads: &mut dyn FnMut()) {
    let gap = core::mem::MaybeUninit::<[u8; STACK_GAP]>::uninit();
    black_box(&gap);
    reads();
    black_box(&gap);
}

/// Interval of the storm's timer: 50 µs (shorter ones make unoptimised and emulated runs
/// spend most of their time in signal delivery).
const STORM_INTERVAL_NS: libc::c_long = 50_000;

/// A POSIX timer that sends `SIGUSR2` to the calling thread every 50 µs, from the kernel's
/// timer interrupt (so the signal lands in whatever the thread is running, however busy
/// the machine), until dropped.
struct StormTimer(libc::timer_t);

impl StormTimer {
    fn start() -> Self {
        // SAFETY: a zeroed `sigevent` with the fields a thread-directed timer reads set;
        // `timer` receives the new timer's id.
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = libc::SIGUSR2;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::mem::zeroed();
            assert_eq!(
                libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer),
                0,
                "timer_create"
            );
            let every = libc::timespec {
                tv_sec: 0,
                tv_nsec: STORM_INTERVAL_NS,
            };
            let spec = libc::itimerspec {
                it_interval: every,
                it_value: every,
            };
            assert_eq!(
                libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()),
                0,
                "timer_settime"
            );
            StormTimer(timer)
        }
    }
}

impl Drop for StormTimer {
    fn drop(&mut self) {
        // SAFETY: deletes the timer made in `start`.
        unsafe { libc::timer_delete(self.0) };
    }
}

impl Evidence {
    /// Reads the [`STORM_SPAN`] bytes of stack below `frame` and searches them for words of
    /// `keys[0]` and of its block function.
    fn storm_scan(&mut self, frame: usize, findings: &mut StormFindings) {
        self.build_table(1);
        let start = (frame & !63) - STORM_SPAN;
        let mem = std::fs::File::open("/proc/self/mem").unwrap();
        let got =
            std::os::unix::fs::FileExt::read_at(&mem, &mut self.scan[..STORM_SPAN], start as u64)
                .unwrap();
        assert_eq!(got, STORM_SPAN);
        let Self {
            keys,
            table,
            table_len,
            scan,
            ..
        } = self;
        let table = &table[..*table_len];
        let mut key_words = [false; 8];
        let mut hits: Vec<(usize, usize)> = Vec::new();
        for (i, word) in scan[..STORM_SPAN].chunks_exact(4).enumerate() {
            let word = u32::from_ne_bytes(word.try_into().unwrap());
            if word == 0 {
                continue;
            }
            let first = table.partition_point(|&(w, _)| w < word);
            if table.get(first).is_some_and(|&(w, _)| w == word) {
                hits.push((4 * i, first));
                for (k, key_word) in keys[0].chunks_exact(4).enumerate() {
                    if u32::from_le_bytes(key_word.try_into().unwrap()) == word {
                        key_words[k] = true;
                    }
                }
            }
        }
        let mut cluster = false;
        for (n, &(at, _)) in hits.iter().enumerate() {
            let mut entries: Vec<usize> = hits[n..]
                .iter()
                .take_while(|&&(b, _)| b < at + CLUSTER_SPAN)
                .map(|&(_, e)| e)
                .collect();
            entries.sort_unstable();
            entries.dedup();
            cluster |= entries.len() >= CLUSTER_WORDS;
        }
        let distinct = key_words.iter().filter(|&&k| k).count();
        findings.key_words += usize::from(distinct >= 2);
        findings.whole_keys += usize::from(distinct == 8);
        findings.clusters += usize::from(cluster);
        if distinct >= 2 || cluster {
            let lowest = hits.first().map_or(0, |&(at, _)| at);
            findings.deepest = findings.deepest.max(STORM_SPAN - lowest);
        }
        scan[..STORM_SPAN].fill(0);
    }
}
