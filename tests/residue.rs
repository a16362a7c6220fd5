//! Backtracking resistance of the one-off generator: after a read served from fresh OS bytes
//! (a thread-local destructor after the thread's state was released; the same path serves
//! signal handlers that interrupt a read), no 32-byte window anywhere in the process's
//! writable memory may be a ChaCha20 key whose keystream reproduces the bytes served.
//!
//! The exited thread's stack stays mapped (glibc caches thread stacks for reuse), so a seed
//! copy left in a dead stack frame would be found here.

#![cfg(target_os = "linux")]

use rand_core::{Rng, SeedableRng};
use std::io::{Read, Seek, SeekFrom};
use std::sync::Mutex;

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
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut buf = vec![0u8; 1 << 22];
    let own = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut found = Vec::new();
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let name = fields.get(5).copied().unwrap_or("");
        if !fields[1].starts_with("rw") || name.starts_with("[v") {
            continue;
        }
        let (start, end) = fields[0].split_once('-').unwrap();
        let start = usize::from_str_radix(start, 16).unwrap();
        let end = usize::from_str_radix(end, 16).unwrap();
        let mut at = start;
        while at < end {
            let len = (end - at).min(buf.len());
            if mem.seek(SeekFrom::Start(at as u64)).is_err() {
                break;
            }
            let got = match mem.read(&mut buf[..len]) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            for i in 0..got.saturating_sub(31) {
                let window: [u8; 32] = buf[i..i + 32].try_into().unwrap();
                if window == [0; 32] || own.contains(&(at + i)) {
                    continue;
                }
                let mut z = [0u8; 48];
                chacha20::ChaCha20Rng::from_seed(window).fill_bytes(&mut z);
                if z[32..] == served[..] {
                    found.push(at + i);
                }
            }
            at += got;
        }
    }
    found
}

/// Optimised builds only: unoptimised code (the default test profile) moves the cipher's
/// state through several stack frames of generic code instantiated in this crate, which no
/// wipe can reach; CI runs this test with `--release`.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "needs an optimised build: cargo test --release --test residue"
)]
fn one_off_read_leaves_no_key_behind() {
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
