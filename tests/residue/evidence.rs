//! What the scans search for and what they find: the keys a generator used, derived here
//! from its seed with this test's own ChaCha20 (`fkrng_test_support::chacha`, independent of
//! fkrng's keystream code), the words of their block functions, and the findings.

use crate::scanner::{Mapping, SCAN_CHUNK, WINDOW, scan_writable_memory, scrub_scan_frames};
use fkrng_test_support::chacha;
pub(crate) use fkrng_test_support::chacha::{BLOCK_LEN, KEY_LEN};
use std::hash::BuildHasher;
use std::ops::Range;

/// Bytes served from one refill: 1024 bytes of keystream minus the 32-byte next key.
pub(crate) const BUFFER_LEN: usize = 992;

/// Keystream batches (refills and direct fills) a test may run, at most.
pub(crate) const MAX_BATCHES: usize = 32;

/// How many bytes of each keystream batch a sequence of reads serves, batch by batch, by the
/// generator's rules (docs/DESIGN.md): a read takes unserved buffer bytes first; with the
/// buffer empty, a read with 992 bytes or more to go is a direct fill of all of them, and a
/// shorter one refills (992 bytes to serve). Batch `b` runs under key `b` (key 0 is the seed)
/// and serves bytes `32..32 + served[b]` of its keystream.
#[derive(Default)]
pub(crate) struct Batches {
    pub(crate) served: Vec<usize>,
    /// Unserved bytes of the last refill.
    pub(crate) avail: usize,
}

impl Batches {
    pub(crate) fn read(&mut self, mut len: usize) {
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
pub(crate) struct Evidence {
    /// `keys[0]` is the seed; `keys[b + 1]` is the first 32 bytes of the ChaCha20 keystream
    /// under `keys[b]` (nonce 0, block 0): the key after batch `b`.
    pub(crate) keys: [[u8; KEY_LEN]; MAX_BATCHES + 1],
    /// First 8 bytes (little-endian) of every key searched for and its index, sorted.
    pub(crate) prefixes: [(u64, usize); MAX_BATCHES],
    /// Every word of every key searched for, with the key's index and the word's, sorted.
    pub(crate) words: [(u32, usize, usize); 8 * MAX_BATCHES],
    /// The block function's input and working state, and its output block.
    pub(crate) input: [u32; 16],
    pub(crate) state: [u32; 16],
    pub(crate) block: [u8; BLOCK_LEN],
    /// The words of every key searched for and of its block function (see [`KeyWords`]),
    /// sorted, each with the key's index; the first `table_len` entries are in use.
    pub(crate) table: [(u32, u32); MAX_BATCHES * WORDS_PER_KEY],
    pub(crate) table_len: usize,
    /// A bit per value of a word's top 24 bits: set where some word of `table` has them.
    pub(crate) filter: [u64; FILTER_WORDS],
    /// Bytes of `scan` that hold a [`Evidence::snapshot`].
    pub(crate) snapshot_len: usize,
    pub(crate) scan: [u8; SCAN_CHUNK],
}

/// Words searched for per key: its 8 key words and, for each of the 16 blocks of a refill
/// (block counters 0 to 15, which every batch computes) and blocks 16 and 32 (the blocks
/// past the refill that 1,024- and 2,048-byte direct fills compute alongside it, in
/// general-purpose registers on the AVX-512 and AVX2 paths), the 16 words of the block
/// function's working state after each of its first 19 rounds. The state after round 20
/// is the output block minus the input, which is served (and words 13 to 15 of the input
/// are zero, so those output words equal it): no secret.
pub(crate) const WORDS_PER_KEY: usize = 8 + COUNTERS.len() * 19 * 16;

/// The block counters whose working states are searched for.
const COUNTERS: [u64; REFILL_BLOCKS + 2] = {
    let mut counters = [0; REFILL_BLOCKS + 2];
    let mut i = 0;
    while i <= REFILL_BLOCKS {
        counters[i] = i as u64;
        i += 1;
    }
    counters[REFILL_BLOCKS + 1] = 2 * REFILL_BLOCKS as u64;
    counters
};

/// Blocks of a refill.
pub(crate) const REFILL_BLOCKS: usize = 16;

/// Length of [`Evidence::filter`]: 2^24 bits.
pub(crate) const FILTER_WORDS: usize = (1 << 24) / 64;

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
pub(crate) const CLUSTER_WORDS: usize = 4;

/// See [`CLUSTER_WORDS`]: 256 bytes, 64 words.
pub(crate) const CLUSTER_SPAN: usize = 256;

impl Evidence {
    pub(crate) fn new() -> Box<Self> {
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

    pub(crate) fn range(&self) -> Range<usize> {
        let start = self as *const Self as usize;
        start..start + size_of::<Self>()
    }

    /// Computes ChaCha20 keystream block `counter` under `keys[key]` (RFC 8439, section 2.3,
    /// with D. J. Bernstein's original layout: constants in words 0-3, key in words 4-11, a
    /// 64-bit block counter in words 12-13, the 64-bit nonce 0 in words 14-15), and writes
    /// it to `out`. Every intermediate value is in `self.input` and `self.state`.
    pub(crate) fn chacha20_block(&mut self, key: usize, counter: u64, out: Output) {
        chacha::rounds(
            &self.keys[key],
            counter,
            &[0; 8],
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
    pub(crate) fn build_table(&mut self, old: usize) {
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
            for counter in COUNTERS {
                let mut round = 0;
                chacha::rounds(&keys[key], counter, &[0; 8], input, state, |state| {
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
    pub(crate) fn build_filter(&mut self) {
        self.filter.fill(0);
        for &(w, _) in &self.table[..self.table_len] {
            self.filter[(w >> 14) as usize] |= 1 << ((w >> 8) & 63);
        }
    }

    /// Draws a seed from the process's random hash keys and computes the keys of `batches`
    /// batches; draws again in the unlikely case (2^-31 per word) that a key has a word 0 or
    /// `u32::MAX`, values that memory holds in long runs anyway.
    pub(crate) fn draw_keys(&mut self, batches: usize) {
        assert!(batches <= MAX_BATCHES);
        let hash_keys = std::collections::hash_map::RandomState::new();
        for attempt in 0u64.. {
            for (i, bytes) in self.keys[0].chunks_exact_mut(8).enumerate() {
                bytes.copy_from_slice(&hash_keys.hash_one((attempt, i)).to_le_bytes());
            }
            self.derive_keys(batches);
            let degenerate = self.keys[..batches]
                .iter()
                .flat_map(|key| key.chunks_exact(4))
                .any(|w| w == [0; 4] || w == [0xff; 4]);
            if !degenerate {
                break;
            }
        }
    }

    /// Computes `keys[1..=batches]` from `keys[0]`.
    pub(crate) fn derive_keys(&mut self, batches: usize) {
        assert!(batches <= MAX_BATCHES);
        for key in 0..batches {
            self.chacha20_block(key, 0, Output::NextKey);
        }
    }

    /// Copies the bytes of `state` (a thread's generator state, at most [`SCAN_CHUNK`]
    /// bytes) into the scan buffer through `/proc/self/mem`: the kernel copies them, so no
    /// copy of the key they hold is made outside this allocation.
    pub(crate) fn snapshot(&mut self, state: Range<usize>) {
        let mem = std::fs::File::open("/proc/self/mem").unwrap();
        let got = std::os::unix::fs::FileExt::read_at(
            &mem,
            &mut self.scan[..state.len()],
            state.start as u64,
        )
        .unwrap();
        assert_eq!(got, state.len());
        self.snapshot_len = state.len();
    }

    /// Finds the key that the state of [`Evidence::snapshot`] held: the 32-byte window of
    /// it (at any offset) whose keystream, from byte 32 of block 0 on, begins with `served`
    /// (at least 16 bytes, the first that a refill or direct fill under it served). Puts it
    /// in `keys[0]` and wipes the snapshot; panics if no window is that key.
    pub(crate) fn find_snapshot_key(&mut self, served: &[u8]) {
        assert!(served.len() >= 16 && served.len() <= BLOCK_LEN - KEY_LEN);
        let found = (0..=self.snapshot_len - KEY_LEN).any(|at| {
            let (keys, scan) = (&mut self.keys, &self.scan);
            keys[0].copy_from_slice(&scan[at..at + KEY_LEN]);
            self.chacha20_block(0, 0, Output::Block);
            self.block[KEY_LEN..KEY_LEN + served.len()] == *served
        });
        self.scan[..self.snapshot_len].fill(0);
        assert!(
            found,
            "no 32 bytes of the thread's state are the key its reads ran under"
        );
    }

    /// Checks that `served` is bytes `32..32 + served.len()` of the keystream of
    /// `keys[batch]`: that the keys computed here are the generator's.
    pub(crate) fn check_batch(&mut self, batch: usize, served: &[u8]) {
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
    pub(crate) fn scan_for_keys(&mut self, old: usize, scan: usize) -> (Vec<Finding>, usize) {
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
    pub(crate) fn wipe(&mut self) {
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
pub(crate) struct WordHit {
    pub(crate) at: usize,
    pub(crate) key: usize,
    /// Its entry in [`Evidence::table`]: distinct entries of one key are distinct words.
    pub(crate) entry: usize,
    pub(crate) mapping: Range<usize>,
    pub(crate) mapping_name: String,
}

/// Whether `word` is one of the eight words of `keys[key]`.
pub(crate) fn is_key_word(keys: &[[u8; KEY_LEN]], key: usize, word: u32) -> bool {
    keys[key]
        .chunks_exact(4)
        .any(|w| u32::from_le_bytes(w.try_into().unwrap()) == word)
}

/// Where [`Evidence::chacha20_block`] writes its block.
#[derive(Clone, Copy)]
pub(crate) enum Output {
    /// The first 32 bytes, as the next key.
    NextKey,
    /// All 64 bytes, to `Evidence::block`.
    Block,
}

/// How an old key was found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
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
pub(crate) struct Finding {
    /// The bytes it occupies.
    pub(crate) at: Range<usize>,
    /// Index of the key in the generator's sequence (0 is the seed).
    pub(crate) key: usize,
    pub(crate) kind: Kind,
    /// The scan that found it first (scan `g` runs after read group `g`).
    pub(crate) scan: usize,
    pub(crate) mapping: Range<usize>,
    pub(crate) mapping_name: String,
}

impl Finding {
    pub(crate) fn new(mapping: &Mapping, addr: usize, key: usize, kind: Kind, scan: usize) -> Self {
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
    pub(crate) fn describe(&self, frame: usize) -> String {
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
pub(crate) fn merge_findings(mut found: Vec<Finding>) -> Vec<Finding> {
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

/// What the signal-storm scans found, batch by batch, in the dead stack below the reads or
/// on an alternate signal stack.
#[derive(Default)]
pub(crate) struct StormFindings {
    /// Batches scanned.
    pub(crate) batches: usize,
    /// Batches after which anything of the key was found: two or more of its words, or a
    /// cluster or [`MANY_STATE_WORDS`] words of its block function's working states.
    pub(crate) residue: usize,
    /// Batches with at least two distinct words of the key just made old.
    pub(crate) key_words: usize,
    /// Batches with all eight.
    pub(crate) whole_keys: usize,
    /// Batches with a cluster of block-function words of that key.
    pub(crate) clusters: usize,
    /// Batches with at least [`MANY_STATE_WORDS`] distinct words of that key's block
    /// function's working states (key words not counted), anywhere in the span.
    pub(crate) state_words: usize,
    /// Deepest finding below the reading code's frame, in bytes.
    pub(crate) deepest: usize,
    /// The most distinct words of the key and its block function found after one batch.
    pub(crate) most_words: usize,
}

/// Distinct working-state words of one key's block function that make a batch count in
/// [`StormFindings::state_words`]. By the bound of [`CLUSTER_WORDS`] (q = 1.13e-6 per word
/// and key), 8 of the 8192 words of a 32 KiB span match by chance with probability below
/// C(8192, 8) q^8 = 1.4e-21 per scan.
pub(crate) const MANY_STATE_WORDS: usize = 8;

/// Bytes of dead stack below the reading code that the signal-storm scan reads after each
/// batch: more than the deepest keystream frame plus the red zone plus the largest signal
/// frame (`getauxval(AT_MINSIGSTKSZ)`, 3.3 KiB with AVX-512 state).
pub(crate) const STORM_SPAN: usize = 16 << 10;

impl Evidence {
    /// Reads the [`STORM_SPAN`] bytes of stack below `frame` and searches them for words of
    /// `keys[0]` and of its block function.
    pub(crate) fn storm_scan(&mut self, frame: usize, findings: &mut StormFindings) {
        let start = (frame & !63) - STORM_SPAN;
        if let Some(lowest) = self.span_scan(start..start + STORM_SPAN, findings) {
            findings.deepest = findings.deepest.max(STORM_SPAN - lowest);
        }
    }

    /// Reads `span` (at most [`SCAN_CHUNK`] bytes of this process's memory) and searches
    /// it for words of `keys[0]` and of its block function, counting the batch in
    /// `findings` as [`Evidence::storm_scan`] describes. Returns the offset of the lowest
    /// word found if the batch counts as a finding.
    pub(crate) fn span_scan(
        &mut self,
        span: Range<usize>,
        findings: &mut StormFindings,
    ) -> Option<usize> {
        self.build_table(1);
        let len = span.len();
        let mem = std::fs::File::open("/proc/self/mem").unwrap();
        let got =
            std::os::unix::fs::FileExt::read_at(&mem, &mut self.scan[..len], span.start as u64)
                .unwrap();
        assert_eq!(got, len);
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
        // Table entries of working-state words (not key words) found.
        let mut state_entries: Vec<usize> = Vec::new();
        for (i, word) in scan[..len].chunks_exact(4).enumerate() {
            let word = u32::from_ne_bytes(word.try_into().unwrap());
            if word == 0 {
                continue;
            }
            let first = table.partition_point(|&(w, _)| w < word);
            if table.get(first).is_some_and(|&(w, _)| w == word) {
                hits.push((4 * i, first));
                let mut is_key_word = false;
                for (k, key_word) in keys[0].chunks_exact(4).enumerate() {
                    if u32::from_le_bytes(key_word.try_into().unwrap()) == word {
                        key_words[k] = true;
                        is_key_word = true;
                    }
                }
                if !is_key_word {
                    state_entries.push(first);
                }
            }
        }
        state_entries.sort_unstable();
        state_entries.dedup();
        let many_state_words = state_entries.len() >= MANY_STATE_WORDS;
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
        let residue = distinct >= 2 || cluster || many_state_words;
        findings.batches += 1;
        findings.residue += usize::from(residue);
        findings.key_words += usize::from(distinct >= 2);
        findings.whole_keys += usize::from(distinct == 8);
        findings.clusters += usize::from(cluster);
        findings.state_words += usize::from(many_state_words);
        let mut entries: Vec<usize> = hits.iter().map(|&(_, e)| e).collect();
        entries.sort_unstable();
        entries.dedup();
        findings.most_words = findings.most_words.max(entries.len());
        scan[..len].fill(0);
        residue.then(|| hits.first().map_or(0, |&(at, _)| at))
    }
}
