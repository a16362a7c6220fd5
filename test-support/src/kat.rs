//! The known-answer vectors of `tests/data/fke-kat.txt`, parsed, with the hex and SHA-256
//! helpers that checking them needs.
//!
//! The file is a sequence of lines: `seed HEX` (a fresh generator from a 32-byte seed),
//! `fill N HEX` or `fill N sha256:HEX` (the next `N` bytes, given whole or as their
//! SHA-256 digest), `u32 V` and `u64 V` (the next word, in decimal); `#` starts a comment
//! line. The format and the generator of the vectors are stated in the file's header.

/// The vector file, as text.
pub const VECTORS: &str = include_str!("../../tests/data/fke-kat.txt");

/// What a `fill` line expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The bytes themselves.
    Bytes(Vec<u8>),
    /// The SHA-256 digest of the bytes.
    Sha256([u8; 32]),
}

/// One line of the vector file, other than a comment or a blank line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A fresh generator from this seed.
    Seed([u8; 32]),
    /// The next `len` bytes.
    Fill {
        /// How many bytes, 0 or more.
        len: usize,
        /// What they must be.
        expect: Expect,
    },
    /// The next 32-bit word.
    U32(u32),
    /// The next 64-bit word.
    U64(u64),
}

/// A step with where it stands in the file.
#[derive(Clone, Debug)]
pub struct Vector {
    /// Line number, from 1.
    pub line: usize,
    /// The line as written.
    pub text: &'static str,
    /// What the line asks for.
    pub step: Step,
}

impl Vector {
    /// `line N: TEXT`, for assertion messages.
    pub fn at(&self) -> String {
        format!("line {}: {}", self.line, self.text)
    }
}

/// Bytes from an even number of hex digits.
///
/// # Panics
/// On an odd length or a character that is not a hex digit.
pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// Every step of [`VECTORS`], in order.
///
/// # Panics
/// On a line the format above does not allow, naming it.
pub fn vectors() -> Vec<Vector> {
    let mut out = Vec::new();
    for (i, line) in VECTORS.lines().enumerate() {
        let text = line.trim_end_matches('\r');
        if text.starts_with('#') || text.trim().is_empty() {
            continue;
        }
        let at = || format!("line {}: {text}", i + 1);
        let mut parts = text.split_whitespace();
        let op = parts.next().unwrap();
        let arg = parts
            .next()
            .unwrap_or_else(|| panic!("no argument at {}", at()));
        let expect = parts.next().unwrap_or("");
        let step = match op {
            "seed" => Step::Seed(hex(arg).try_into().expect("32-byte seed")),
            "fill" => Step::Fill {
                len: arg.parse().unwrap_or_else(|_| panic!("length at {}", at())),
                expect: match expect.strip_prefix("sha256:") {
                    Some(digest) => Expect::Sha256(hex(digest).try_into().expect("digest")),
                    None => Expect::Bytes(hex(expect)),
                },
            },
            "u32" => Step::U32(arg.parse().unwrap_or_else(|_| panic!("u32 at {}", at()))),
            "u64" => Step::U64(arg.parse().unwrap_or_else(|_| panic!("u64 at {}", at()))),
            other => panic!("unknown vector op {other:?} at {}", at()),
        };
        out.push(Vector {
            line: i + 1,
            text,
            step,
        });
    }
    out
}

/// The SHA-256 digest of `data` (FIPS 180-4), enough for test data.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for chunk in msg.as_chunks::<64>().0 {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(chunk[4 * i..4 * i + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (o, w) in out.as_chunks_mut::<4>().0.iter_mut().zip(h) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}
