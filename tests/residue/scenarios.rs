//! The scenarios the residue tests run: reads of a seeded generator with a scan after each
//! group, a thread-local destructor's one-off read, and a signal storm during refills and
//! direct fills.

use crate::evidence::{
    BUFFER_LEN, Batches, Evidence, KEY_LEN, Output, StormFindings, merge_findings,
};
use crate::scanner::{
    MEMORY_SCAN, SCAN_CHUNK, WINDOW, run_deeper, run_deeper_unpainted, scan_writable_memory,
    scrub_scan_frames, scrub_stack_below,
};
use fkrng::FkeRng;
use fkrng_test_support::signals::{self, ThreadTimer};
use rand_core::{Rng, SeedableRng};
use std::hint::black_box;
use std::sync::{Mutex, PoisonError};

/// The generator under test, built from the seed without leaving a copy of it in the
/// caller's frame (`Box::new` builds the generator in this frame and copies it to the heap;
/// this frame is dead once it returns, and the caller scrubs it).
#[inline(never)]
pub(crate) fn boxed_generator(seed: &[u8; KEY_LEN]) -> Box<FkeRng> {
    Box::new(FkeRng::from_seed(*seed))
}

/// Seeds a boxed `FkeRng` with a seed drawn at run time, makes the reads of each group in
/// turn (their lengths in bytes), and after each group scans the process's writable memory
/// for every key used so far except the generator's current one, as 32 contiguous bytes and
/// as a broadcast of any of its words. Panics, listing every finding, if any is found, or
/// if the bytes served are not the keystream of the keys computed here.
pub(crate) fn check_no_old_key_after(groups: &[Vec<usize>]) {
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

pub(crate) static SERVED: Mutex<Option<[u8; 16]>> = Mutex::new(None);

pub(crate) struct ReadsAtExit;

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
pub(crate) fn keys_reproducing(served: &[u8; 16]) -> Vec<usize> {
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

/// The one-off read of a thread-local destructor, and a scan for a key that reproduces it.
pub(crate) fn one_off_read() {
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

/// Batches (refills and direct fills, alternating) the signal-storm scan runs at least.
pub(crate) const STORM_MIN_BATCHES: usize = 1000;

/// Batches interrupted by a signal that the signal-storm scan waits for, at least.
pub(crate) const STORM_MIN_INTERRUPTED: usize = 200;

/// Batches after which the signal-storm scan gives up waiting for interrupted ones.
pub(crate) const STORM_MAX_BATCHES: usize = 400_000;

/// Signals the storm handler has run.
pub(crate) static STORM_SIGNALS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

pub(crate) extern "C" fn count_signal(_: libc::c_int) {
    STORM_SIGNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Interval of the storm's timer: 50 µs (shorter ones make unoptimised and emulated runs
/// spend most of their time in signal delivery).
pub(crate) const STORM_INTERVAL_NS: libc::c_long = 50_000;

/// Clears the vector registers (and on AArch64 the caller-saved general ones), which the
/// test's own block function (computing and checking each batch's key) leaves holding the
/// next batch's key words: a signal that arrived in the next batch before fkrng's own code
/// clears them would save them in a frame below the reads, and the scan would count the
/// test's copy as fkrng's. (On x86-64 the test's code leaves no such words in registers.)
#[inline(never)]
fn clear_test_registers() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: registers only, each declared clobbered.
    unsafe {
        std::arch::asm!(
            "movi v0.16b, #0", "movi v1.16b, #0", "movi v2.16b, #0", "movi v3.16b, #0",
            "movi v4.16b, #0", "movi v5.16b, #0", "movi v6.16b, #0", "movi v7.16b, #0",
            "movi v8.16b, #0", "movi v9.16b, #0", "movi v10.16b, #0", "movi v11.16b, #0",
            "movi v12.16b, #0", "movi v13.16b, #0", "movi v14.16b, #0", "movi v15.16b, #0",
            "movi v16.16b, #0", "movi v17.16b, #0", "movi v18.16b, #0", "movi v19.16b, #0",
            "movi v20.16b, #0", "movi v21.16b, #0", "movi v22.16b, #0", "movi v23.16b, #0",
            "movi v24.16b, #0", "movi v25.16b, #0", "movi v26.16b, #0", "movi v27.16b, #0",
            "movi v28.16b, #0", "movi v29.16b, #0", "movi v30.16b, #0", "movi v31.16b, #0",
            "mov x0, xzr", "mov x1, xzr", "mov x2, xzr", "mov x3, xzr", "mov x4, xzr",
            "mov x5, xzr", "mov x6, xzr", "mov x7, xzr", "mov x8, xzr", "mov x9, xzr",
            "mov x10, xzr", "mov x11, xzr", "mov x12, xzr", "mov x13, xzr", "mov x14, xzr",
            "mov x15, xzr", "mov x16, xzr", "mov x17, xzr",
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            out("x0") _, out("x1") _, out("x2") _, out("x3") _, out("x4") _,
            out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            out("x10") _, out("x11") _, out("x12") _, out("x13") _, out("x14") _,
            out("x15") _, out("x16") _, out("x17") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// The signal storm: refills and direct fills under timer signals, with a scan of the dead
/// stack below the reads after every batch.
pub(crate) fn signal_storm() {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    use std::sync::atomic::Ordering::Relaxed;

    // SAFETY: a handler that only increments an atomic.
    unsafe { signals::on_signal(libc::SIGUSR2, count_signal, libc::SA_RESTART) };
    let timer = ThreadTimer::start(libc::SIGUSR2, STORM_INTERVAL_NS);

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
        clear_test_registers();
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
    // Optimised x86-64 builds scrub less stack than a signal frame takes, and an AArch64
    // signal frame keeps its registers about 4.4 KiB below the interrupted stack pointer,
    // deeper than any build scrubs: frames reach below the scrubbed area and must have been
    // found there.
    if cfg!(any(
        all(target_arch = "x86_64", not(debug_assertions)),
        target_arch = "aarch64"
    )) {
        assert!(
            wiped > 0,
            "no signal frame was found below a keystream computation"
        );
    }
    // Signal frames are wiped on x86-64 and AArch64 Linux; elsewhere what they leave is the
    // documented residue (docs/SECURITY.md), reported above and not a failure.
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(
            findings.key_words == 0 && findings.clusters == 0,
            "old key material in dead stack after {} batches (key words) and {} (clusters)",
            findings.key_words,
            findings.clusters
        );
    }
}
