//! The AArch64 NEON kernel: ChaCha20 in one `asm!` block whose every write lands in registers
//! or in the blocks it fills. Four blocks a pass in the vertical layout (register `v<i>` holds
//! word `i` of the four blocks), the key, constants and counters held in registers across
//! passes; a 4 x 4 transposition per row of words before the stores.
//!
//! Registers: v0-v15 the working state, v16-v19 scratch, v20 the byte table of the rotation
//! by 8, v21 the constants, v22-v23 the key, v24-v25 the counters' low and high words per
//! lane, v26 the counter step (4); x0-x5 the arguments, the round count and the table.
//! Loads and stores are byte-wise (`.16b`), so the words are little-endian on either byte
//! order.

use core::arch::asm;

/// The rotation-by-8 byte table for `tbl` (each 32-bit word's bytes 3, 0, 1, 2), the
/// constants "expand 32-byte k" (RFC 8439, section 2.3) and the lane offsets 0, 1, 2, 3 of
/// the counter (little-endian words), in that order.
static TABLES: [u8; 48] = *b"\x03\x00\x01\x02\x07\x04\x05\x06\x0b\x08\x09\x0a\x0f\x0c\x0d\x0e\
    expand 32-byte k\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00";

/// Four quarter rounds at once on the columns or diagonals `(a, b, c, d, t)` of the state,
/// `t` a scratch register: the rotations by 16 (`rev32`) and 12, then by 8 (`tbl`) and 7.
macro_rules! quarter_rounds {
    ($($q:tt),*) => { concat!(
        half_round!(["rev32 v", ".8h, v", ".8h"], 12, 20; $($q),*),
        half_round!(["tbl v", ".16b, {{v", ".16b}}, v20.16b"], 7, 25; $($q),*),
    )};
}

/// Half of four quarter rounds: `a += b; d ^= a; d = rotate(d); c += d; b ^= c;
/// b <<<= l` (`r` = 32 - `l`), the rotation of `d` being the line `p0 d p1 d p2`.
macro_rules! half_round {
    ([$p0:literal, $p1:literal, $p2:literal], $l:literal, $r:literal;
     $(($a:literal, $b:literal, $c:literal, $d:literal, $t:literal)),*) => { concat!(
        $("add v", $a, ".4s, v", $a, ".4s, v", $b, ".4s\n",)*
        $("eor v", $d, ".16b, v", $d, ".16b, v", $a, ".16b\n",)*
        $($p0, $d, $p1, $d, $p2, "\n",)*
        $("add v", $c, ".4s, v", $c, ".4s, v", $d, ".4s\n",)*
        $("eor v", $t, ".16b, v", $b, ".16b, v", $c, ".16b\n",)*
        $("shl v", $b, ".4s, v", $t, ".4s, #", $l, "\n",)*
        $("sri v", $b, ".4s, v", $t, ".4s, #", $r, "\n",)*
    )};
}

/// Transposes words `a..a + 4` (`a`, `b`, `c`, `d`) of the four blocks in place, through
/// v16-v19, and adds the row `add` of the initial state (words 0-11, the same in each block):
/// afterwards register `a + j` holds those four words of block `j`.
macro_rules! transpose {
    ($a:literal, $b:literal, $c:literal, $d:literal $(, $add:literal)?) => { concat!(
        "zip1 v16.4s, v", $a, ".4s, v", $b, ".4s\nzip2 v17.4s, v", $a, ".4s, v", $b, ".4s\n",
        "zip1 v18.4s, v", $c, ".4s, v", $d, ".4s\nzip2 v19.4s, v", $c, ".4s, v", $d, ".4s\n",
        "zip1 v", $a, ".2d, v16.2d, v18.2d\nzip2 v", $b, ".2d, v16.2d, v18.2d\n",
        "zip1 v", $c, ".2d, v17.2d, v19.2d\nzip2 v", $d, ".2d, v17.2d, v19.2d\n",
        $("add v", $a, ".4s, v", $a, ".4s, v", $add, ".4s\nadd v", $b, ".4s, v", $b, ".4s, v", $add,
          ".4s\nadd v", $c, ".4s, v", $c, ".4s, v", $add, ".4s\nadd v", $d, ".4s, v", $d, ".4s, v",
          $add, ".4s\n",)?
    )};
}

/// One line of `op` per register number: `op v<n><rest>`.
macro_rules! each {
    ($op:literal, $rest:literal; $($n:literal)*) => { concat!($($op, " v", $n, $rest, "\n",)*) };
}

/// The whole kernel (see [`keystream`]) between the template lines `before` and `after`,
/// with further operands or options `extra`.
macro_rules! kernel {
    ($key:expr, $counter:expr, $out:expr, $blocks:expr;
     $before:expr, $after:expr; $($extra:tt)*) => {
        asm!(
            $before,
            // The key first: `out` may start at `key`.
            "ld1 {{v22.16b, v23.16b}}, [x0]",
            "ld1 {{v20.16b, v21.16b}}, [x5], #32",
            "ld1 {{v16.16b}}, [x5]",
            // Lane j's counter is `counter + j`, its carry into the high word a borrow of the
            // all-ones mask where the low word wrapped below j.
            "dup v24.4s, w1\nlsr x4, x1, #32\ndup v25.4s, w4\nadd v24.4s, v24.4s, v16.4s",
            "cmhi v16.4s, v16.4s, v24.4s\nsub v25.4s, v25.4s, v16.4s\nmovi v26.4s, #4",
            "2:",
            "dup v0.4s, v21.s[0]\ndup v1.4s, v21.s[1]\ndup v2.4s, v21.s[2]\ndup v3.4s, v21.s[3]",
            "dup v4.4s, v22.s[0]\ndup v5.4s, v22.s[1]\ndup v6.4s, v22.s[2]\ndup v7.4s, v22.s[3]",
            "dup v8.4s, v23.s[0]\ndup v9.4s, v23.s[1]\ndup v10.4s, v23.s[2]\ndup v11.4s, v23.s[3]",
            "mov v12.16b, v24.16b\nmov v13.16b, v25.16b\nmovi v14.2d, #0\nmovi v15.2d, #0",
            "mov w4, #10",
            "3:",
            quarter_rounds!(
                (0, 4, 8, 12, 16), (1, 5, 9, 13, 17), (2, 6, 10, 14, 18), (3, 7, 11, 15, 19)
            ),
            quarter_rounds!(
                (0, 5, 10, 15, 16), (1, 6, 11, 12, 17), (2, 7, 8, 13, 18), (3, 4, 9, 14, 19)
            ),
            "subs w4, w4, #1\nb.ne 3b",
            "add v12.4s, v12.4s, v24.4s\nadd v13.4s, v13.4s, v25.4s",
            transpose!(0, 1, 2, 3, 21), transpose!(4, 5, 6, 7, 22),
            transpose!(8, 9, 10, 11, 23), transpose!(12, 13, 14, 15),
            // The next pass's counters, with the carry as above.
            "add v24.4s, v24.4s, v26.4s\ncmhi v16.4s, v26.4s, v24.4s\nsub v25.4s, v25.4s, v16.4s",
            // Block j is v<j>, v<j + 4>, v<j + 8>, v<j + 12>: four whole blocks, or the last 1-3.
            "cmp x3, #4\nb.lo 4f",
            each!("st1 {{", ".16b}}, [x2], #16"; 0 4 8 12 1 5 9 13 2 6 10 14 3 7 11 15),
            "subs x3, x3, #4\nb.ne 2b\nb 5f",
            "4:",
            each!("st1 {{", ".16b}}, [x2], #16"; 0 4 8 12),
            "cmp x3, #1\nb.eq 5f",
            each!("st1 {{", ".16b}}, [x2], #16"; 1 5 9 13),
            "cmp x3, #2\nb.eq 5f",
            each!("st1 {{", ".16b}}, [x2], #16"; 2 6 10 14),
            "5:",
            each!("movi", ".2d, #0"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
            each!("movi", ".2d, #0"; 24 25 26),
            "mov x0, xzr\nmov x1, xzr\nmov x2, xzr\nmov x3, xzr\nmov x4, xzr\nmov x5, xzr",
            $after,
            inout("x0") $key => _, inout("x1") $counter => _, inout("x2") $out => _,
            inout("x3") $blocks => _, out("x4") _, inout("x5") &raw const TABLES => _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _,
            $($extra)*
        )
    };
}

/// Writes keystream blocks `counter .. counter + blocks` (64 bytes each; the 64-bit block
/// counter in words 12-13 wraps at 2^64; nonce words 14-15 zero) under the 32-byte key at
/// `key` (eight little-endian words) to `out[.. 64 * blocks]`.
/// Every write lands in registers or in `out[.. 64 * blocks]`: no stack, no other memory.
/// The key is read before anything is stored, so `out` may start at `key` (a refill).
/// Every vector and general register it writes is cleared before it returns, and declared
/// to the compiler as written.
/// Safety: `key` readable for 32 bytes, `out` writable for 64 * blocks bytes, blocks >= 1.
///
/// Inlined everywhere, so that no build gives it a frame of its own: the `asm!` block is the
/// whole computation, and the only memory it writes is `out`.
#[inline(always)]
pub(super) unsafe fn keystream(key: *const u8, counter: u64, out: *mut u8, blocks: usize) {
    debug_assert!(blocks >= 1, "no blocks asked for");
    // SAFETY: the caller makes `key` readable for 32 bytes and `out` writable for
    // `64 * blocks` bytes, blocks >= 1; the block reads those 32 bytes and `TABLES`, stores
    // `blocks` blocks from `out` on, touches no stack, and writes only declared registers.
    unsafe { kernel!(key, counter, out, blocks; "", ""; options(nostack)) }
}

#[cfg(test)]
mod tests;
