//! The ChaCha20 block function (RFC 8439, section 2.3) in plain Rust, written to be read
//! against the RFC rather than to be fast, in D. J. Bernstein's original layout: constants
//! in words 0-3, the key in words 4-11, a 64-bit block counter in words 12-13 (low word
//! first) and a 64-bit nonce in words 14-15. For a counter below 2^32 and an all-zero nonce
//! this equals RFC 8439's layout with a 32-bit counter and an all-zero 96-bit nonce.
//!
//! It shares no code with fkrng's keystream and uses no ChaCha20 crate: the reference model
//! ([`crate::model`]) and the residue test compute with it, independently of what they check.

/// Key size in bytes.
pub const KEY_LEN: usize = 32;
/// One ChaCha20 block in bytes.
pub const BLOCK_LEN: usize = 64;
/// "expand 32-byte k", as four little-endian words.
const CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The quarter round on four words of the state (RFC 8439, section 2.1).
fn quarter_round(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(16);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(12);
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(8);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(7);
}

/// The 20 rounds of the block function for block `counter` under `key` and `nonce`, in
/// storage the caller owns: leaves the input state in `input` and the working state after
/// round 20 in `state` (the block is `state + input`, word by word); `each_round` sees the
/// working state after every one of the 20 rounds (a column round, then a diagonal round,
/// ten times). Nothing derived from the key is kept anywhere else but in registers and
/// this function's frame.
pub fn rounds(
    key: &[u8; KEY_LEN],
    counter: u64,
    nonce: &[u8; 8],
    input: &mut [u32; 16],
    state: &mut [u32; 16],
    mut each_round: impl FnMut(&[u32; 16]),
) {
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    input[..4].copy_from_slice(&CONSTANTS);
    for (w, bytes) in input[4..12].iter_mut().zip(key.as_chunks::<4>().0) {
        *w = word(bytes);
    }
    input[12] = counter as u32;
    input[13] = (counter >> 32) as u32;
    input[14] = word(&nonce[0..]);
    input[15] = word(&nonce[4..]);
    *state = *input;
    for _ in 0..10 {
        for round in [
            [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]],
            [[0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]],
        ] {
            for [a, b, c, d] in round {
                quarter_round(state, a, b, c, d);
            }
            each_round(state);
        }
    }
}

/// Keystream block `counter` under `key` and `nonce`: 64 bytes, the words of
/// `state + input` in little-endian order (RFC 8439, section 2.3).
pub fn block(key: &[u8; KEY_LEN], counter: u64, nonce: &[u8; 8]) -> [u8; BLOCK_LEN] {
    let (mut input, mut state) = ([0u32; 16], [0u32; 16]);
    rounds(key, counter, nonce, &mut input, &mut state, |_| ());
    let mut out = [0u8; BLOCK_LEN];
    for (bytes, (s, i)) in out
        .as_chunks_mut::<4>()
        .0
        .iter_mut()
        .zip(state.iter().zip(input))
    {
        bytes.copy_from_slice(&s.wrapping_add(i).to_le_bytes());
    }
    out
}
