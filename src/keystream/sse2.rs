//! The SSE2 keystream kernel, in assembly, for x86-64 CPUs without AVX2 (SSE2 is in every
//! x86-64 CPU): one block in four registers, row `r` (words `4r..4r + 4`) in `xmm<4j + r>`
//! for block `j` of a group of up to three, the key's two rows in xmm12-xmm13 and xmm14-xmm15
//! free for the rotations. The columns of a block are its rows' lanes; `pshufd` turns its
//! diagonals into columns and back. Nothing is spilled: every write lands in a register or in
//! `out`, so no build of this crate leaves a key-derived word on the stack.

/// Always (SSE2 is in the x86-64 baseline), except under Miri, which runs no assembly.
#[inline(always)]
pub(super) fn detected() -> bool {
    !cfg!(miri)
}

/// "expand 32-byte k" (RFC 8439, section 2.3), the first row of every block.
#[repr(C, align(16))]
struct Sigma([u32; 4]);

static SIGMA: Sigma = Sigma(super::SIGMA);

/// One step of the quarter rounds on every block of a group at once: `a += b; d ^= a;
/// d <<<= 16; c += d; b ^= c; b <<<= 12; a += b; d ^= a; d <<<= 8; c += d; b ^= c; b <<<= 7`
/// (RFC 8439, section 2.1), each row a register, so four quarter rounds per block. The
/// rotations by 12, 8 and 7 go through xmm14 (shifted right) and xmm15 alternately; by 16,
/// word halves swap (`pshuflw`, `pshufhw`).
macro_rules! quarters {
    ($(($a:literal, $b:literal, $c:literal, $d:literal)),*) => { concat!(
        $("paddd xmm", $a, ", xmm", $b, "\npxor xmm", $d, ", xmm", $a, "\n",)*
        $("pshuflw xmm", $d, ", xmm", $d, ", 0xb1\npshufhw xmm", $d, ", xmm", $d, ", 0xb1\n",)*
        $("paddd xmm", $c, ", xmm", $d, "\npxor xmm", $b, ", xmm", $c, "\n",)*
        $(rotate!($b, 12, 20, 14),)*
        $("paddd xmm", $a, ", xmm", $b, "\npxor xmm", $d, ", xmm", $a, "\n",)*
        $(rotate!($d, 8, 24, 15),)*
        $("paddd xmm", $c, ", xmm", $d, "\npxor xmm", $b, ", xmm", $c, "\n",)*
        $(rotate!($b, 7, 25, 14),)*
    )};
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

/// A group of one to three blocks, each `(a, b, c, d; counter; out)`: its rows' registers,
/// the address of its 64-bit counter's source (`lea`), and where it is stored. The input
/// rows are the constants (at rax), the key (xmm12-xmm13) and the counter with the zero
/// nonce (`movq` clears the upper half); twenty rounds; the input added back, and the
/// stores. r8 and r9 are scratch; xmm14 and xmm15 end holding counters.
macro_rules! group {
    ($(($a:literal, $b:literal, $c:literal, $d:literal; $counter:literal; $out:literal)),*) => {
        concat!(
            $(
                "movdqa xmm", $a, ", xmmword ptr [rax]\nmovdqa xmm", $b, ", xmm12\n",
                "movdqa xmm", $c, ", xmm13\nlea r9, [", $counter, "]\nmovq xmm", $d, ", r9\n",
            )*
            "mov r8d, 10\n3:\n",
            quarters!($(($a, $b, $c, $d)),*),
            rows!(0x39, 0x4e, 0x93; $(($a, $b, $c, $d)),*),
            quarters!($(($a, $b, $c, $d)),*),
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

/// Blocks `rsi`, `rsi + 1`, `rsi + 2` into `rdx[.. 192]`.
macro_rules! group_of_three {
    () => {
        group!(
            (0, 1, 2, 3; "rsi"; "rdx"),
            (4, 5, 6, 7; "rsi + 1"; "rdx + 64"),
            (8, 9, 10, 11; "rsi + 2"; "rdx + 128")
        )
    };
}

/// Loads the key rows into xmm12-xmm13 and the constants' address into rax.
macro_rules! load_key {
    () => {
        concat!(
            "movdqu xmm12, xmmword ptr [rdi]\nmovdqu xmm13, xmmword ptr [rdi + 16]\n",
            "lea rax, [rip + {sigma}]\n",
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
/// `key` (eight little-endian words) to `out[.. 64 * blocks]`: groups of three, then one of
/// the one or two blocks left.
///
/// Every write lands in registers or in `out[.. 64 * blocks]`: no stack, no other memory
/// (the call's return address aside). The key is read before anything is stored, so `out`
/// may start at `key` (a refill). Every vector and general register it writes is
/// caller-saved in the System V ABI, which the call declares clobbered, and is cleared
/// before it returns.
///
/// # Safety
/// `key` readable for 32 bytes, `out` writable for `64 * blocks` bytes, `blocks >= 1`.
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn keystream(
    key: *const u8,
    counter: u64,
    out: *mut u8,
    blocks: usize,
) {
    // rdi: key, rsi: counter of the group, rdx: its output, rcx: blocks left, rax: constants,
    // r8: double rounds left, r9: a block's counter.
    core::arch::naked_asm!(
        load_key!(),
        "cmp rcx, 3\njb 5f",
        "2:",
        group_of_three!(),
        "add rsi, 3\nadd rdx, 192\nsub rcx, 3\ncmp rcx, 3\njae 2b",
        "5:\ntest rcx, rcx\njz 7f\ncmp rcx, 1\nje 6f",
        group!((0, 1, 2, 3; "rsi"; "rdx"), (4, 5, 6, 7; "rsi + 1"; "rdx + 64")),
        "jmp 7f\n6:",
        group!((0, 1, 2, 3; "rsi"; "rdx")),
        "7:",
        clear_and_return!(),
        sigma = sym SIGMA,
    );
}

/// Writes keystream blocks 0..16 under the key at `key` to `refill[.. 1024]` (it may start
/// at `key`) and block `counter` (any 64-bit counter) to `extra[.. 64]`, which rides along
/// block 15 in the last group. The contract of [`keystream`] holds, with `refill` and
/// `extra` the outputs.
///
/// # Safety
/// `key` readable for 32 bytes, `refill` writable for 1024 bytes, `extra` for 64 bytes and
/// not overlapping the key or `refill`.
#[unsafe(naked)]
pub(super) unsafe extern "sysv64" fn refill_and_block(
    key: *const u8,
    counter: u64,
    refill: *mut u8,
    extra: *mut u8,
) {
    // As `keystream`, and r10: `extra`, r11: its counter.
    core::arch::naked_asm!(
        load_key!(),
        "mov r10, rcx\nmov r11, rsi\nxor esi, esi\nmov ecx, 5",
        "2:",
        group_of_three!(),
        "add rsi, 3\nadd rdx, 192\ndec ecx\njnz 2b",
        group!((0, 1, 2, 3; "rsi"; "rdx"), (4, 5, 6, 7; "r11"; "r10")),
        clear_and_return!(),
        sigma = sym SIGMA,
    );
}
