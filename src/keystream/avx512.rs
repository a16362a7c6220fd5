//! The AVX-512F keystream kernel, in assembly: word `i` of sixteen consecutive blocks in
//! register `zmm<i>` (a pass is sixteen blocks), the key's eight words broadcast in
//! zmm16-zmm23, the lane counters in zmm24-zmm25 and zmm24-zmm31 free for the transpose.
//! Nothing is spilled: every write lands in a register or in `out`, so no build of this
//! crate (any optimisation level, debug or release) leaves a key-derived word on the stack.

/// Whether this CPU has AVX-512F and the OS saves its registers: all the kernel needs.
#[inline(always)]
pub(super) fn detected() -> bool {
    crate::cpuid::has(crate::cpuid::x86::AVX512F)
}

/// Lane offsets 0..16 (bytes 0..64), then 1 (64), then "expand 32-byte k" (68..84).
#[repr(C, align(64))]
struct Constants([u32; 21]);

static CONSTANTS: Constants = Constants([
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    1, //
    super::SIGMA[0],
    super::SIGMA[1],
    super::SIGMA[2],
    super::SIGMA[3],
]);

/// Four quarter rounds (RFC 8439, section 2.1) on the word registers named, step by step.
macro_rules! quarters {
    ($(($a:literal, $b:literal, $c:literal, $d:literal)),*) => { concat!(
        $("vpaddd zmm", $a, ", zmm", $a, ", zmm", $b, "\n",)*
        $("vpxord zmm", $d, ", zmm", $d, ", zmm", $a, "\n",)*
        $("vprold zmm", $d, ", zmm", $d, ", 16\n",)*
        $("vpaddd zmm", $c, ", zmm", $c, ", zmm", $d, "\n",)*
        $("vpxord zmm", $b, ", zmm", $b, ", zmm", $c, "\n",)*
        $("vprold zmm", $b, ", zmm", $b, ", 12\n",)*
        $("vpaddd zmm", $a, ", zmm", $a, ", zmm", $b, "\n",)*
        $("vpxord zmm", $d, ", zmm", $d, ", zmm", $a, "\n",)*
        $("vprold zmm", $d, ", zmm", $d, ", 8\n",)*
        $("vpaddd zmm", $c, ", zmm", $c, ", zmm", $d, "\n",)*
        $("vpxord zmm", $b, ", zmm", $b, ", zmm", $c, "\n",)*
        $("vprold zmm", $b, ", zmm", $b, ", 7\n",)*
    )};
}

/// Interleaves words `w..w + 4` in place: then zmm`w + k` holds those four words of blocks
/// `k`, `k + 4`, `k + 8` and `k + 12` in its four 128-bit lanes (zmm24-zmm27 are scratch).
macro_rules! interleave {
    ($w0:literal, $w1:literal, $w2:literal, $w3:literal) => {
        concat!(
            "vpunpckldq zmm24, zmm",
            $w0,
            ", zmm",
            $w1,
            "\nvpunpckhdq zmm25, zmm",
            $w0,
            ", zmm",
            $w1,
            "\nvpunpckldq zmm26, zmm",
            $w2,
            ", zmm",
            $w3,
            "\nvpunpckhdq zmm27, zmm",
            $w2,
            ", zmm",
            $w3,
            "\nvpunpcklqdq zmm",
            $w0,
            ", zmm24, zmm26\nvpunpckhqdq zmm",
            $w1,
            ", zmm24, zmm26\nvpunpcklqdq zmm",
            $w2,
            ", zmm25, zmm27\nvpunpckhqdq zmm",
            $w3,
            ", zmm25, zmm27\n",
        )
    };
}

/// Stores zmm`reg` as block `b` of the pass at `rdx` if the pass has `rcx > b` blocks left.
macro_rules! store {
    ($reg:literal, $b:literal) => {
        concat!(
            "cmp rcx, ",
            $b,
            "\njbe 4f\nvmovdqu64 zmmword ptr [rdx + 64 * ",
            $b,
            "], zmm",
            $reg,
            "\n4:\n",
        )
    };
}

/// Transposes the 128-bit lanes of zmm`k`, `k + 4`, `k + 8`, `k + 12` (interleaved) into
/// blocks `k`, `k + 4`, `k + 8` and `k + 12`, and stores those the pass has.
macro_rules! transpose_store {
    ($k:literal, $k4:literal, $k8:literal, $k12:literal) => {
        concat!(
            "vshufi32x4 zmm24, zmm",
            $k,
            ", zmm",
            $k4,
            ", 0x44\nvshufi32x4 zmm25, zmm",
            $k,
            ", zmm",
            $k4,
            ", 0xee\nvshufi32x4 zmm26, zmm",
            $k8,
            ", zmm",
            $k12,
            ", 0x44\nvshufi32x4 zmm27, zmm",
            $k8,
            ", zmm",
            $k12,
            ", 0xee\nvshufi32x4 zmm28, zmm24, zmm26, 0x88\nvshufi32x4 zmm29, zmm24, zmm26, 0xdd\n",
            "vshufi32x4 zmm30, zmm25, zmm27, 0x88\nvshufi32x4 zmm31, zmm25, zmm27, 0xdd\n",
            store!(28, $k),
            store!(29, $k4),
            store!(30, $k8),
            store!(31, $k12),
        )
    };
}

/// Loads the key words into zmm16-zmm23 and the constants' address into rax.
macro_rules! load_key {
    () => {
        concat!(
            "vpbroadcastd zmm16, dword ptr [rdi]\nvpbroadcastd zmm17, dword ptr [rdi + 4]\n",
            "vpbroadcastd zmm18, dword ptr [rdi + 8]\nvpbroadcastd zmm19, dword ptr [rdi + 12]\n",
            "vpbroadcastd zmm20, dword ptr [rdi + 16]\nvpbroadcastd zmm21, dword ptr [rdi + 20]\n",
            "vpbroadcastd zmm22, dword ptr [rdi + 24]\nvpbroadcastd zmm23, dword ptr [rdi + 28]\n",
            "lea rax, [rip + {constants}]\n",
        )
    };
}

/// Lane j's counter `rsi + j` in zmm24 (low words) and zmm25 (high words, plus the carry
/// of lanes whose low word wrapped); zmm26 and k1 are scratch.
macro_rules! counters {
    () => {
        concat!(
            "vpbroadcastd zmm26, esi\nvpaddd zmm24, zmm26, zmmword ptr [rax]\n",
            "vpcmpud k1, zmm24, zmm26, 1\nmov r9, rsi\nshr r9, 32\nvpbroadcastd zmm25, r9d\n",
            "vpaddd zmm25 {{k1}}, zmm25, dword ptr [rax + 64]{{1to16}}\n",
        )
    };
}

/// The input words of a pass: constants, key, counters (zmm24-zmm25), zero nonce.
macro_rules! pass_input {
    () => {
        concat!(
            "vpbroadcastd zmm0, dword ptr [rax + 68]\nvpbroadcastd zmm1, dword ptr [rax + 72]\n",
            "vpbroadcastd zmm2, dword ptr [rax + 76]\nvpbroadcastd zmm3, dword ptr [rax + 80]\n",
            "vmovdqa64 zmm4, zmm16\nvmovdqa64 zmm5, zmm17\nvmovdqa64 zmm6, zmm18\n",
            "vmovdqa64 zmm7, zmm19\nvmovdqa64 zmm8, zmm20\nvmovdqa64 zmm9, zmm21\n",
            "vmovdqa64 zmm10, zmm22\nvmovdqa64 zmm11, zmm23\nvmovdqa64 zmm12, zmm24\n",
            "vmovdqa64 zmm13, zmm25\nvpxord zmm14, zmm14, zmm14\nvpxord zmm15, zmm15, zmm15\n",
            "mov r8d, 10\n",
        )
    };
}

/// Columns, then diagonals (RFC 8439, section 2.3), of the pass.
macro_rules! pass_double_round {
    () => {
        concat!(
            quarters!((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)),
            quarters!((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)),
        )
    };
}

/// The feed-forward (input words added back; words 14 and 15 were zero), the transpose, the
/// stores, and the step to the next pass while blocks are left.
macro_rules! pass_output {
    () => {
        concat!(
            "vpaddd zmm0, zmm0, dword ptr [rax + 68]{{1to16}}\n",
            "vpaddd zmm1, zmm1, dword ptr [rax + 72]{{1to16}}\n",
            "vpaddd zmm2, zmm2, dword ptr [rax + 76]{{1to16}}\n",
            "vpaddd zmm3, zmm3, dword ptr [rax + 80]{{1to16}}\nvpaddd zmm4, zmm4, zmm16\n",
            "vpaddd zmm5, zmm5, zmm17\nvpaddd zmm6, zmm6, zmm18\nvpaddd zmm7, zmm7, zmm19\n",
            "vpaddd zmm8, zmm8, zmm20\nvpaddd zmm9, zmm9, zmm21\nvpaddd zmm10, zmm10, zmm22\n",
            "vpaddd zmm11, zmm11, zmm23\nvpaddd zmm12, zmm12, zmm24\nvpaddd zmm13, zmm13, zmm25\n",
            interleave!(0, 1, 2, 3),
            interleave!(4, 5, 6, 7),
            interleave!(8, 9, 10, 11),
            interleave!(12, 13, 14, 15),
            transpose_store!(0, 4, 8, 12),
            transpose_store!(1, 5, 9, 13),
            transpose_store!(2, 6, 10, 14),
            transpose_store!(3, 7, 11, 15),
            "add rsi, 16\nadd rdx, 1024\nsub rcx, 16\nja 2b\n",
        )
    };
}

/// Clears every register the kernels write: zmm0-zmm15 whole (`vzeroall`), zmm16-zmm31,
/// k1-k2 and the general registers, then returns.
macro_rules! clear_and_return {
    () => {
        concat!(
            "vpxord zmm16, zmm16, zmm16\nvpxord zmm17, zmm17, zmm17\nvpxord zmm18, zmm18, zmm18\n",
            "vpxord zmm19, zmm19, zmm19\nvpxord zmm20, zmm20, zmm20\nvpxord zmm21, zmm21, zmm21\n",
            "vpxord zmm22, zmm22, zmm22\nvpxord zmm23, zmm23, zmm23\nvpxord zmm24, zmm24, zmm24\n",
            "vpxord zmm25, zmm25, zmm25\nvpxord zmm26, zmm26, zmm26\nvpxord zmm27, zmm27, zmm27\n",
            "vpxord zmm28, zmm28, zmm28\nvpxord zmm29, zmm29, zmm29\nvpxord zmm30, zmm30, zmm30\n",
            "vpxord zmm31, zmm31, zmm31\nvzeroall\nkxorw k1, k1, k1\nkxorw k2, k2, k2\n",
            "xor eax, eax\nxor ecx, ecx\nxor edx, edx\nxor esi, esi\nxor edi, edi\nxor r8d, r8d\n",
            "xor r9d, r9d\nxor r10d, r10d\nxor r11d, r11d\nret\n",
        )
    };
}

/// Writes keystream blocks `counter .. counter + blocks` (64 bytes each; the 64-bit block
/// counter in words 12-13 wraps at 2^64; nonce words 14-15 zero) under the 32-byte key at
/// `key` (eight little-endian words) to `out[.. 64 * blocks]`: whole passes of sixteen, then
/// one that stores only the blocks asked for.
///
/// Every write lands in registers or in `out[.. 64 * blocks]`: no stack, no other memory
/// (the call's return address aside). The key is read before anything is stored, so `out`
/// may start at `key` (a refill). Every vector, mask and general register it writes is
/// caller-saved in the System V ABI, which the call declares clobbered, and is cleared
/// before it returns.
///
/// # Safety
/// `key` readable for 32 bytes, `out` writable for `64 * blocks` bytes, `blocks >= 1`, and
/// the CPU has AVX-512F ([`detected`]).
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn keystream(
    key: *const u8,
    counter: u64,
    out: *mut u8,
    blocks: usize,
) {
    // rdi: key, rsi: counter of the pass, rdx: its output, rcx: blocks left, rax: constants,
    // r8: double rounds left, r9: the counter's high word.
    core::arch::naked_asm!(
        load_key!(),
        "2:",
        counters!(),
        pass_input!(),
        "3:",
        pass_double_round!(),
        "dec r8d\njnz 3b",
        pass_output!(),
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}

/// Rider rows: shuffles rows b, c, d of the block in zmm25-zmm27 so that its diagonals
/// become columns (`0x39, 0x4e, 0x93`), or back (`0x93, 0x4e, 0x39`).
macro_rules! rider_rows {
    ($b:literal, $c:literal, $d:literal) => {
        concat!(
            "vpshufd zmm25, zmm25, ",
            $b,
            "\nvpshufd zmm26, zmm26, ",
            $c,
            "\nvpshufd zmm27, zmm27, ",
            $d,
            "\n",
        )
    };
}

/// Writes keystream blocks 0..16 under the key at `key` to `refill[.. 1024]` (one pass; it
/// may start at `key`) and block `counter` (any 64-bit counter) to `extra[.. 64]`, which
/// rides along the pass: its four rows in zmm24-zmm27 (lane 0 of each; inputs in
/// zmm28-zmm31), its rounds between the pass's. The contract of [`keystream`] holds, with
/// `refill` and `extra` the outputs.
///
/// # Safety
/// `key` readable for 32 bytes, `refill` writable for 1024 bytes, `extra` for 64 bytes and
/// not overlapping the key or `refill`, and the CPU has AVX-512F ([`detected`]).
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn refill_and_block(
    key: *const u8,
    counter: u64,
    refill: *mut u8,
    extra: *mut u8,
) {
    // As `keystream`, and r10: `extra`, r11: its counter, k2: the low quadword of each lane.
    core::arch::naked_asm!(
        load_key!(),
        "mov r10, rcx\nmov r11, rsi\nxor esi, esi\nmov ecx, 16",
        "vbroadcasti32x4 zmm28, xmmword ptr [rax + 68]\nvbroadcasti32x4 zmm29, xmmword ptr [rdi]",
        "vbroadcasti32x4 zmm30, xmmword ptr [rdi + 16]\nmov r9d, 0x55\nkmovw k2, r9d",
        "vpbroadcastq zmm31 {{k2}}{{z}}, r11\n2:",
        counters!(),
        pass_input!(),
        "vmovdqa64 zmm24, zmm28\nvmovdqa64 zmm25, zmm29\nvmovdqa64 zmm26, zmm30",
        "vmovdqa64 zmm27, zmm31\n3:",
        quarters!((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)),
        quarters!((24, 25, 26, 27)),
        rider_rows!(0x39, 0x4e, 0x93),
        quarters!((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)),
        quarters!((24, 25, 26, 27)),
        rider_rows!(0x93, 0x4e, 0x39),
        "dec r8d\njnz 3b\nvpaddd zmm24, zmm24, zmm28\nvpaddd zmm25, zmm25, zmm29",
        "vpaddd zmm26, zmm26, zmm30\nvpaddd zmm27, zmm27, zmm31",
        "vinserti32x4 zmm24, zmm24, xmm25, 1\nvinserti32x4 zmm24, zmm24, xmm26, 2",
        "vinserti32x4 zmm24, zmm24, xmm27, 3\nvmovdqu64 zmmword ptr [r10], zmm24",
        counters!(),
        pass_output!(),
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}
