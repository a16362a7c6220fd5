//! Backtracking resistance in memory: once fkrng has produced keystream, nothing in the
//! process's writable memory may let an attacker recompute output already handed out.
//!
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
//! Optimised builds only: unoptimised code (the default test profile) moves the cipher's
//! state through several stack frames of generic code instantiated in this crate, which no
//! wipe can reach; CI runs these tests with `cargo test --release --test residue`.

#![cfg(target_os = "linux")]

use rand_core::{Rng, SeedableRng};
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// Held by each test for the whole time it reads process memory.
static MEMORY_SCAN: Mutex<()> = Mutex::new(());

/// Bytes of process memory read at a time.
const SCAN_CHUNK: usize = 1 << 22;

/// Length of the windows the scans compare: one ChaCha20 key, 32 bytes.
const WINDOW: usize = 32;

/// Reads every writable mapping of the process except `skip` (the caller's own search data
/// and buffer) into `buf`, one chunk at a time, and calls `visit(address, bytes)`
/// for each chunk. Consecutive chunks overlap by 31 bytes, so every 32-byte window of a
/// mapping lies whole in exactly one chunk as a window starting at offset
/// `0..=bytes.len() - 32`. Kernel mappings such as `[vvar]` are skipped, and an unreadable
/// page ends the scan of its mapping. Returns the number of bytes read.
fn scan_writable_memory(
    buf: &mut [u8],
    skip: Range<usize>,
    mut visit: impl FnMut(usize, &[u8]),
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
        let start = usize::from_str_radix(start, 16).unwrap();
        let end = usize::from_str_radix(end, 16).unwrap();
        // The parts of the mapping before and after `skip`.
        let parts = [start..end.min(skip.start), start.max(skip.end)..end];
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
                visit(at, &buf[..got]);
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
    scan_writable_memory(&mut buf, own, |at, bytes| {
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
#[cfg_attr(
    debug_assertions,
    ignore = "needs an optimised build: cargo test --release --test residue"
)]
fn one_off_read_leaves_no_key_behind() {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    let one_offs = fkrng::probe::one_off_reads_unavailable();
    std::thread::spawn(|| {
        // Registered before fkrng's own thread-local, so destroyed after it.
        READS_AT_EXIT.with(|_| ());
        let _: [u8; 1] = fkrng::array();
    })
    .join()
    .unwrap();
    assert_eq!(
        fkrng::probe::one_off_reads_unavailable() - one_offs,
        1,
        "the destructor's read took the one-off path"
    );
    let served = SERVED.lock().unwrap().expect("the destructor read");
    assert_eq!(keys_reproducing(&served), Vec::<usize>::new());
}
