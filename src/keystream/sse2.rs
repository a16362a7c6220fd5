//! The SSE2 keystream kernel, in assembly, for x86-64 CPUs without AVX2 (SSE2 is in every
//! x86-64 CPU). Groups of four blocks are word-sliced: word `i` of the four blocks in one
//! xmm register. Words 0-7 and 12-15 stay in xmm0-xmm7 and xmm12-xmm15; of words 8-11 two
//! are in xmm8-xmm9 or xmm10-xmm11 and the other two in the last 32 bytes of the group's
//! own output (its "slots"), the pair swapped twice a double round; the two registers left
//! are scratch. The one to three blocks left over (and `refill_and_block`'s blocks 12-15
//! with its extra block) go in groups with one block in four registers, row `r` (words
//! `4r..4r + 4`) in `xmm<4j + r>` for block `j`, the key's two rows in xmm12-xmm13 and
//! xmm14-xmm15 free for the rotations; the columns of such a block are its rows' lanes and
//! `pshufd` turns its diagonals into columns and back. Every write lands in a register or in
//! the output, so no build of this crate leaves a key-derived word on the stack.

/// Always (SSE2 is in the x86-64 baseline), except under Miri, which runs no assembly.
#[inline(always)]
pub(super) fn detected() -> bool {
    !cfg!(miri)
}

/// "expand 32-byte k" (RFC 8439, section 2.3) as one row (bytes 0..16) and as four
/// four-lane vectors (16..80), the lane offsets 0..4 (80..96), the sign bit in every lane
/// (96..112) and the lane offsets with the sign bit set (112..128): each 16-byte aligned,
/// as SSE2's memory operands need.
#[repr(C, align(16))]
struct Constants([u32; 32]);

static CONSTANTS: Constants = {
    let mut c = [0u32; 32];
    let mut i = 0;
    while i < 4 {
        c[i] = super::SIGMA[i];
        let mut w = 0;
        while w < 4 {
            c[4 + 4 * w + i] = super::SIGMA[w];
            w += 1;
        }
        c[20 + i] = i as u32;
        c[24 + i] = 0x8000_0000;
        c[28 + i] = 0x8000_0000 | i as u32;
        i += 1;
    }
    Constants(c)
};

/// One step of the quarter rounds on each `(a, b, c, d; t, u)` named at once: `a += b;
/// d ^= a; d <<<= 16; c += d; b ^= c; b <<<= 12; a += b; d ^= a; d <<<= 8; c += d; b ^= c;
/// b <<<= 7` (RFC 8439, section 2.1), each operand a register. The rotations of `b` go
/// through the scratch register `xmm<t>`, that of `d` by 8 through `xmm<u>`; by 16, word
/// halves swap (`pshuflw`, `pshufhw`).
macro_rules! quarters {
    ($(($a:literal, $b:literal, $c:literal, $d:literal; $t:literal, $u:literal)),*) => {
        concat!(
            $("paddd xmm", $a, ", xmm", $b, "\npxor xmm", $d, ", xmm", $a, "\n",)*
            $("pshuflw xmm", $d, ", xmm", $d, ", 0xb1\npshufhw xmm", $d, ", xmm", $d, ", 0xb1\n",)*
            $("paddd xmm", $c, ", xmm", $d, "\npxor xmm", $b, ", xmm", $c, "\n",)*
            $(rotate!($b, 12, 20, $t),)*
            $("paddd xmm", $a, ", xmm", $b, "\npxor xmm", $d, ", xmm", $a, "\n",)*
            $(rotate!($d, 8, 24, $u),)*
            $("paddd xmm", $c, ", xmm", $d, "\npxor xmm", $b, ", xmm", $c, "\n",)*
            $(rotate!($b, 7, 25, $t),)*
        )
    };
}

/// `xmm<r> <<<= l` (`s` = 32 - `l`) through the scratch register `xmm<t>`.
macro_rules! rotate {
    ($r:literal, $l:literal, $s:literal, $t:literal) => {
        concat!(
            "movdqa xmm",
            $t,
            ", xmm",
            $r,
            "\npslld xmm",
            $r,
            ", ",
            $l,
            "\npsrld xmm",
            $t,
            ", ",
            $s,
            "\npor xmm",
            $r,
            ", xmm",
            $t,
            "\n",
        )
    };
}

/// Rotates the lanes of rows b, c, d of each block (`0x39, 0x4e, 0x93`: diagonals into
/// columns; `0x93, 0x4e, 0x39`: back).
macro_rules! rows {
    ($sb:literal, $sc:literal, $sd:literal; $(($a:literal, $b:literal, $c:literal, $d:literal)),*) => {
        concat!($(
            "pshufd xmm", $b, ", xmm", $b, ", ", $sb, "\npshufd xmm", $c, ", xmm", $c, ", ", $sc,
            "\npshufd xmm", $d, ", xmm", $d, ", ", $sd, "\n",
        )*)
    };
}

/// A group of one to three blocks, one row per register, each `(a, b, c, d; counter; out)`:
/// its rows' registers, the address of its 64-bit counter's source (`lea`), and where it is
/// stored. The input rows are the constants (at rax), the key (xmm12-xmm13) and the counter
/// with the zero nonce (`movq` clears the upper half); twenty rounds; the input added back,
/// and the stores. r8 and r9 are scratch; xmm14 and xmm15 end holding counters.
macro_rules! group {
    ($(($a:literal, $b:literal, $c:literal, $d:literal; $counter:literal; $out:literal)),*) => {
        concat!(
            $(
                "movdqa xmm", $a, ", xmmword ptr [rax]\nmovdqa xmm", $b, ", xmm12\n",
                "movdqa xmm", $c, ", xmm13\nlea r9, [", $counter, "]\nmovq xmm", $d, ", r9\n",
            )*
            "mov r8d, 10\n3:\n",
            quarters!($(($a, $b, $c, $d; 14, 15)),*),
            rows!(0x39, 0x4e, 0x93; $(($a, $b, $c, $d)),*),
            quarters!($(($a, $b, $c, $d; 14, 15)),*),
            rows!(0x93, 0x4e, 0x39; $(($a, $b, $c, $d)),*),
            "dec r8d\njnz 3b\n",
            $(
                "lea r9, [", $counter, "]\nmovq xmm14, r9\npaddd xmm", $a,
                ", xmmword ptr [rax]\npaddd xmm", $b, ", xmm12\npaddd xmm", $c, ", xmm13\n",
                "paddd xmm", $d, ", xmm14\nmovdqu xmmword ptr [", $out, "], xmm", $a, "\n",
                "movdqu xmmword ptr [", $out, " + 16], xmm", $b, "\n",
                "movdqu xmmword ptr [", $out, " + 32], xmm", $c, "\n",
                "movdqu xmmword ptr [", $out, " + 48], xmm", $d, "\n",
            )*
        )
    };
}

/// Blocks `rsi`, `rsi + 1`, `rsi + 2`, one row per register, into `rdx[.. 192]`.
macro_rules! group_of_three {
    () => {
        group!(
            (0, 1, 2, 3; "rsi"; "rdx"),
            (4, 5, 6, 7; "rsi + 1"; "rdx + 64"),
            (8, 9, 10, 11; "rsi + 2"; "rdx + 128")
        )
    };
}

/// Lane j's counter `rsi + j` (64 bits, wrapping) for a word-sliced group: its low word
/// into `xmm<lo>`, -1 into `xmm<carry>` where that low word wrapped (else 0), and the high
/// word of `rsi` into r9d. SSE2 compares signed only, so both sides of the unsigned
/// `lo + j < j` have their sign bit flipped.
#[rustfmt::skip]
macro_rules! counters {
    ($lo:literal, $carry:literal) => {
        concat!(
            "movd xmm", $lo, ", esi\npshufd xmm", $lo, ", xmm", $lo, ", 0\n",
            "paddd xmm", $lo, ", xmmword ptr [rip + {constants} + 80]\n",
            "pxor xmm", $lo, ", xmmword ptr [rip + {constants} + 96]\n",
            "movdqa xmm", $carry, ", xmmword ptr [rip + {constants} + 112]\n",
            "pcmpgtd xmm", $carry, ", xmm", $lo, "\n",
            "pxor xmm", $lo, ", xmmword ptr [rip + {constants} + 96]\n",
            "mov r9, rsi\nshr r9, 32\n",
        )
    };
}

/// Moves the slots (at rdx + 224) into `xmm<x>`, `xmm<x1>` and `xmm<y>`, `xmm<y1>` into the
/// slots.
#[rustfmt::skip]
macro_rules! swap {
    ($x:literal, $x1:literal, $y:literal, $y1:literal) => {
        concat!(
            "movdqu xmm", $x, ", xmmword ptr [rdx + 224]\n",
            "movdqu xmm", $x1, ", xmmword ptr [rdx + 240]\n",
            "movdqu xmmword ptr [rdx + 224], xmm", $y, "\n",
            "movdqu xmmword ptr [rdx + 240], xmm", $y1, "\n",
        )
    };
}

/// Transposes the words of four blocks in `xmm<a>`-`xmm<d>` through the free `xmm<t>`
/// into four 16-byte rows, stored at `row` of blocks 0-3 at rdx; afterwards `xmm<a>`-`xmm<d>`
/// and `xmm<t>` are free.
#[rustfmt::skip]
macro_rules! transpose_store {
    ($a:literal, $b:literal, $c:literal, $d:literal, $t:literal, $row:literal) => {
        concat!(
            "movdqa xmm", $t, ", xmm", $a, "\npunpckldq xmm", $a, ", xmm", $b, "\n",
            "punpckhdq xmm", $t, ", xmm", $b, "\nmovdqa xmm", $b, ", xmm", $c, "\n",
            "punpckldq xmm", $c, ", xmm", $d, "\npunpckhdq xmm", $b, ", xmm", $d, "\n",
            "movdqa xmm", $d, ", xmm", $a, "\npunpcklqdq xmm", $a, ", xmm", $c, "\n",
            "punpckhqdq xmm", $d, ", xmm", $c, "\nmovdqa xmm", $c, ", xmm", $t, "\n",
            "punpcklqdq xmm", $t, ", xmm", $b, "\npunpckhqdq xmm", $c, ", xmm", $b, "\n",
            "movdqu xmmword ptr [rdx + ", $row, "], xmm", $a, "\n",
            "movdqu xmmword ptr [rdx + 64 + ", $row, "], xmm", $d, "\n",
            "movdqu xmmword ptr [rdx + 128 + ", $row, "], xmm", $t, "\n",
            "movdqu xmmword ptr [rdx + 192 + ", $row, "], xmm", $c, "\n",
        )
    };
}

/// Blocks `rsi .. rsi + 4` of the key at rdi, word-sliced, into `rdx[.. 256]`: the input
/// words into the registers and slots (words 10 and 11); twenty rounds (columns, then
/// diagonals: words 8-9 in xmm8-xmm9 and 10-11 in the slots before and after); the input
/// added back, the key read at rdi once more before any store but the slots'; then the
/// rows of each block, words 10 and 11 read back from the slots before their bytes are
/// stored. r8 and r9 are scratch.
#[rustfmt::skip]
macro_rules! group_of_four {
    () => {
        concat!(
            "movdqa xmm0, xmmword ptr [rip + {constants} + 16]\n",
            "movdqa xmm1, xmmword ptr [rip + {constants} + 32]\n",
            "movdqa xmm2, xmmword ptr [rip + {constants} + 48]\n",
            "movdqa xmm3, xmmword ptr [rip + {constants} + 64]\n",
            "movdqu xmm8, xmmword ptr [rdi]\nmovdqu xmm11, xmmword ptr [rdi + 16]\n",
            "pshufd xmm4, xmm8, 0x00\npshufd xmm5, xmm8, 0x55\n",
            "pshufd xmm6, xmm8, 0xaa\npshufd xmm7, xmm8, 0xff\n",
            "pshufd xmm8, xmm11, 0x00\npshufd xmm9, xmm11, 0x55\n",
            "pshufd xmm10, xmm11, 0xaa\npshufd xmm11, xmm11, 0xff\n",
            "movdqu xmmword ptr [rdx + 224], xmm10\nmovdqu xmmword ptr [rdx + 240], xmm11\n",
            counters!(12, 14),
            "movd xmm13, r9d\npshufd xmm13, xmm13, 0\npsubd xmm13, xmm14\n",
            "pxor xmm14, xmm14\npxor xmm15, xmm15\n",
            "mov r8d, 10\n3:\n",
            quarters!((0, 4, 8, 12; 10, 10), (1, 5, 9, 13; 11, 11)),
            swap!(10, 11, 8, 9),
            quarters!((2, 6, 10, 14; 8, 8), (3, 7, 11, 15; 9, 9)),
            quarters!((0, 5, 10, 15; 8, 8), (1, 6, 11, 12; 9, 9)),
            swap!(8, 9, 10, 11),
            quarters!((2, 7, 8, 13; 10, 10), (3, 4, 9, 14; 11, 11)),
            "dec r8d\njnz 3b\n",
            counters!(10, 11),
            "paddd xmm12, xmm10\npsubd xmm13, xmm11\n",
            "movd xmm10, r9d\npshufd xmm10, xmm10, 0\npaddd xmm13, xmm10\n",
            "paddd xmm0, xmmword ptr [rip + {constants} + 16]\n",
            "paddd xmm1, xmmword ptr [rip + {constants} + 32]\n",
            "paddd xmm2, xmmword ptr [rip + {constants} + 48]\n",
            "paddd xmm3, xmmword ptr [rip + {constants} + 64]\n",
            "movdqu xmm10, xmmword ptr [rdi]\n",
            "pshufd xmm11, xmm10, 0x00\npaddd xmm4, xmm11\n",
            "pshufd xmm11, xmm10, 0x55\npaddd xmm5, xmm11\n",
            "pshufd xmm11, xmm10, 0xaa\npaddd xmm6, xmm11\n",
            "pshufd xmm11, xmm10, 0xff\npaddd xmm7, xmm11\n",
            "movdqu xmm10, xmmword ptr [rdi + 16]\n",
            "pshufd xmm11, xmm10, 0x00\npaddd xmm8, xmm11\n",
            "pshufd xmm11, xmm10, 0x55\npaddd xmm9, xmm11\n",
            transpose_store!(0, 1, 2, 3, 11, 0),
            transpose_store!(4, 5, 6, 7, 0, 16),
            "pshufd xmm0, xmm10, 0xaa\nmovdqu xmm1, xmmword ptr [rdx + 224]\npaddd xmm1, xmm0\n",
            "pshufd xmm0, xmm10, 0xff\nmovdqu xmm2, xmmword ptr [rdx + 240]\npaddd xmm2, xmm0\n",
            transpose_store!(8, 9, 1, 2, 3, 32),
            transpose_store!(12, 13, 14, 15, 4, 48),
        )
    };
}

/// Loads the key rows into xmm12-xmm13 and the constants' address into rax.
macro_rules! load_key {
    () => {
        concat!(
            "movdqu xmm12, xmmword ptr [rdi]\nmovdqu xmm13, xmmword ptr [rdi + 16]\n",
            "lea rax, [rip + {constants}]\n",
        )
    };
}

/// Clears every register the kernels write (xmm0-xmm15, and the general registers), then
/// returns.
macro_rules! clear_and_return {
    () => {
        concat!(
            "pxor xmm0, xmm0\npxor xmm1, xmm1\npxor xmm2, xmm2\npxor xmm3, xmm3\n",
            "pxor xmm4, xmm4\npxor xmm5, xmm5\npxor xmm6, xmm6\npxor xmm7, xmm7\n",
            "pxor xmm8, xmm8\npxor xmm9, xmm9\npxor xmm10, xmm10\npxor xmm11, xmm11\n",
            "pxor xmm12, xmm12\npxor xmm13, xmm13\npxor xmm14, xmm14\npxor xmm15, xmm15\n",
            "xor eax, eax\nxor ecx, ecx\nxor edx, edx\nxor esi, esi\nxor edi, edi\n",
            "xor r8d, r8d\nxor r9d, r9d\nxor r10d, r10d\nxor r11d, r11d\nret\n",
        )
    };
}

/// Writes keystream blocks `counter .. counter + blocks` (64 bytes each; the 64-bit block
/// counter in words 12-13 wraps at 2^64; nonce words 14-15 zero) under the 32-byte key at
/// `key` (eight little-endian words) to `out[.. 64 * blocks]`: first the one to three blocks
/// past the last multiple of four (the key read before anything is stored), then groups of
/// four from the last down to the first.
///
/// Every write lands in registers or in `out[.. 64 * blocks]`: no stack, no other memory
/// (the call's return address aside). Each group of four reads the key before its output
/// overwrites anything but its slots (bytes 224..256 of the group), and the first group
/// runs last, so `out` may start at `key` (a refill). Every vector and general register it
/// writes is caller-saved in the System V ABI, which the call declares clobbered, and is
/// cleared before it returns.
///
/// # Safety
/// `key` readable for 32 bytes, `out` writable for `64 * blocks` bytes and either starting at
/// `key` or not overlapping it, `blocks >= 1`.
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn keystream(
    key: *const u8,
    counter: u64,
    out: *mut u8,
    blocks: usize,
) {
    // rdi: key, rsi: counter of the group, rdx: its output, rcx: blocks left over, r10:
    // groups of four left, rax: constants, r8: double rounds left, r9: a block's counter or
    // a counter's high word, r11: scratch.
    core::arch::naked_asm!(
        load_key!(),
        "mov r10, rcx\nshr r10, 2\nand ecx, 3\nmov r11, r10\nshl r11, 2\nadd rsi, r11",
        "shl r11, 6\nadd rdx, r11",
        "test ecx, ecx\njz 5f\ncmp ecx, 2\nje 6f\njb 7f",
        group_of_three!(),
        "jmp 5f\n6:",
        group!((0, 1, 2, 3; "rsi"; "rdx"), (4, 5, 6, 7; "rsi + 1"; "rdx + 64")),
        "jmp 5f\n7:",
        group!((0, 1, 2, 3; "rsi"; "rdx")),
        "5:\ntest r10, r10\njz 8f",
        "2:\nsub rsi, 4\nsub rdx, 256",
        group_of_four!(),
        "dec r10\njnz 2b",
        "8:",
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}

/// Writes keystream blocks 0..16 under the key at `key` to `refill[.. 1024]` (it may start
/// at `key`) and block `counter` (any 64-bit counter) to `extra[.. 64]`: first the extra
/// block beside block 15 and then blocks 12-14, one row per register (the key read before
/// anything is stored), then blocks 0-11 in groups of four as in [`keystream`]. The
/// contract of [`keystream`] holds, with `refill` and `extra` the outputs.
///
/// # Safety
/// `key` readable for 32 bytes, `refill` writable for 1024 bytes and starting at `key` or
/// not overlapping it, `extra` writable for 64 bytes and not overlapping the key or
/// `refill`.
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn refill_and_block(
    key: *const u8,
    counter: u64,
    refill: *mut u8,
    extra: *mut u8,
) {
    // As `keystream`, and rcx: `extra`, then groups of four left; r11: block 15's counter.
    core::arch::naked_asm!(
        load_key!(),
        "mov r11d, 15",
        group!((0, 1, 2, 3; "r11"; "rdx + 960"), (4, 5, 6, 7; "rsi"; "rcx")),
        "mov esi, 12\nadd rdx, 768",
        group_of_three!(),
        "mov ecx, 3",
        "2:\nsub rsi, 4\nsub rdx, 256",
        group_of_four!(),
        "dec ecx\njnz 2b",
        clear_and_return!(),
        constants = sym CONSTANTS,
    );
}
