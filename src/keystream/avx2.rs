//! The AVX2 keystream kernel, in assembly: word `i` of eight consecutive blocks in one ymm
//! register (a pass is eight blocks). Words 0-7 and 12-15 stay in ymm0-ymm7 and
//! ymm12-ymm15; of words 8-11 two are in ymm8-ymm9 or ymm10-ymm11 and the other two in the
//! last block of the pass's own output (its "slots"), the pair swapped twice a double round;
//! the two registers left are scratch. Every write lands in a register or in the output, so
//! no build of this crate leaves a key-derived word on the stack.

/// Whether this CPU has AVX2 and the OS saves its registers: all the kernel needs.
#[inline(always)]
pub(super) fn detected() -> bool {
    crate::cpuid::has(crate::cpuid::x86::AVX2)
}

/// Lane offsets 0..8 (bytes 0..32), the `vpshufb` tables that rotate each word left by 16
/// (32..64) and by 8 (64..96), "expand 32-byte k" as four eight-lane vectors (96..224) and
/// as one row of four words (224..240).
#[repr(C, align(32))]
struct Constants([u32; 60]);

const ROTATE_16: [u32; 4] = [0x0100_0302, 0x0504_0706, 0x0908_0b0a, 0x0d0c_0f0e];
const ROTATE_8: [u32; 4] = [0x0201_0003, 0x0605_0407, 0x0a09_080b, 0x0e0d_0c0f];

static CONSTANTS: Constants = {
    let mut c = [0u32; 60];
    let mut i = 0;
    while i < 8 {
        c[i] = i as u32;
        c[8 + i] = ROTATE_16[i % 4];
        c[16 + i] = ROTATE_8[i % 4];
        let mut w = 0;
        while w < 4 {
            c[24 + 8 * w + i] = super::SIGMA[w];
            w += 1;
        }
        if i < 4 {
            c[56 + i] = super::SIGMA[i];
        }
        i += 1;
    }
    Constants(c)
};

/// Quarter rounds (RFC 8439, section 2.1) side by side on the word registers `(a, b, c, d)`
/// named, each with its scratch register `t`.
macro_rules! quarters {
    ($(($a:literal, $b:literal, $c:literal, $d:literal, $t:literal)),*) => { concat!(
        add_xor_rotate!("32"; $(($a, $b, $d)),*),
        add_xor_shift!(12, 20; $(($c, $d, $b, $t)),*),
        add_xor_rotate!("64"; $(($a, $b, $d)),*),
        add_xor_shift!(7, 25; $(($c, $d, $b, $t)),*),
    )};
}

/// `x += y; z ^= x; z <<<= 16 or 8` (the `vpshufb` table at that offset) for each triple.
macro_rules! add_xor_rotate {
    ($table:literal; $(($x:literal, $y:literal, $z:literal)),*) => { concat!(
        $("vpaddd ymm", $x, ", ymm", $x, ", ymm", $y, "\n",)*
        $("vpxor ymm", $z, ", ymm", $z, ", ymm", $x, "\n",)*
        $("vpshufb ymm", $z, ", ymm", $z, ", ymmword ptr [rip + {constants} + ", $table, "]\n",)*
    )};
}

/// `x += y; z ^= x; z <<<= l` (`r` = 32 - `l`, through scratch `t`) for each quadruple.
macro_rules! add_xor_shift {
    ($l:literal, $r:literal; $(($x:literal, $y:literal, $z:literal, $t:literal)),*) => {
        concat!(
            $("vpaddd ymm", $x, ", ymm", $x, ", ymm", $y, "\n",)*
            $("vpxor ymm", $z, ", ymm", $z, ", ymm", $x, "\n",)*
            $("vpslld ymm", $t, ", ymm", $z, ", ", $l, "\n",)*
            $("vpsrld ymm", $z, ", ymm", $z, ", ", $r, "\n",)*
            $("vpor ymm", $z, ", ymm", $z, ", ymm", $t, "\n",)*
        )
    };
}

/// Moves the slots (at r10) into ymm`x`, ymm`x + 1` and ymm`y`, ymm`y + 1` into the slots.
#[rustfmt::skip]
macro_rules! swap {
    ($x:literal, $x1:literal, $y:literal, $y1:literal) => {
        concat!(
            "vmovdqu ymm", $x, ", ymmword ptr [r10]\n",
            "vmovdqu ymm", $x1, ", ymmword ptr [r10 + 32]\n",
            "vmovdqu ymmword ptr [r10], ymm", $y, "\n",
            "vmovdqu ymmword ptr [r10 + 32], ymm", $y1, "\n",
        )
    };
}

/// Columns, then diagonals (RFC 8439, section 2.3): words 8-9 in ymm8-ymm9 and 10-11 in the
/// slots before and after.
#[rustfmt::skip]
macro_rules! double_round {
    () => {
        concat!(
            quarters!((0, 4, 8, 12, 10), (1, 5, 9, 13, 11)),
            swap!(10, 11, 8, 9),
            quarters!((2, 6, 10, 14, 8), (3, 7, 11, 15, 9)),
            quarters!((0, 5, 10, 15, 8), (1, 6, 11, 12, 9)),
            swap!(8, 9, 10, 11),
            quarters!((2, 7, 8, 13, 10), (3, 4, 9, 14, 11)),
        )
    };
}

/// Lane j's counter `rsi + j` (64 bits, wrapping): low words into ymm`lo`, and into
/// ymm`hi` -1 where the low word did not wrap, else 0; r9d the high word plus one, which the
/// caller adds to ymm`hi`.
#[rustfmt::skip]
macro_rules! counters {
    ($lo:literal, $hi:literal) => {
        concat!(
            "vmovd xmm", $lo, ", esi\nvpbroadcastd ymm", $lo, ", xmm", $lo, "\n",
            "vpaddd ymm", $lo, ", ymm", $lo, ", ymmword ptr [rip + {constants}]\n",
            "vpmaxud ymm", $hi, ", ymm", $lo, ", ymmword ptr [rip + {constants}]\n",
            "vpcmpeqd ymm", $hi, ", ymm", $hi, ", ymm", $lo, "\n",
            "mov r9, rsi\nshr r9, 32\ninc r9d\n",
        )
    };
}

/// The input words of the pass at rdx (counter rsi) into the registers and slots (r10):
/// constants, key (read at rdi), counters, zero nonce; r8d counts the double rounds.
#[rustfmt::skip]
macro_rules! pass_input {
    () => {
        concat!(
            "vmovdqa ymm0, ymmword ptr [rip + {constants} + 96]\n",
            "vmovdqa ymm1, ymmword ptr [rip + {constants} + 128]\n",
            "vmovdqa ymm2, ymmword ptr [rip + {constants} + 160]\n",
            "vmovdqa ymm3, ymmword ptr [rip + {constants} + 192]\n",
            "vpbroadcastd ymm4, dword ptr [rdi]\nvpbroadcastd ymm5, dword ptr [rdi + 4]\n",
            "vpbroadcastd ymm6, dword ptr [rdi + 8]\nvpbroadcastd ymm7, dword ptr [rdi + 12]\n",
            "vpbroadcastd ymm8, dword ptr [rdi + 16]\nvpbroadcastd ymm9, dword ptr [rdi + 20]\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 24]\nvpbroadcastd ymm11, dword ptr [rdi + 28]\n",
            "vmovdqu ymmword ptr [r10], ymm10\nvmovdqu ymmword ptr [r10 + 32], ymm11\n",
            counters!(12, 13),
            "vmovd xmm14, r9d\nvpbroadcastd ymm14, xmm14\nvpaddd ymm13, ymm13, ymm14\n",
            "vpxor ymm14, ymm14, ymm14\nvpxor ymm15, ymm15, ymm15\n",
            "mov r8d, 10\n",
        )
    };
}

/// Adds the input words back (the key read at rdi once more; words 14 and 15 were zero).
/// Afterwards word 10 is in ymm10 and word 11 in its slot; ymm11 is free.
#[rustfmt::skip]
macro_rules! feed_forward {
    () => {
        concat!(
            counters!(10, 11),
            "vpaddd ymm12, ymm12, ymm10\nvpaddd ymm13, ymm13, ymm11\n",
            "vmovd xmm10, r9d\nvpbroadcastd ymm10, xmm10\nvpaddd ymm13, ymm13, ymm10\n",
            "vpaddd ymm0, ymm0, ymmword ptr [rip + {constants} + 96]\n",
            "vpaddd ymm1, ymm1, ymmword ptr [rip + {constants} + 128]\n",
            "vpaddd ymm2, ymm2, ymmword ptr [rip + {constants} + 160]\n",
            "vpaddd ymm3, ymm3, ymmword ptr [rip + {constants} + 192]\n",
            "vpbroadcastd ymm10, dword ptr [rdi]\nvpaddd ymm4, ymm4, ymm10\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 4]\nvpaddd ymm5, ymm5, ymm10\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 8]\nvpaddd ymm6, ymm6, ymm10\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 12]\nvpaddd ymm7, ymm7, ymm10\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 16]\nvpaddd ymm8, ymm8, ymm10\n",
            "vpbroadcastd ymm10, dword ptr [rdi + 20]\nvpaddd ymm9, ymm9, ymm10\n",
            "vpbroadcastd ymm11, dword ptr [rdi + 28]\n",
            "vpaddd ymm11, ymm11, ymmword ptr [r10 + 32]\n",
            "vmovdqu ymmword ptr [r10 + 32], ymm11\n",
            "vpbroadcastd ymm11, dword ptr [rdi + 24]\nvpaddd ymm10, ymm11, ymmword ptr [r10]\n",
        )
    };
}

/// Interleaves the words in ymm`w0`-ymm`w3` through the free ymm`f`: afterwards ymm`w0`,
/// ymm`w3`, ymm`w2` and ymm`f` hold those four words of blocks k and k + 4 (k = 0, 1, 2,
/// 3) in their low and high 128 bits, and ymm`w1` is free.
#[rustfmt::skip]
macro_rules! interleave {
    ($w0:literal, $w1:literal, $w2:literal, $w3:literal, $f:literal) => {
        concat!(
            "vpunpckhdq ymm", $f, ", ymm", $w0, ", ymm", $w1, "\n",
            "vpunpckldq ymm", $w0, ", ymm", $w0, ", ymm", $w1, "\n",
            "vpunpckhdq ymm", $w1, ", ymm", $w2, ", ymm", $w3, "\n",
            "vpunpckldq ymm", $w2, ", ymm", $w2, ", ymm", $w3, "\n",
            "vpunpckhqdq ymm", $w3, ", ymm", $w0, ", ymm", $w2, "\n",
            "vpunpcklqdq ymm", $w0, ", ymm", $w0, ", ymm", $w2, "\n",
            "vpunpcklqdq ymm", $w2, ", ymm", $f, ", ymm", $w1, "\n",
            "vpunpckhqdq ymm", $f, ", ymm", $f, ", ymm", $w1, "\n",
        )
    };
}

/// Joins four words of block k and k + 4 in ymm`x` with the next four in ymm`y` (through
/// the free ymm`f`) and stores the 32 bytes at `half` of blocks k and k + 4 that the pass
/// has (rcx of them).
#[rustfmt::skip]
macro_rules! join_store {
    ($x:literal, $y:literal, $f:literal, $k:literal, $k4:literal, $half:literal) => {
        concat!(
            "vperm2i128 ymm", $f, ", ymm", $x, ", ymm", $y, ", 0x20\n",
            "vperm2i128 ymm", $x, ", ymm", $x, ", ymm", $y, ", 0x31\n",
            "cmp ecx, ", $k, "\njbe 4f\n",
            "vmovdqu ymmword ptr [rdx + 64 * ", $k, " + ", $half, "], ymm", $f, "\n",
            "4:\ncmp ecx, ", $k4, "\njbe 4f\n",
            "vmovdqu ymmword ptr [rdx + 64 * ", $k4, " + ", $half, "], ymm", $x, "\n4:\n",
        )
    };
}

/// The pass's output: the feed-forward, then words 0-7 of each block (the slot of word 10
/// is overwritten after it is read back), then word 11 from its slot and words 8-15.
#[rustfmt::skip]
macro_rules! pass_output {
    () => {
        concat!(
            feed_forward!(),
            interleave!(0, 1, 2, 3, 11),
            interleave!(4, 5, 6, 7, 1),
            join_store!(0, 4, 5, 0, 4, 0),
            join_store!(3, 7, 4, 1, 5, 0),
            join_store!(2, 6, 5, 2, 6, 0),
            join_store!(11, 1, 7, 3, 7, 0),
            "vmovdqu ymm11, ymmword ptr [r10 + 32]\n",
            interleave!(8, 9, 10, 11, 0),
            interleave!(12, 13, 14, 15, 1),
            join_store!(8, 12, 2, 0, 4, 32),
            join_store!(11, 15, 3, 1, 5, 32),
            join_store!(10, 14, 4, 2, 6, 32),
            join_store!(0, 1, 5, 3, 7, 32),
        )
    };
}

/// One pass: blocks `rsi ..` of the key at rdi, rcx (1 to 8) of them to rdx.
#[rustfmt::skip]
macro_rules! pass {
    () => {
        concat!(
            "mov r10, rcx\nshl r10, 6\nlea r10, [rdx + r10 - 64]\n",
            pass_input!(),
            "3:\n",
            double_round!(),
            "dec r8d\njnz 3b\n",
            pass_output!(),
        )
    };
}

/// The rider's working words, in the first block of the pass it rides along (r10 - 448).
#[rustfmt::skip]
macro_rules! word {
    ($i:literal) => {
        concat!("dword ptr [r10 - 448 + 4 * ", $i, "]")
    };
}

/// Two quarter rounds of the rider on its words `(a, b, c, d)` named, loaded into eax, ecx,
/// edx, esi and edi, r8d, r9d, r11d and stored back.
#[rustfmt::skip]
macro_rules! rider_quarters {
    ($a:literal, $b:literal, $c:literal, $d:literal;
     $e:literal, $f:literal, $g:literal, $h:literal) => {
        concat!(
            "mov eax, ", word!($a), "\nmov ecx, ", word!($b), "\n",
            "mov edx, ", word!($c), "\nmov esi, ", word!($d), "\n",
            "mov edi, ", word!($e), "\nmov r8d, ", word!($f), "\n",
            "mov r9d, ", word!($g), "\nmov r11d, ", word!($h), "\n",
            rider_step!(16, 12),
            rider_step!(8, 7),
            "mov ", word!($a), ", eax\nmov ", word!($b), ", ecx\n",
            "mov ", word!($c), ", edx\nmov ", word!($d), ", esi\n",
            "mov ", word!($e), ", edi\nmov ", word!($f), ", r8d\n",
            "mov ", word!($g), ", r9d\nmov ", word!($h), ", r11d\n",
        )
    };
}

/// Half of the rider's two quarter rounds: `a += b; d ^= a; d <<<= l; c += d; b ^= c;
/// b <<<= m`.
#[rustfmt::skip]
macro_rules! rider_step {
    ($l:literal, $m:literal) => {
        concat!(
            "add eax, ecx\nadd edi, r8d\nxor esi, eax\nxor r11d, edi\n",
            "rol esi, ", $l, "\nrol r11d, ", $l, "\nadd edx, esi\nadd r9d, r11d\n",
            "xor ecx, edx\nxor r8d, r9d\nrol ecx, ", $m, "\nrol r8d, ", $m, "\n",
        )
    };
}

/// Clears every register the kernels write (ymm0-ymm15 whole, the general registers), then
/// returns.
#[rustfmt::skip]
macro_rules! clear_and_return {
    () => {
        concat!(
            "vzeroall\nxor eax, eax\nxor ecx, ecx\nxor edx, edx\nxor esi, esi\nxor edi, edi\n",
            "xor r8d, r8d\nxor r9d, r9d\nxor r10d, r10d\nxor r11d, r11d\nret\n",
        )
    };
}

/// Writes keystream blocks 0..16 under the key at `key` to `refill[.. 1024]` (two passes; it
/// may start at `key`) and block `counter` (any 64-bit counter) to `extra[.. 64]`, which
/// rides along the pass of blocks 8..16 (run first): its rounds in the general registers,
/// its words in block 8 of `refill` and the arguments in block 9 until that pass's output
/// overwrites them. The contract of [`keystream`] holds, with `refill` and `extra` the
/// outputs.
///
/// # Safety
/// `key` readable for 32 bytes, `refill` writable for 1024 bytes and starting at `key` or
/// not overlapping it, `extra` writable for 64 bytes and not overlapping the key or
/// `refill`, and the CPU has AVX2 ([`detected`]).
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn refill_and_block(
    key: *const u8,
    counter: u64,
    refill: *mut u8,
    extra: *mut u8,
) {
    // As `keystream`, with r10 the slots of the pass of blocks 8..16 and its block 8
    // (r10 - 448) the rider's words, then in block 9 the key pointer (r10 - 384), `extra`
    // (- 376), the rider's counter (- 368), `refill` (- 360) and the double rounds left
    // (- 352). During the rounds every other general register is the rider's.
    core::arch::naked_asm!(
        "lea r10, [rdx + 960]",
        "mov qword ptr [r10 - 384], rdi\nmov qword ptr [r10 - 376], rcx",
        "mov qword ptr [r10 - 368], rsi\nmov qword ptr [r10 - 360], rdx",
        "vmovdqa xmm0, xmmword ptr [rip + {constants} + 224]\nvmovdqu ymm1, ymmword ptr [rdi]",
        "vmovdqu xmmword ptr [r10 - 448], xmm0\nvmovdqu ymmword ptr [r10 - 432], ymm1",
        "mov qword ptr [r10 - 400], rsi\nmov qword ptr [r10 - 392], 0",
        "mov esi, 8",
        pass_input!(),
        "mov dword ptr [r10 - 352], 10",
        "3:",
        quarters!((0, 4, 8, 12, 10), (1, 5, 9, 13, 11)),
        rider_quarters!(0, 4, 8, 12; 1, 5, 9, 13),
        swap!(10, 11, 8, 9),
        quarters!((2, 6, 10, 14, 8), (3, 7, 11, 15, 9)),
        rider_quarters!(2, 6, 10, 14; 3, 7, 11, 15),
        quarters!((0, 5, 10, 15, 8), (1, 6, 11, 12, 9)),
        rider_quarters!(0, 5, 10, 15; 1, 6, 11, 12),
        swap!(8, 9, 10, 11),
        quarters!((2, 7, 8, 13, 10), (3, 4, 9, 14, 11)),
        rider_quarters!(2, 7, 8, 13; 3, 4, 9, 14),
        "dec dword ptr [r10 - 352]\njnz 3b",
        // The rider's feed-forward (its counter's words added one by one, the nonce zero)
        // into `extra`, while the key is still in place.
        "mov rdi, qword ptr [r10 - 384]\nmov rcx, qword ptr [r10 - 376]",
        "mov rsi, qword ptr [r10 - 368]\nmov rdx, qword ptr [r10 - 360]",
        "vmovdqu xmm10, xmmword ptr [r10 - 448]",
        "vpaddd xmm10, xmm10, xmmword ptr [rip + {constants} + 224]",
        "vmovdqu xmmword ptr [rcx], xmm10\nvmovdqu ymm10, ymmword ptr [r10 - 432]",
        "vpaddd ymm10, ymm10, ymmword ptr [rdi]\nvmovdqu ymmword ptr [rcx + 16], ymm10",
        "vmovq xmm11, rsi\nvpaddd xmm11, xmm11, xmmword ptr [r10 - 400]",
        "vmovdqu xmmword ptr [rcx + 48], xmm11",
        "mov esi, 8\nmov ecx, 8\nadd rdx, 512",
        pass_output!(),
        "xor esi, esi\nmov ecx, 8\nsub rdx, 512",
        pass!(),
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}

/// Writes keystream blocks `counter .. counter + blocks` (64 bytes each; the 64-bit block
/// counter in words 12-13 wraps at 2^64; nonce words 14-15 zero) under the 32-byte key at
/// `key` (eight little-endian words) to `out[.. 64 * blocks]`: passes of eight from the last
/// (which has the blocks left over, 1 to 8) down to the first.
///
/// Every write lands in registers or in `out[.. 64 * blocks]`: no stack, no other memory
/// (the call's return address aside). Each pass reads the key before its output overwrites
/// anything but its slots in its own last block, and the first pass runs last, so `out`
/// may start at `key` where `blocks >= 8` (a refill). Every vector and general register it
/// writes is caller-saved in the System V ABI, which the call declares clobbered, and is
/// cleared before it returns.
///
/// # Safety
/// `key` readable for 32 bytes, `out` writable for `64 * blocks` bytes and either starting at
/// `key` with `blocks >= 8` or not overlapping it, `blocks >= 1`, and the CPU has AVX2
/// ([`detected`]).
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn keystream(
    key: *const u8,
    counter: u64,
    out: *mut u8,
    blocks: usize,
) {
    // rdi: key, rsi: counter of the pass, rdx: its output, rcx: its blocks, r8: double
    // rounds left, r9: the counter's high word plus one, r10: the slots, r11: passes left.
    core::arch::naked_asm!(
        "lea r11, [rcx - 1]\nshr r11, 3\nmov r8, r11\nshl r8, 3\nadd rsi, r8\nsub rcx, r8",
        "shl r8, 6\nadd rdx, r8",
        "2:",
        pass!(),
        "sub r11, 1\njb 5f\nsub rsi, 8\nsub rdx, 512\nmov ecx, 8\njmp 2b",
        "5:",
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}
