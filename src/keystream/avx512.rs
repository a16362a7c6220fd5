//! The AVX-512F keystream kernel, in assembly: word `i` of sixteen consecutive blocks in
//! register `zmm<i>` (a pass is sixteen blocks), the key's eight words broadcast in
//! zmm16-zmm23, the lane counters in zmm24-zmm25 and zmm24-zmm31 free for the transpose.
//! Nothing is spilled: every write lands in a register or in `out`, so no build of this
//! crate (any optimisation level, debug or release) leaves a key-derived word on the stack.

cpufeatures::new!(cpuid_avx512f, "avx512f");

/// Whether this CPU has AVX-512F and the OS saves its registers: all the kernel needs.
#[inline(always)]
pub(super) fn detected() -> bool {
    cpuid_avx512f::get()
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
            "\n",
            "vpunpckhdq zmm25, zmm",
            $w0,
            ", zmm",
            $w1,
            "\n",
            "vpunpckldq zmm26, zmm",
            $w2,
            ", zmm",
            $w3,
            "\n",
            "vpunpckhdq zmm27, zmm",
            $w2,
            ", zmm",
            $w3,
            "\n",
            "vpunpcklqdq zmm",
            $w0,
            ", zmm24, zmm26\n",
            "vpunpckhqdq zmm",
            $w1,
            ", zmm24, zmm26\n",
            "vpunpcklqdq zmm",
            $w2,
            ", zmm25, zmm27\n",
            "vpunpckhqdq zmm",
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
            "\njbe 4f\n",
            "vmovdqu64 zmmword ptr [rdx + 64 * ",
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
            ", 0x44\n",
            "vshufi32x4 zmm25, zmm",
            $k,
            ", zmm",
            $k4,
            ", 0xee\n",
            "vshufi32x4 zmm26, zmm",
            $k8,
            ", zmm",
            $k12,
            ", 0x44\n",
            "vshufi32x4 zmm27, zmm",
            $k8,
            ", zmm",
            $k12,
            ", 0xee\n",
            "vshufi32x4 zmm28, zmm24, zmm26, 0x88\n",
            "vshufi32x4 zmm29, zmm24, zmm26, 0xdd\n",
            "vshufi32x4 zmm30, zmm25, zmm27, 0x88\n",
            "vshufi32x4 zmm31, zmm25, zmm27, 0xdd\n",
            store!(28, $k),
            store!(29, $k4),
            store!(30, $k8),
            store!(31, $k12),
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
        "vpbroadcastd zmm16, dword ptr [rdi]",
        "vpbroadcastd zmm17, dword ptr [rdi + 4]",
        "vpbroadcastd zmm18, dword ptr [rdi + 8]",
        "vpbroadcastd zmm19, dword ptr [rdi + 12]",
        "vpbroadcastd zmm20, dword ptr [rdi + 16]",
        "vpbroadcastd zmm21, dword ptr [rdi + 20]",
        "vpbroadcastd zmm22, dword ptr [rdi + 24]",
        "vpbroadcastd zmm23, dword ptr [rdi + 28]",
        "lea rax, [rip + {constants}]",
        "2:",
        // Lane j's counter is `counter + j`: the low words, then the high word plus the
        // carry of lanes whose low word wrapped.
        "vpbroadcastd zmm26, esi",
        "vpaddd zmm24, zmm26, zmmword ptr [rax]",
        "vpcmpud k1, zmm24, zmm26, 1",
        "mov r9, rsi",
        "shr r9, 32",
        "vpbroadcastd zmm25, r9d",
        "vpaddd zmm25 {{k1}}, zmm25, dword ptr [rax + 64]{{1to16}}",
        "vpbroadcastd zmm0, dword ptr [rax + 68]",
        "vpbroadcastd zmm1, dword ptr [rax + 72]",
        "vpbroadcastd zmm2, dword ptr [rax + 76]",
        "vpbroadcastd zmm3, dword ptr [rax + 80]",
        "vmovdqa64 zmm4, zmm16",
        "vmovdqa64 zmm5, zmm17",
        "vmovdqa64 zmm6, zmm18",
        "vmovdqa64 zmm7, zmm19",
        "vmovdqa64 zmm8, zmm20",
        "vmovdqa64 zmm9, zmm21",
        "vmovdqa64 zmm10, zmm22",
        "vmovdqa64 zmm11, zmm23",
        "vmovdqa64 zmm12, zmm24",
        "vmovdqa64 zmm13, zmm25",
        "vpxord zmm14, zmm14, zmm14",
        "vpxord zmm15, zmm15, zmm15",
        "mov r8d, 10",
        "3:",
        // Columns, then diagonals (RFC 8439, section 2.3).
        quarters!((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)),
        quarters!((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)),
        "dec r8d",
        "jnz 3b",
        // The feed-forward: add the input words back (words 14 and 15 were zero).
        "vpaddd zmm0, zmm0, dword ptr [rax + 68]{{1to16}}",
        "vpaddd zmm1, zmm1, dword ptr [rax + 72]{{1to16}}",
        "vpaddd zmm2, zmm2, dword ptr [rax + 76]{{1to16}}",
        "vpaddd zmm3, zmm3, dword ptr [rax + 80]{{1to16}}",
        "vpaddd zmm4, zmm4, zmm16",
        "vpaddd zmm5, zmm5, zmm17",
        "vpaddd zmm6, zmm6, zmm18",
        "vpaddd zmm7, zmm7, zmm19",
        "vpaddd zmm8, zmm8, zmm20",
        "vpaddd zmm9, zmm9, zmm21",
        "vpaddd zmm10, zmm10, zmm22",
        "vpaddd zmm11, zmm11, zmm23",
        "vpaddd zmm12, zmm12, zmm24",
        "vpaddd zmm13, zmm13, zmm25",
        interleave!(0, 1, 2, 3),
        interleave!(4, 5, 6, 7),
        interleave!(8, 9, 10, 11),
        interleave!(12, 13, 14, 15),
        transpose_store!(0, 4, 8, 12),
        transpose_store!(1, 5, 9, 13),
        transpose_store!(2, 6, 10, 14),
        transpose_store!(3, 7, 11, 15),
        "add rsi, 16",
        "add rdx, 1024",
        "sub rcx, 16",
        "ja 2b",
        // Clear every register written: zmm0-zmm15 whole (`vzeroall`), zmm16-zmm31, k1, and
        // the general registers.
        "vpxord zmm16, zmm16, zmm16",
        "vpxord zmm17, zmm17, zmm17",
        "vpxord zmm18, zmm18, zmm18",
        "vpxord zmm19, zmm19, zmm19",
        "vpxord zmm20, zmm20, zmm20",
        "vpxord zmm21, zmm21, zmm21",
        "vpxord zmm22, zmm22, zmm22",
        "vpxord zmm23, zmm23, zmm23",
        "vpxord zmm24, zmm24, zmm24",
        "vpxord zmm25, zmm25, zmm25",
        "vpxord zmm26, zmm26, zmm26",
        "vpxord zmm27, zmm27, zmm27",
        "vpxord zmm28, zmm28, zmm28",
        "vpxord zmm29, zmm29, zmm29",
        "vpxord zmm30, zmm30, zmm30",
        "vpxord zmm31, zmm31, zmm31",
        "vzeroall",
        "kxorw k1, k1, k1",
        "xor eax, eax",
        "xor ecx, ecx",
        "xor edx, edx",
        "xor esi, esi",
        "xor edi, edi",
        "xor r8d, r8d",
        "xor r9d, r9d",
        "ret",
        constants = sym CONSTANTS,
    );
}
