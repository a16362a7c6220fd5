//! The scenarios the residue tests run: reads of a seeded generator with a scan after each
//! group, a thread-local destructor's one-off read, a vDSO seed, signal storms during
//! refills and direct fills (on the reading stack and on an alternate stack), and reads in
//! handlers on alternate stacks with little room.

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

/// Whose reads [`check_no_old_key_after`] makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// A boxed `FkeRng`, seeded with a seed drawn at run time.
    Seeded,
    /// The thread-local generator (`fkrng::fill`), on a thread of its own whose buffer is
    /// run dry first (so its reads begin with a refill or a direct fill); the key they begin
    /// under is found in the thread's state (see [`Evidence::find_snapshot_key`]). The first
    /// group must serve at least 16 bytes under that key.
    ThreadLocal,
}

/// Makes the reads of each group in turn (their lengths in bytes) through `reader`, and
/// after each group scans the process's writable memory for every key used so far except
/// the generator's current one, as 32 contiguous bytes and as a broadcast of any of its
/// words. Panics, listing every finding, if any is found, or if the bytes served are not
/// the keystream of the keys computed here.
pub(crate) fn check_no_old_key_after(reader: Reader, groups: &[Vec<usize>]) {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    let groups = groups.to_vec();
    match reader {
        Reader::Seeded => check_reads(reader, &groups),
        Reader::ThreadLocal => std::thread::spawn(move || check_reads(reader, &groups))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
    }
}

fn check_reads(reader: Reader, groups: &[Vec<usize>]) {
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
    let mut rng = None;
    match reader {
        Reader::Seeded => {
            evidence.draw_keys(batches.served.len());
            rng = Some(boxed_generator(&evidence.keys[0]));
        }
        Reader::ThreadLocal => {
            // The state set up and its buffer run dry: a first read refills, and the rest
            // of the buffer is taken.
            let mut first = [0u8; BUFFER_LEN];
            fkrng::fill(&mut first[..1]);
            fkrng::fill(&mut first[1..]);
            let (start, end) = fkrng::test_hooks::memory::state_range().expect("a state");
            evidence.snapshot(start..end);
        }
    }
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
                match &mut rng {
                    Some(rng) => rng.fill(read),
                    None => fkrng::fill(read),
                }
                now = later;
            }
        });
        if reader == Reader::ThreadLocal && scan == 0 {
            evidence.find_snapshot_key(&now[..batches.served[0].min(32)]);
            evidence.derive_keys(batches.served.len());
        }
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
        "keystream path {}: {} keystream batches, {} bytes served, {} scans ({} KiB read): {} \
         copies of old keys found",
        fkrng::keystream_path(),
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

/// A new thread's seed as the vDSO's `getrandom` hands it out (where fkrng uses it), and a
/// scan for any 8-byte piece of it once the thread has wiped its copy and exited: the
/// vDSO computes on the caller's stack and keeps a state of its own, so a copy of a seed
/// in its frames or state would give the thread's first key (the seed XOR a diversifier of
/// clocks and counters). The needle is kept masked: the test holds `seed ⊕ mask` and
/// `mask`, never the seed. Returns the pieces found (addresses) and whether the vDSO
/// served the seed.
pub(crate) fn vdso_seed() -> (Vec<usize>, bool) {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    // The process's first seed is the system call's; later new threads' come from the vDSO.
    let _: [u8; 1] = fkrng::array();
    let mask: [u8; 36] = fkrng::array();
    let (masked, from_vdso) = std::thread::spawn(move || {
        let fills = fkrng::test_hooks::counters::vdso_fills();
        let mut seed = [0u8; 36];
        fkrng::test_hooks::os::fill_as_new_thread(&mut seed).expect("a seed");
        let from_vdso = fkrng::test_hooks::counters::vdso_fills() - fills == 1;
        let mut masked = [0u8; 36];
        for ((m, s), k) in masked.iter_mut().zip(&seed).zip(&mask) {
            *m = s ^ k;
        }
        zeroize::Zeroize::zeroize(&mut seed);
        black_box(&seed);
        (masked, from_vdso)
    })
    .join()
    .unwrap();
    clear_test_registers();
    let mut buf = vec![0u8; SCAN_CHUNK];
    let own = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut found = Vec::new();
    scan_writable_memory(&mut buf, own, |_, at, bytes| {
        for i in 0..bytes.len().saturating_sub(7) {
            let window = &bytes[i..i + 8];
            if window == [0; 8] {
                continue;
            }
            for piece in 0..4 {
                let at_piece = piece * 8;
                if (0..8).all(|j| window[j] ^ mask[at_piece + j] == masked[at_piece + j]) {
                    found.push(at + i);
                }
            }
        }
    });
    (found, from_vdso)
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

/// Clears the vector registers and the caller-saved general ones, which the test's own
/// code (computing and checking each batch's key, and the C library's `memmove` copying it,
/// which uses `ymm16` and up on CPUs with AVX-512) leaves holding the next batch's key
/// words: a signal that arrived in the next batch before fkrng's own code clears them would
/// save them in a frame below the reads or on the alternate stack, and the scan would count
/// the test's copy as fkrng's. On x86-64, all 32 AVX-512 registers where the CPU has them,
/// else all 16 whole AVX or SSE registers.
#[inline(never)]
fn clear_test_registers() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            unsafe { clear_zmm() };
        } else if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX.
            unsafe { clear_ymm() };
        }
        // SAFETY: registers only, each declared clobbered.
        unsafe {
            std::arch::asm!(
                "pxor xmm0, xmm0", "pxor xmm1, xmm1", "pxor xmm2, xmm2", "pxor xmm3, xmm3",
                "pxor xmm4, xmm4", "pxor xmm5, xmm5", "pxor xmm6, xmm6", "pxor xmm7, xmm7",
                "pxor xmm8, xmm8", "pxor xmm9, xmm9", "pxor xmm10, xmm10", "pxor xmm11, xmm11",
                "pxor xmm12, xmm12", "pxor xmm13, xmm13", "pxor xmm14, xmm14", "pxor xmm15, xmm15",
                "xor eax, eax", "xor ecx, ecx", "xor edx, edx", "xor esi, esi", "xor edi, edi",
                "xor r8d, r8d", "xor r9d, r9d", "xor r10d, r10d", "xor r11d, r11d",
                out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _,
                out("r8") _, out("r9") _, out("r10") _, out("r11") _,
                out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                options(nomem, nostack, preserves_flags),
            );
        }
    }
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

/// Clears all 32 AVX-512 registers whole.
///
/// # Safety
/// Only on a CPU with AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn clear_zmm() {
    // SAFETY: AVX-512F is present (the caller's contract); registers only.
    unsafe {
        std::arch::asm!(
            "vzeroall",
            "vpxord zmm16, zmm16, zmm16", "vpxord zmm17, zmm17, zmm17",
            "vpxord zmm18, zmm18, zmm18", "vpxord zmm19, zmm19, zmm19",
            "vpxord zmm20, zmm20, zmm20", "vpxord zmm21, zmm21, zmm21",
            "vpxord zmm22, zmm22, zmm22", "vpxord zmm23, zmm23, zmm23",
            "vpxord zmm24, zmm24, zmm24", "vpxord zmm25, zmm25, zmm25",
            "vpxord zmm26, zmm26, zmm26", "vpxord zmm27, zmm27, zmm27",
            "vpxord zmm28, zmm28, zmm28", "vpxord zmm29, zmm29, zmm29",
            "vpxord zmm30, zmm30, zmm30", "vpxord zmm31, zmm31, zmm31",
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
            out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
            out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
            out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _,
            out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Clears the 16 AVX registers whole.
///
/// # Safety
/// Only on a CPU with AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn clear_ymm() {
    // SAFETY: AVX is present (the caller's contract); registers only.
    unsafe {
        std::arch::asm!(
            "vzeroall",
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
            out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
            out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// What a signal storm on the reading stack found: batches interrupted by a signal (their
/// signal frames may hold the registers of the keystream computation), batches after which
/// none came since the one before began (nothing but fkrng's own frames and scrub was
/// written below the reads since the last signal frame that could hold this batch's key:
/// the batch before computed it), and the other batches (a signal came during the batch
/// before only).
pub(crate) struct SignalStorm {
    pub(crate) interrupted: StormFindings,
    pub(crate) quiet: StormFindings,
    pub(crate) after_interrupted: StormFindings,
    /// Signals the handler ran.
    pub(crate) signals: usize,
}

impl SignalStorm {
    pub(crate) fn batches(&self) -> usize {
        self.interrupted.batches + self.quiet.batches + self.after_interrupted.batches
    }
}

/// The signal storm: refills and direct fills under timer signals (blocked during half of
/// the batches, two in a row), with a scan of the dead stack below the reads after every
/// batch for the key the batch ran under; the findings are kept apart by whether a signal
/// came during the batch or the one before.
pub(crate) fn signal_storm() -> SignalStorm {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    use std::sync::atomic::Ordering::Relaxed;

    // SAFETY: a handler that only increments an atomic.
    unsafe { signals::on_signal(libc::SIGUSR2, count_signal, libc::SA_RESTART) };
    let signals_before = STORM_SIGNALS.load(Relaxed);
    let timer = ThreadTimer::start(libc::SIGUSR2, STORM_INTERVAL_NS);

    let mut evidence = Evidence::new();
    evidence.draw_keys(1);
    let mut rng = boxed_generator(&evidence.keys[0]);
    scrub_stack_below();
    let mut served = vec![0u8; 1100];
    let mut storm = SignalStorm {
        interrupted: StormFindings::default(),
        quiet: StormFindings::default(),
        after_interrupted: StormFindings::default(),
        signals: 0,
    };
    let (mut batches, mut interrupted) = (0, 0);
    let mut previous_interrupted = false;
    while batches < STORM_MIN_BATCHES
        || interrupted < STORM_MIN_INTERRUPTED && batches < STORM_MAX_BATCHES
    {
        // A refill (a 1-byte read, then the other 991 bytes) or a direct fill of 1100 bytes;
        // the third and fourth of every four with the signal blocked, so that quiet batches
        // come in every build, however slow (a signal pending meanwhile is taken once the
        // batch is counted, in this frame).
        let refill = batches % 2 == 0;
        let len = if refill { BUFFER_LEN } else { 1100 };
        let control = batches % 4 >= 2;
        let mut frame = 0usize;
        if control {
            block_signal(libc::SIGUSR2, true);
        }
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
        let now_interrupted = STORM_SIGNALS.load(Relaxed) != before;
        if control {
            block_signal(libc::SIGUSR2, false);
        }
        interrupted += usize::from(now_interrupted);
        evidence.check_batch(0, &served[..len]);
        let findings = if now_interrupted {
            &mut storm.interrupted
        } else if previous_interrupted {
            &mut storm.after_interrupted
        } else {
            &mut storm.quiet
        };
        evidence.storm_scan(frame, findings);
        evidence.keys.copy_within(1..2, 0);
        evidence.chacha20_block(0, 0, Output::NextKey);
        previous_interrupted = now_interrupted;
        batches += 1;
    }
    drop(timer);
    storm.signals = STORM_SIGNALS.load(Relaxed) - signals_before;
    evidence.wipe();
    drop(rng);
    storm
}

/// An alternate signal stack of the calling thread: a mapping of `size` bytes that
/// `sigaltstack` names, above [`SENTINEL`] painted bytes and a `PROT_NONE` guard page, all
/// painted with [`PAINT`]. Dropping it disables the alternate stack (restoring none) and
/// unmaps it.
pub(crate) struct AltStack {
    mapping: *mut libc::c_void,
    /// `ss_sp`: the lowest byte of the alternate stack.
    pub(crate) base: usize,
    pub(crate) size: usize,
}

/// Bytes of painted memory kept between an [`AltStack`] and its guard page: a write below
/// the alternate stack changes them instead of killing the test.
pub(crate) const SENTINEL: usize = 16 << 10;

/// The paint of an [`AltStack`] and its sentinel bytes.
pub(crate) const PAINT: u8 = 0xa5;

const GUARD: usize = 4096;

impl AltStack {
    /// Maps, paints and installs an alternate signal stack of `size` bytes for the calling
    /// thread.
    pub(crate) fn install(size: usize) -> Self {
        // SAFETY: a fresh private anonymous mapping: its lowest page made inaccessible, the
        // rest painted, all within it; the alternate stack names part of it, and `Drop`
        // disables it before unmapping.
        unsafe {
            let mapping = libc::mmap(
                std::ptr::null_mut(),
                GUARD + SENTINEL + size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            assert_ne!(mapping, libc::MAP_FAILED, "mmap");
            assert_eq!(libc::mprotect(mapping, GUARD, libc::PROT_NONE), 0);
            let base = mapping as usize + GUARD + SENTINEL;
            mapping
                .cast::<u8>()
                .add(GUARD)
                .write_bytes(PAINT, SENTINEL + size);
            let stack = libc::stack_t {
                ss_sp: base as *mut libc::c_void,
                ss_flags: 0,
                ss_size: size,
            };
            assert_eq!(libc::sigaltstack(&stack, std::ptr::null_mut()), 0);
            AltStack {
                mapping,
                base,
                size,
            }
        }
    }

    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        self.base..self.base + self.size
    }

    /// Whether the alternate stack still holds its paint whole (the sentinel bytes below it
    /// not looked at).
    pub(crate) fn untouched(&self) -> bool {
        // SAFETY: the alternate stack, within the mapping, with no handler running on it
        // (the caller's thread runs off it, with its signals blocked).
        let stack = unsafe { std::slice::from_raw_parts(self.base as *const u8, self.size) };
        stack.iter().all(|&b| b == PAINT)
    }

    /// Paints the alternate stack again (not the sentinel bytes below it).
    pub(crate) fn repaint(&self) {
        // SAFETY: the alternate stack, within the mapping, with no handler running on it
        // (the caller's thread runs here, off it, and its signals are blocked or arrive
        // after this).
        unsafe { (self.base as *mut u8).write_bytes(PAINT, self.size) };
    }

    /// The lowest byte of the sentinel bytes and the alternate stack that is no longer the
    /// paint, as bytes below the alternate stack's base (0 if none below it), and as bytes
    /// above it otherwise (`Err`).
    pub(crate) fn lowest_write(&self) -> Result<usize, usize> {
        let start = self.base - SENTINEL;
        let untouched = (0..SENTINEL + self.size)
            // SAFETY: within the painted part of the mapping, no handler running on it.
            .take_while(|&i| unsafe { ((start + i) as *const u8).read_volatile() } == PAINT)
            .count();
        if untouched < SENTINEL {
            Ok(SENTINEL - untouched)
        } else {
            Err(untouched - SENTINEL)
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: disables the calling thread's alternate stack (it runs off it), then
        // unmaps the mapping made in `install`.
        unsafe {
            let off = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            assert_eq!(libc::sigaltstack(&off, std::ptr::null_mut()), 0);
            libc::munmap(self.mapping, GUARD + SENTINEL + self.size);
        }
    }
}

/// Blocks (`true`) or unblocks `signal` for the calling thread.
fn block_signal(signal: libc::c_int, block: bool) {
    // SAFETY: a signal set initialised by `sigemptyset`; the old mask is not wanted.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        assert_eq!(
            libc::pthread_sigmask(how, &set, std::ptr::null_mut()),
            0,
            "pthread_sigmask"
        );
    }
}

/// Takes `signal` if it is pending for the calling thread (which blocks it), without
/// running its handler.
fn drain_signal(signal: libc::c_int) {
    // SAFETY: a signal set initialised by `sigemptyset`; a zero timeout makes
    // `sigtimedwait` return at once; the signal's details are not wanted.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        libc::sigtimedwait(&set, std::ptr::null_mut(), &zero);
    }
}

/// The timer signal of the alternate-stack storm, whose handler runs on the alternate stack
/// (`SA_ONSTACK`), as a profiler's does.
pub(crate) const ALT_STORM_SIGNAL: libc::c_int = libc::SIGPROF;

/// Interval of the alternate-stack storm's timer: 20 µs.
pub(crate) const ALT_STORM_INTERVAL_NS: libc::c_long = 20_000;

/// Size of the alternate-stack storm's alternate signal stack.
pub(crate) const ALT_STORM_STACK: usize = 32 << 10;

/// Refills the alternate-stack storm runs at least.
pub(crate) const ALT_STORM_MIN_BATCHES: usize = 20_000;

/// Refills interrupted by a signal that the alternate-stack storm waits for, at least.
pub(crate) const ALT_STORM_MIN_INTERRUPTED: usize = 100;

/// Refills interrupted by a signal after which the alternate-stack storm stops before
/// [`ALT_STORM_MIN_BATCHES`] (emulated and unoptimised runs, whose refills take longer).
pub(crate) const ALT_STORM_ENOUGH_INTERRUPTED: usize = 2000;

/// Signals the alternate-stack storm's handler has run.
pub(crate) static ALT_STORM_SIGNALS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

pub(crate) extern "C" fn count_alt_signal(_: libc::c_int) {
    ALT_STORM_SIGNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// What the storm on an alternate signal stack found: refills interrupted by a signal taken
/// on the alternate stack, and refills no signal reached, which must leave the alternate
/// stack untouched (fkrng writes nothing there; only the kernel's frames and the handler
/// do).
pub(crate) struct AltStackStorm {
    pub(crate) interrupted: StormFindings,
    pub(crate) quiet: StormFindings,
    /// Refills no signal reached after which the alternate stack still held its paint whole.
    pub(crate) quiet_untouched: usize,
    /// Signals the handler ran.
    pub(crate) signals: usize,
}

/// The signal storm on an alternate signal stack: refills of a seeded generator under a
/// thread-directed timer whose handler runs with `SA_ONSTACK`; after every refill the
/// whole alternate stack is searched for the key the refill ran under and its block
/// function's words. The signal is blocked outside the refills and during every fourth
/// one (a signal pending then is taken with `sigtimedwait`, its handler not run), and the
/// signal count is read while it is blocked, so every frame on the alternate stack was
/// written during a refill counted as interrupted, holding fkrng's registers, not the
/// test's.
pub(crate) fn alt_stack_storm() -> AltStackStorm {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    use std::sync::atomic::Ordering::Relaxed;

    let alt = AltStack::install(ALT_STORM_STACK);
    // SAFETY: a handler that only increments an atomic.
    unsafe {
        signals::on_signal(
            ALT_STORM_SIGNAL,
            count_alt_signal,
            libc::SA_ONSTACK | libc::SA_RESTART,
        )
    };
    block_signal(ALT_STORM_SIGNAL, true);
    let signals_before = ALT_STORM_SIGNALS.load(Relaxed);
    let timer = ThreadTimer::start(ALT_STORM_SIGNAL, ALT_STORM_INTERVAL_NS);

    let mut evidence = Evidence::new();
    evidence.draw_keys(1);
    let mut rng = boxed_generator(&evidence.keys[0]);
    scrub_stack_below();
    let mut served = vec![0u8; BUFFER_LEN];
    let mut storm = AltStackStorm {
        interrupted: StormFindings::default(),
        quiet: StormFindings::default(),
        quiet_untouched: 0,
        signals: 0,
    };
    let (mut batches, mut interrupted) = (0, 0);
    while interrupted < ALT_STORM_ENOUGH_INTERRUPTED
        && (batches < ALT_STORM_MIN_BATCHES
            || interrupted < ALT_STORM_MIN_INTERRUPTED && batches < STORM_MAX_BATCHES)
    {
        drain_signal(ALT_STORM_SIGNAL);
        alt.repaint();
        let before = ALT_STORM_SIGNALS.load(Relaxed);
        clear_test_registers();
        // Every fourth refill keeps the signal blocked, so that quiet refills come in every
        // build, however slow.
        let control = batches % 4 == 3;
        if !control {
            block_signal(ALT_STORM_SIGNAL, false);
        }
        // A refill: a 1-byte read, then the other 991 bytes.
        let (one, rest) = served.split_at_mut(1);
        rng.fill(one);
        rng.fill(rest);
        block_signal(ALT_STORM_SIGNAL, true);
        let now_interrupted = ALT_STORM_SIGNALS.load(Relaxed) != before;
        interrupted += usize::from(now_interrupted);
        evidence.check_batch(0, &served);
        if now_interrupted {
            evidence.span_scan(alt.range(), &mut storm.interrupted);
        } else {
            storm.quiet_untouched += usize::from(alt.untouched());
            evidence.span_scan(alt.range(), &mut storm.quiet);
        }
        evidence.keys.copy_within(1..2, 0);
        evidence.chacha20_block(0, 0, Output::NextKey);
        batches += 1;
    }
    drop(timer);
    drain_signal(ALT_STORM_SIGNAL);
    storm.signals = ALT_STORM_SIGNALS.load(Relaxed) - signals_before;
    block_signal(ALT_STORM_SIGNAL, false);
    evidence.wipe();
    drop(rng);
    drop(alt);
    storm
}

/// The headroom test's signal, handled on the alternate stack.
pub(crate) const HEADROOM_SIGNAL: libc::c_int = libc::SIGURG;

/// Bytes above the alternate stack's base at which the headroom handler makes its read.
static HEADROOM: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The base of the headroom handler's alternate stack.
static HEADROOM_BASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The headroom handler's stack pointer where it made its read (an address in its frame).
static HEADROOM_AT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Frames of about 200 bytes until the stack pointer lies within 256 bytes above `target`,
/// then the read: a 992-byte read that finds one byte left in the buffer and refills.
#[inline(never)]
fn read_at(target: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut pad = [0u8; 160];
    let here = black_box(&raw mut pad) as usize;
    if here > target + 256 {
        read_at(target);
    } else {
        HEADROOM_AT.store(here, Relaxed);
        read_here();
    }
    black_box(&mut pad);
}

/// The headroom handler's read, in a frame of its own below [`read_at`]'s.
#[inline(never)]
fn read_here() {
    let mut out = [0u8; BUFFER_LEN];
    fkrng::fill(&mut out);
    black_box(&mut out);
}

extern "C" fn read_in_handler(_: libc::c_int) {
    use std::sync::atomic::Ordering::Relaxed;
    read_at(HEADROOM_BASE.load(Relaxed) + HEADROOM.load(Relaxed));
}

#[cfg(target_arch = "x86_64")]
fkrng_test_support::aligned_handler! {
    /// The headroom handler as installed on x86-64: [`read_in_handler`] with the stack
    /// pointer 16-byte aligned (qemu-x86_64 enters handlers on an alternate stack 8 bytes
    /// off, which the aligned vector stores of the read's code fault on).
    fn headroom_handler => read_in_handler
}

/// The headroom handler as installed elsewhere.
#[cfg(not(target_arch = "x86_64"))]
use read_in_handler as headroom_handler;

/// A refill in a handler on an alternate stack, with its read made `headroom` bytes above
/// the stack's base (on a thread of its own, with a fresh alternate stack): returns the
/// read's headroom as made (from its frame to the base) and the bytes written below the
/// alternate stack (`Ok`) or the bytes left untouched at its bottom (`Err`).
fn refill_with_headroom(headroom: usize) -> (usize, Result<usize, usize>) {
    read_on_alt_stack(64 << 10, headroom, false)
}

/// A 992-byte read in a handler on a fresh alternate stack of `size` bytes, made `headroom`
/// bytes above its base (at once where that is above the stack), on a thread of its own:
/// the thread's first read if `first_read` (its set-up in the handler, which the crate's
/// contract rules out), else a refill after a first read outside the handler. Returns as
/// [`refill_with_headroom`] does.
fn read_on_alt_stack(
    size: usize,
    headroom: usize,
    first_read: bool,
) -> (usize, Result<usize, usize>) {
    use std::sync::atomic::Ordering::Relaxed;
    std::thread::spawn(move || {
        let alt = AltStack::install(size);
        HEADROOM_BASE.store(alt.base, Relaxed);
        HEADROOM.store(headroom, Relaxed);
        if !first_read {
            // The thread's first read, then one byte left in the buffer.
            let mut first = [0u8; BUFFER_LEN - 1];
            fkrng::fill(&mut first);
        }
        // SAFETY: sends the signal, whose handler is installed, to the calling thread.
        assert_eq!(
            unsafe { libc::pthread_kill(libc::pthread_self(), HEADROOM_SIGNAL) },
            0
        );
        (HEADROOM_AT.load(Relaxed) - alt.base, alt.lowest_write())
    })
    .join()
    .unwrap()
}

/// A read on an alternate signal stack with little headroom: a handler (`SA_ONSTACK`)
/// refills with its read made closer and closer to the alternate stack's base, above
/// painted bytes and a guard page. Everything the read writes below its stack pointer is
/// part of its own frames (the computation's, and the scrub's zeroed array `SCRUB_BYTES`
/// deep), wherever it runs: with plenty of room those writes reach `R` bytes below the
/// read, and the read must keep within the stack at every headroom of `R` bytes or more,
/// so the first headroom of the sweep at which it writes below the base must be under `R`.
/// Returns `R` and the least headroom that kept within (tests/stack_use.rs measures the
/// whole of a handler's read on an alternate stack of `SIGSTKSZ` bytes).
pub(crate) fn alt_stack_headroom() -> (usize, usize) {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: the handler reads the thread-local generator, which is made for handlers,
    // on a thread that is not itself reading.
    unsafe { signals::on_signal(HEADROOM_SIGNAL, headroom_handler, libc::SA_ONSTACK) };
    // Plenty of room: how far below the read its writes reach.
    let (made, below) = refill_with_headroom(32 << 10);
    let reach = made - below.expect_err("writes below the alternate stack with 32 KiB of room");
    let mut fits = None;
    let mut headroom = reach + 256;
    while headroom >= 256 {
        let (made, below) = refill_with_headroom(headroom);
        match below {
            Err(_) => fits = Some(made),
            Ok(bytes) => {
                eprintln!(
                    "a refill made {made} bytes above the alternate stack's base wrote {bytes} \
                     bytes below it"
                );
                assert!(
                    made < reach,
                    "a refill made {made} bytes above the alternate stack's base wrote {bytes} \
                     bytes below it, though its writes reach {reach} bytes below the read with \
                     room to spare"
                );
                break;
            }
        }
        headroom -= 64;
    }
    signals::default_action(HEADROOM_SIGNAL);
    let fits = fits.expect("the read fits with its writes' full reach of headroom");
    (reach, fits)
}

/// A thread's first read made in a handler on an alternate stack of the size docs/SECURITY.md
/// says a handler's read fits: `SIGSTKSZ` bytes at opt-level 2 and 3 (8 KiB on x86-64,
/// 16 KiB on AArch64), 16 KiB at opt-level 1, `s` and `z`. The read is outside the crate's
/// contract (the set-up is not async-signal-safe); from an otherwise empty handler in
/// optimised builds the whole read still keeps within the stack: nothing is written below
/// its base. Also reports, from a sweep like [`alt_stack_headroom`]'s, the least headroom
/// such a read keeps within.
pub(crate) fn first_read_on_an_alternate_stack() {
    let _scan = MEMORY_SCAN.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: as in `alt_stack_headroom`; the handler's read is the thread's first, made
    // while the thread runs nothing else (no lock of the C library is held).
    unsafe { signals::on_signal(HEADROOM_SIGNAL, headroom_handler, libc::SA_ONSTACK) };
    let size = if cfg!(any(
        fkrng_opt_level = "1",
        fkrng_opt_level = "s",
        fkrng_opt_level = "z"
    )) {
        libc::SIGSTKSZ.max(16 << 10)
    } else {
        libc::SIGSTKSZ
    };
    let (made, below) = read_on_alt_stack(size, size, true);
    let mut fits = None;
    let mut headroom = made;
    while headroom >= 256 {
        match read_on_alt_stack(64 << 10, headroom, true) {
            (at, Err(_)) => fits = Some(at),
            (_, Ok(_)) => break,
        }
        headroom -= 64;
    }
    signals::default_action(HEADROOM_SIGNAL);
    eprintln!(
        "a thread's first read in a handler on a {size}-byte alternate stack, made {made} bytes \
         above its base: {below:?} (Ok: bytes written below the base; Err: bytes untouched at \
         its bottom); such a read keeps within the stack down to {fits:?} bytes of headroom"
    );
    if cfg!(debug_assertions) || !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return;
    }
    assert!(
        below.is_err(),
        "a first read in a handler on a {size}-byte alternate stack wrote {below:?} bytes below it"
    );
}
