//! Reading the process's writable memory, and keeping the test's own stack frames out of
//! what is read: the scans, the mutex that runs them one at a time, and the stack gap and
//! scrubs that separate the reads' dead frames from the scanning code's.

use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Mutex;

/// Held by each test for the whole time it reads process memory.
pub(crate) static MEMORY_SCAN: Mutex<()> = Mutex::new(());

/// Bytes of process memory read at a time.
pub(crate) const SCAN_CHUNK: usize = 1 << 22;

/// Length of the windows the scans compare: one ChaCha20 key, 32 bytes.
pub(crate) const WINDOW: usize = 32;

/// A writable mapping of the process, from one line of `/proc/self/maps`.
pub(crate) struct Mapping {
    pub(crate) range: Range<usize>,
    /// The pathname column: `[stack]`, `[heap]`, a file, or empty for anonymous memory
    /// (thread stacks among it).
    pub(crate) name: String,
}

/// Reads every writable mapping of the process except `skip` (the caller's own search data
/// and buffer) into `buf`, one chunk at a time, and calls `visit(mapping, address, bytes)`
/// for each chunk. Consecutive chunks overlap by 31 bytes, so every 32-byte window of a
/// mapping lies whole in exactly one chunk as a window starting at offset
/// `0..=bytes.len() - 32`. Kernel mappings such as `[vvar]` are skipped, and an unreadable
/// page ends the scan of its mapping. Returns the number of bytes read.
pub(crate) fn scan_writable_memory(
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

/// Stack kept between the test's frame and the reads, so that the residue the reads may
/// leave in dead frames lies deeper than anything the scan itself calls can reach.
pub(crate) const STACK_GAP: usize = 32 << 10;

/// Zeroes the stack below the caller's frame where the test's own code (drawing the keys,
/// building the generator) may have left key bytes: only the generator's residue counts.
#[inline(never)]
pub(crate) fn scrub_stack_below() {
    let mut area = [0u8; 2 * STACK_GAP];
    black_box(&mut area);
}

/// Zeroes the stack the scan's own frames may have used (it compares words of the keys in
/// registers that may be spilled), above the reads' dead frames, which lie deeper than
/// [`STACK_GAP`] and are left for the next scan.
#[inline(never)]
pub(crate) fn scrub_scan_frames() {
    let mut area = [0u8; STACK_GAP / 2];
    black_box(&mut area);
}

/// Runs `reads` with [`STACK_GAP`] bytes of stack kept between the caller's frame and it.
#[inline(never)]
pub(crate) fn run_deeper(reads: &mut dyn FnMut()) {
    let mut gap = [0u8; STACK_GAP];
    black_box(&mut gap);
    reads();
    black_box(&gap);
}

/// [`run_deeper`] without zeroing the gap (which would take most of the time between
/// batches, when a signal is then least useful).
#[inline(never)]
pub(crate) fn run_deeper_unpainted(reads: &mut dyn FnMut()) {
    let gap = core::mem::MaybeUninit::<[u8; STACK_GAP]>::uninit();
    black_box(&gap);
    reads();
    black_box(&gap);
}
