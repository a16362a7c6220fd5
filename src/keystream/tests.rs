//! Unit tests of the keystream: every kernel and path against the `chacha20` crate, the
//! kernels each path runs, and the depth of the scrub.

use super::*;
use crate::probe::hooks::KERNEL_CALLS;

/// [`write_bytes_below`] in a scrubbed callee.
fn write_bytes(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    scrub::below(|| write_bytes_below(key, counter, out));
}

fn reference(key: &[u8; KEY_LEN], counter: u64, blocks: usize) -> Vec<Block> {
    let mut out = vec![[0u8; BLOCK_LEN]; blocks];
    with_crate(key, counter, &mut out);
    out
}

/// Keys and starting counters for the kernel tests: counter 0 (refills), small ones,
/// and the highest that still fits below 2^32.
#[cfg(target_arch = "x86_64")]
fn kernel_cases() -> impl Iterator<Item = ([u8; KEY_LEN], u64)> {
    (0..32u8).map(|round| {
        let key: [u8; KEY_LEN] = core::array::from_fn(|i| round.wrapping_mul(29) ^ i as u8);
        let counter = [0u64, 16, 1 << 20, (1 << 32) - 32][usize::from(round % 4)];
        (key, counter)
    })
}

/// Each x86-64 assembly kernel: its name, whether this CPU has it, its functions.
#[cfg(target_arch = "x86_64")]
fn assembly_kernels() -> [(
    &'static str,
    bool,
    dispatch::Keystream,
    dispatch::RefillAndBlock,
); 3] {
    [
        (
            "AVX-512",
            avx512::detected(),
            avx512::keystream,
            avx512::refill_and_block,
        ),
        (
            "AVX2",
            avx2::detected(),
            avx2::keystream,
            avx2::refill_and_block,
        ),
        (
            "SSE2",
            sse2::detected(),
            sse2::keystream,
            sse2::refill_and_block,
        ),
    ]
}

/// The assembly kernels this CPU has, for every block count 1..=40 and counters whose lanes
/// carry into the high word or wrap at 2^64: the crate's blocks, nothing written past them,
/// and a refill whose output starts at its key.
#[cfg(target_arch = "x86_64")]
#[test]
fn assembly_kernels_match_the_chacha20_crate() {
    for (name, detected, keystream, rider) in assembly_kernels() {
        if !detected {
            eprintln!("{name} kernel: not available on this CPU");
            continue;
        }
        for (i, (key, _)) in kernel_cases().enumerate() {
            let counters = [
                0,
                16,
                (1 << 32) - 7,
                (1 << 32) - 16,
                u64::MAX - 20,
                u64::MAX,
            ];
            let counter = counters[i % counters.len()];
            for blocks in 1..=40 {
                let mut got = vec![[0xa5u8; BLOCK_LEN]; blocks + 1];
                // SAFETY: detected above; `got` holds `blocks` + 1 blocks.
                unsafe { keystream(key.as_ptr(), counter, got.as_mut_ptr().cast(), blocks) };
                assert_eq!(
                    got[..blocks],
                    reference(&key, counter, blocks),
                    "{name} {counter} {blocks}"
                );
                assert_eq!(
                    got[blocks], [0xa5; BLOCK_LEN],
                    "{name}: wrote past {blocks} blocks"
                );
            }
            let mut state = [[0u8; BLOCK_LEN]; 16];
            state[0][..KEY_LEN].copy_from_slice(&key);
            let at = state.as_mut_ptr().cast::<u8>();
            // SAFETY: detected above; the state is 16 blocks with the key first.
            unsafe { keystream(at, 0, at, 16) };
            assert_eq!(state.to_vec(), reference(&key, 0, 16), "{name} refill");
            state[0][..KEY_LEN].copy_from_slice(&key);
            let mut extra = [0u8; BLOCK_LEN];
            // SAFETY: as above, and `extra` is one block outside the state.
            unsafe { rider(at, counter, at, extra.as_mut_ptr()) };
            assert_eq!(
                state.to_vec(),
                reference(&key, 0, 16),
                "{name} rider's refill"
            );
            assert_eq!(
                extra,
                reference(&key, counter, 1)[0],
                "{name} rider {counter}"
            );
        }
    }
}

/// Paints the 4 KiB below the stack pointer, calls the kernel at address `kernel` with
/// `(key, 5, out, last)` (System V), and returns how many 8-byte words of the painted area
/// changed and the offset of the lowest (from the stack pointer at the call).
///
/// # Safety
/// `kernel` is one of the assembly kernels and the arguments meet its contract.
#[cfg(all(target_arch = "x86_64", not(miri)))]
unsafe fn painted_stack_after(
    kernel: usize,
    key: *const u8,
    out: *mut u8,
    last: usize,
) -> (usize, isize) {
    let (changed, lowest): (usize, isize);
    // SAFETY: the block writes only below the stack pointer (no `nostack`: the compiler keeps
    // nothing there), calls the kernel as its System V signature says (its clobbers declared)
    // with a 32-byte key and 40 blocks of output; the caller has checked its instruction set.
    unsafe {
        core::arch::asm!(
            "mov r8, -4096",
            "2:",
            "mov qword ptr [rsp + r8], r12",
            "add r8, 8",
            "jnz 2b",
            "call {keystream}",
            "xor r13d, r13d",
            "xor r14d, r14d",
            "mov r8, -4096",
            "3:",
            "cmp qword ptr [rsp + r8], r12",
            "je 4f",
            "inc r13",
            "test r14, r14",
            "cmovz r14, r8",
            "4:",
            "add r8, 8",
            "jnz 3b",
            keystream = in(reg) kernel,
            in("rdi") key,
            in("rsi") 5u64,
            in("rdx") out,
            in("rcx") last,
            in("r12") 0x5a5a_5a5a_5a5a_5a5au64,
            out("r13") changed,
            out("r14") lowest,
            clobber_abi("sysv64"),
        );
    }
    (changed, lowest)
}

/// The assembly kernels write nothing to the stack: of the painted 4 KiB below the caller's
/// stack pointer only the call's return address changes.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[test]
fn assembly_kernels_write_no_stack() {
    for (name, detected, keystream, rider) in assembly_kernels() {
        if !detected {
            eprintln!("{name} kernel: not available on this CPU");
            continue;
        }
        let key = [0x3d; KEY_LEN];
        let mut out = vec![[0u8; BLOCK_LEN]; 40];
        let at = out.as_mut_ptr().cast::<u8>();
        // SAFETY: the kernel's instruction set was detected; a 32-byte key and 40 blocks of
        // output.
        let painted = unsafe { painted_stack_after(keystream as usize, key.as_ptr(), at, 40) };
        assert_eq!(painted, (1, -8), "{name} keystream");
        assert_eq!(out, reference(&key, 5, 40), "{name}");
        let mut state = [[0u8; BLOCK_LEN]; 17];
        state[0][..KEY_LEN].copy_from_slice(&key);
        let at = state.as_mut_ptr().cast::<u8>();
        // SAFETY: as above: the refill over the key, then the extra block, 17 blocks in all.
        let painted = unsafe { painted_stack_after(rider as usize, at, at, at as usize + 1024) };
        assert_eq!(painted, (1, -8), "{name} refill and block");
        let mut want = reference(&key, 0, 16);
        want.extend(reference(&key, 5, 1));
        assert_eq!(state[..], want[..], "{name}");
    }
}

/// Direct fills of every tail length, with a rider or without, against the crate.
#[test]
fn direct_fills_match_the_crate_for_every_tail_length() {
    let key = [0x6b; KEY_LEN];
    let want = reference(&key, 0, 16 + 40);
    let lengths = (0..=2200)
        .step_by(9)
        .chain([1, 64, 65, 512, 513, 577, 1025, 1089]);
    for len in lengths {
        let mut blocks = [[0u8; BLOCK_LEN]; 16];
        blocks[0][..KEY_LEN].copy_from_slice(&key);
        let mut dest = vec![0u8; 992 + len];
        direct_fill_in_place(&mut blocks, &mut dest);
        assert_eq!(blocks[..], want[..16], "refill, length {len}");
        assert_eq!(
            dest[992..],
            want[16..].as_flattened()[..len],
            "length {len}"
        );
    }
}

#[test]
fn write_bytes_matches_the_crate_for_every_tail_length() {
    let key = [0x5c; KEY_LEN];
    let reference_bytes = reference(&key, 3, 40).as_flattened().to_vec();
    for len in (0..=1200)
        .step_by(7)
        .chain([512, 513, 575, 576, 1024, 2559, 2560])
    {
        let mut got = vec![0u8; len];
        write_bytes(&key, 3, &mut got);
        assert_eq!(got[..], reference_bytes[..len], "length {len}");
    }
}

/// Runs `f` on a thread whose 64 KiB stack (the support crate's painted stack, above a
/// guard page) and returns how many bytes below the address `f` returns were written: the
/// depth of the deepest frame that `f`'s callees reached below it.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn deepest_below(f: fn() -> usize) -> usize {
    use fkrng_test_support::stack::PaintedStack;
    // 64 KiB, or the C library's minimum where that is larger (128 KiB on AArch64).
    let stack = PaintedStack::new((64 << 10).max(libc::PTHREAD_STACK_MIN));
    struct Job {
        f: fn() -> usize,
        top: usize,
    }
    extern "C" fn run(job: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `job` is the `Job` that `deepest_below` passed and outlives the thread.
        let job = unsafe { &mut *job.cast::<Job>() };
        job.top = (job.f)();
        core::ptr::null_mut()
    }
    let mut job = Job { f, top: 0 };
    // SAFETY: the painted stack is handed to one thread, joined before it is read and
    // unmapped; `job` outlives the thread.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        assert_eq!(libc::pthread_attr_init(&mut attr), 0);
        assert_eq!(
            libc::pthread_attr_setstack(&mut attr, stack.stack(), stack.size()),
            0
        );
        // (An integer on glibc, a pointer on musl: zeroed either way.)
        let mut thread: libc::pthread_t = core::mem::zeroed();
        let job_ptr = (&raw mut job).cast();
        assert_eq!(libc::pthread_create(&mut thread, &attr, run, job_ptr), 0);
        assert_eq!(libc::pthread_join(thread, core::ptr::null_mut()), 0);
        libc::pthread_attr_destroy(&mut attr);
    }
    let lowest = stack.stack() as usize + stack.size() - stack.used();
    job.top - lowest
}

/// About the stack pointer of the function that calls this: the address of a local
/// (callers keep their buffers on the heap, so that nothing of theirs lies below it).
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[inline(always)]
fn here() -> usize {
    let marker = 0u8;
    core::hint::black_box(&raw const marker) as usize
}

/// The scrub reaches deeper than every keystream computation of this build and CPU: a
/// refill, direct fills (with a rider, and remainders of every kind) and the `chacha20`
/// crate alone, each measured on a painted stack, plus the red zone and signal-frame
/// alignment below it.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn scrub_covers_the_deepest_keystream_frame() {
    // Where the selected row has an assembly kernel, production takes neither computation
    // measured here and scrubs nothing; its kernels' painted-stack tests stand instead.
    if dispatch::selected().kernel.is_some() {
        eprintln!(
            "skipped: the {} path's kernel writes no stack",
            keystream_path()
        );
        return;
    }
    #[inline(never)]
    fn refill() -> usize {
        let mut blocks = Box::new([[0x3cu8; BLOCK_LEN]; 16]);
        let top = here();
        refill_below(core::hint::black_box(&mut blocks));
        top
    }
    #[inline(never)]
    fn direct() -> usize {
        let mut blocks = Box::new([[0x3cu8; BLOCK_LEN]; 16]);
        let mut out = vec![0u8; 40 * BLOCK_LEN + 17];
        let top = here();
        // One block past whole passes (a rider on x86-64's paths), remainders
        // of 4, 9, 15 and 31 blocks, and every path's whole passes.
        for len in [
            1,
            3 * BLOCK_LEN + 5,
            8 * BLOCK_LEN + 1,
            30 * BLOCK_LEN + 5,
            out.len(),
        ] {
            direct_fill_unscrubbed(&mut blocks, core::hint::black_box(&mut out[..len]));
        }
        top
    }
    #[inline(never)]
    fn crate_alone() -> usize {
        let mut out = vec![[0u8; BLOCK_LEN]; 16];
        let top = here();
        with_crate(&[0x3c; KEY_LEN], 0, core::hint::black_box(&mut out));
        top
    }
    let margin = 128 + 64;
    // The crate runs only where the small-stack code does not.
    let depths = [
        ("refill", refill as fn() -> usize),
        ("direct fill", direct),
        ("chacha20 crate", crate_alone),
    ]
    .map(|(name, f)| (name, deepest_below(f)));
    let depths = &depths[..if small_stack::IN_USE { 2 } else { 3 }];
    for &(name, depth) in depths {
        eprintln!(
            "{name}: {depth} bytes below the caller; scrub {} bytes",
            scrub::SCRUB_BYTES
        );
    }
    for &(name, depth) in depths {
        assert!(depth > 0, "{name}: nothing measured");
        assert!(
            depth + margin <= scrub::SCRUB_BYTES,
            "{name}: {depth} + {margin} bytes > scrub of {}",
            scrub::SCRUB_BYTES
        );
    }
}

/// The small-stack block function against the crate, whether or not this build uses it.
#[test]
fn small_stack_matches_the_chacha20_crate() {
    let key: [u8; KEY_LEN] = core::array::from_fn(|i| (i as u8).wrapping_mul(77) ^ 0x1d);
    for counter in [0u64, 5, (1 << 32) - 2, u64::MAX - 1] {
        for len in [1usize, 63, 64, 65, 200, 1024] {
            let mut got = vec![0u8; len];
            small_stack::write(&key, counter, &mut got);
            let want = reference(&key, counter, len.div_ceil(BLOCK_LEN));
            assert_eq!(got[..], want.as_flattened()[..len], "{counter} {len}");
        }
    }
}

/// Which kernels ran: a refill, a 100-byte fill (a two-block tail) and a direct fill of
/// 1,025 bytes past the refill (its sixteen whole blocks, then a refill with a rider) call
/// exactly the kernels of the path this build reports, and no other.
#[test]
fn the_kernels_that_ran_are_those_of_the_reported_path() {
    let key = [0x3c; KEY_LEN];
    KERNEL_CALLS.set([0; 2]);
    let mut blocks = [[0u8; BLOCK_LEN]; 16];
    blocks[0][..KEY_LEN].copy_from_slice(&key);
    refill_in_place(&mut blocks);
    let mut tail = [0u8; 100];
    write_bytes(&key, 0, &mut tail);
    direct_fill_in_place(&mut blocks, &mut [0; 992 + 16 * BLOCK_LEN + 1]);
    let expected = match keystream_path() {
        // The assembly kernels (on x86-64's portable path, SSE2, except under Miri): the
        // refill and the direct fill's sixteen whole blocks, then its refill with the last
        // byte riding along; the byte fill takes the crate.
        KeystreamPath::Avx512 | KeystreamPath::Avx2 => [2, 1],
        KeystreamPath::Portable if cfg!(all(target_arch = "x86_64", not(miri))) => [2, 1],
        // The NEON kernel: the refill, the sixteen blocks, the last byte, the refill.
        KeystreamPath::Portable if cfg!(all(target_arch = "aarch64", target_feature = "neon")) => {
            [4, 0]
        }
        KeystreamPath::Portable | KeystreamPath::SmallStack => [0; 2],
    };
    assert_eq!(KERNEL_CALLS.get(), expected, "{}", keystream_path());
}

/// The path the unit tests ran on is the one the CI run asked for: the build's pin, or
/// `FKRNG_EXPECT_KEYSTREAM` (for unpinned builds run under an emulated CPU model).
#[test]
fn keystream_path_is_the_expected_one() {
    let path = keystream_path();
    assert_eq!(path.to_string(), path.name());
    if let Some(pin) = PINNED {
        assert_eq!(path, pin, "pinned build");
    }
    match std::env::var("FKRNG_EXPECT_KEYSTREAM") {
        Ok(expected) => assert_eq!(path.name(), expected, "FKRNG_EXPECT_KEYSTREAM"),
        Err(_) => eprintln!("keystream path {path} (FKRNG_EXPECT_KEYSTREAM not set)"),
    }
}

#[test]
fn refill_in_place_is_keystream_0_to_16_of_the_old_key() {
    let key = [0x17; KEY_LEN];
    let mut blocks = [[0u8; BLOCK_LEN]; 16];
    blocks[0][..KEY_LEN].copy_from_slice(&key);
    refill_in_place(&mut blocks);
    assert_eq!(blocks.to_vec(), reference(&key, 0, 16));
}

/// Pattern words loaded into the callee-saved registers before a probed call.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
fn patterns<const N: usize>() -> [u64; N] {
    core::array::from_fn(|i| 0x5eed_0000_0000_0000 ^ (i as u64 + 1).wrapping_mul(0x0101_0101_0101))
}

/// Calls `f` with [`patterns`] in every register the target's C ABI makes callee-saved (the
/// general ones first, then the callee-saved halves of vector registers as 64-bit words,
/// low first) and returns the words loaded and what each register holds when `f` returns.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn callee_saved_across(f: extern "C" fn()) -> (Vec<u64>, Vec<u64>) {
    // System V: rbx, rbp, r12-r15. Windows x64 adds rsi, rdi and xmm6-xmm15 whole.
    #[cfg(windows)]
    macro_rules! windows {
        ($text:literal) => {
            $text
        };
    }
    #[cfg(not(windows))]
    macro_rules! windows {
        ($text:literal) => {
            ""
        };
    }
    const N: usize = if cfg!(windows) { 6 + 2 + 20 } else { 6 };
    let mut words = patterns::<N>();
    // SAFETY: the block saves rbx and rbp (and the pointer, in rax) and restores them, names
    // every other register it loads as an output, keeps the stack 16-byte aligned with 32 bytes of shadow space
    // at the call, and `words` holds the N words it reads and writes.
    unsafe {
        core::arch::asm!(
            "push rbx", "push rbp", "push rax", "sub rsp, 40",
            "mov rbx, [rax]", "mov rbp, [rax + 8]", "mov r12, [rax + 16]",
            "mov r13, [rax + 24]", "mov r14, [rax + 32]", "mov r15, [rax + 40]",
            windows!("mov rsi, [rax + 48]\nmov rdi, [rax + 56]\nmovdqu xmm6, [rax + 64]
                movdqu xmm7, [rax + 80]\nmovdqu xmm8, [rax + 96]\nmovdqu xmm9, [rax + 112]
                movdqu xmm10, [rax + 128]\nmovdqu xmm11, [rax + 144]
                movdqu xmm12, [rax + 160]\nmovdqu xmm13, [rax + 176]
                movdqu xmm14, [rax + 192]\nmovdqu xmm15, [rax + 208]"),
            "call rcx",
            "mov rax, [rsp + 40]",
            "mov [rax], rbx", "mov [rax + 8], rbp", "mov [rax + 16], r12",
            "mov [rax + 24], r13", "mov [rax + 32], r14", "mov [rax + 40], r15",
            windows!("mov [rax + 48], rsi\nmov [rax + 56], rdi\nmovdqu [rax + 64], xmm6
                movdqu [rax + 80], xmm7\nmovdqu [rax + 96], xmm8\nmovdqu [rax + 112], xmm9
                movdqu [rax + 128], xmm10\nmovdqu [rax + 144], xmm11
                movdqu [rax + 160], xmm12\nmovdqu [rax + 176], xmm13
                movdqu [rax + 192], xmm14\nmovdqu [rax + 208], xmm15"),
            "add rsp, 48", "pop rbp", "pop rbx",
            in("rax") words.as_mut_ptr(),
            in("rcx") f,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _, out("rsi") _, out("rdi") _,
            out("xmm6") _, out("xmm7") _, out("xmm8") _, out("xmm9") _, out("xmm10") _,
            out("xmm11") _, out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            clobber_abi("C"),
        );
    }
    (patterns::<N>().to_vec(), words.to_vec())
}

/// As the x86-64 form, for AAPCS64: x19-x29 and the low halves of v8-v15 (d8-d15).
#[cfg(all(target_arch = "aarch64", not(miri)))]
fn callee_saved_across(f: extern "C" fn()) -> (Vec<u64>, Vec<u64>) {
    const N: usize = 19;
    let mut words = patterns::<N>();
    // SAFETY: the block saves x19 and x29 (and the pointer, in x0) and restores them, names
    // every other register it loads as an output, keeps sp 16-byte aligned, and `words`
    // holds the 19 words it reads and writes.
    unsafe {
        core::arch::asm!(
            "stp x29, x30, [sp, #-16]!", "stp x19, x0, [sp, #-16]!",
            "ldp x19, x20, [x0]", "ldp x21, x22, [x0, #16]", "ldp x23, x24, [x0, #32]",
            "ldp x25, x26, [x0, #48]", "ldp x27, x28, [x0, #64]", "ldr x29, [x0, #80]",
            "ldp d8, d9, [x0, #88]", "ldp d10, d11, [x0, #104]",
            "ldp d12, d13, [x0, #120]", "ldp d14, d15, [x0, #136]",
            "blr x1",
            "ldr x0, [sp, #8]",
            "stp x19, x20, [x0]", "stp x21, x22, [x0, #16]", "stp x23, x24, [x0, #32]",
            "stp x25, x26, [x0, #48]", "stp x27, x28, [x0, #64]", "str x29, [x0, #80]",
            "stp d8, d9, [x0, #88]", "stp d10, d11, [x0, #104]",
            "stp d12, d13, [x0, #120]", "stp d14, d15, [x0, #136]",
            "ldp x19, x2, [sp], #16", "ldp x29, x30, [sp], #16",
            in("x0") words.as_mut_ptr(),
            in("x1") f,
            out("x20") _, out("x21") _, out("x22") _, out("x23") _, out("x24") _, out("x25") _,
            out("x26") _, out("x27") _, out("x28") _, out("v8") _, out("v9") _, out("v10") _,
            out("v11") _, out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            clobber_abi("C"),
        );
    }
    (patterns::<N>().to_vec(), words.to_vec())
}

/// Every `asm!` block of the keystream, run as a call of its own (the kernels' blocks inside
/// a refill and a direct fill with a rider): a value held across it in each register the target's C ABI makes
/// callee-saved is still there, which holds only if each block names every register it
/// writes.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
#[test]
fn asm_blocks_keep_callee_saved_registers() {
    extern "C" fn refill() {
        let mut blocks = [[0x3cu8; BLOCK_LEN]; 16];
        refill_in_place(core::hint::black_box(&mut blocks));
    }
    extern "C" fn direct_fill() {
        let mut blocks = [[0x3cu8; BLOCK_LEN]; 16];
        let mut rest = [0u8; 17 * BLOCK_LEN + 1];
        direct_fill_in_place(&mut blocks, core::hint::black_box(&mut rest));
    }
    let probes: [(&str, extern "C" fn()); 2] = [("refill", refill), ("direct fill", direct_fill)];
    let words = if cfg!(windows) {
        28
    } else if cfg!(target_arch = "x86_64") {
        6
    } else {
        19
    };
    for (name, f) in probes {
        let (loaded, after) = callee_saved_across(f);
        assert_eq!(loaded.len(), words);
        assert_eq!(after, loaded, "{name}");
    }
}
