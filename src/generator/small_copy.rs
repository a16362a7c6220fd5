//! The small-read copy-and-zero (docs/DESIGN.md, "Speed").

/// Moves `src` into `dest` and zeroes `src` with two overlapping fixed-width chunks (head and
/// tail), not `memcpy` and `memset` calls. The caller guarantees `dest.len() == src.len() <= 64`.
#[inline(always)]
pub(super) fn take_small(dest: &mut [u8], src: &mut [u8]) {
    /// Moves and zeroes the first and the last `W` bytes of `src` (`W <= n <= 2 W`).
    #[inline(always)]
    fn head_tail<const W: usize>(dest: &mut [u8], src: &mut [u8]) {
        debug_assert!(W <= src.len() && src.len() <= 2 * W);
        let head: [u8; W] = *src.first_chunk().expect("n >= W");
        let tail: [u8; W] = *src.last_chunk().expect("n >= W");
        *dest.first_chunk_mut().expect("n >= W") = head;
        *dest.last_chunk_mut().expect("n >= W") = tail;
        *src.first_chunk_mut::<W>().expect("n >= W") = [0; W];
        *src.last_chunk_mut::<W>().expect("n >= W") = [0; W];
    }
    debug_assert!(dest.len() == src.len() && src.len() <= 64);
    match src.len() {
        32..=64 => head_tail::<32>(dest, src),
        16..=31 => head_tail::<16>(dest, src),
        8..=15 => head_tail::<8>(dest, src),
        4..=7 => head_tail::<4>(dest, src),
        2..=3 => head_tail::<2>(dest, src),
        1 => {
            dest[0] = src[0];
            src[0] = 0;
        }
        _ => {}
    }
}
