//! Byte counts on the command line, spelled as GNU `head -c` and `dd` read them: `4096`,
//! `32B`, `16K` or `16KiB` (16 × 1024), `16KB` or `16kB` (16 × 1000), `1M`/`1MiB`, `1MB`, and
//! so on up to `E` (exa).

/// The accepted suffixes and their units. Single letters and `…iB` are powers of 1024, `…B`
/// powers of 1000 (GNU coreutils' reading); lowercase `k` is the only lowercase prefix, as
/// in GNU. `B` alone is one byte. GNU's `b` (512-byte blocks) is rejected rather than read
/// either way.
pub const SUFFIXES: [(&str, u64); 21] = [
    ("", 1),
    ("B", 1),
    ("K", 1 << 10),
    ("k", 1 << 10),
    ("KiB", 1 << 10),
    ("KB", 1_000),
    ("kB", 1_000),
    ("M", 1 << 20),
    ("MiB", 1 << 20),
    ("MB", 1_000_000),
    ("G", 1 << 30),
    ("GiB", 1 << 30),
    ("GB", 1_000_000_000),
    ("T", 1 << 40),
    ("TiB", 1 << 40),
    ("TB", 1_000_000_000_000),
    ("P", 1 << 50),
    ("PiB", 1 << 50),
    ("PB", 1_000_000_000_000_000),
    ("E", 1 << 60),
    ("EiB", 1 << 60),
];

/// Parses a byte count: a whole number of bytes followed by nothing or one of
/// [`SUFFIXES`], with no spaces (`EB`, 10^18, is also accepted). The result must fit in
/// `u64` and in `usize`.
///
/// # Errors
/// A short one-line message for empty input, signs, a character that is neither a digit
/// nor part of a suffix (named), unknown suffixes and counts too large for this platform.
pub fn parse_count(text: &str) -> Result<u64, String> {
    if text.is_empty() {
        return Err("empty count".into());
    }
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    // Bytes, not a slice: the first character may be more than one byte long.
    if digits.is_empty() && text.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
        match text.as_bytes()[0] {
            b'-' => return Err("a count cannot be negative".into()),
            b'+' => return Err("a count takes no sign".into()),
            _ => {}
        }
    }
    if digits.is_empty() {
        return Err(format!(
            "{text:?} is not a byte count (expected digits, e.g. 32 or 1MiB)"
        ));
    }
    if let Some(c) = suffix.chars().next().filter(|c| !c.is_ascii_alphabetic()) {
        let why = if c == '.' {
            "counts are whole bytes, not fractions"
        } else {
            "a count is digits and an optional suffix, e.g. 1000 or 1KiB"
        };
        return Err(format!("{text:?}: {c:?} cannot be in a count; {why}"));
    }
    let unit = match suffix {
        "EB" => 1_000_000_000_000_000_000,
        "b" => {
            return Err(format!(
                "{text:?}: 'b' is ambiguous (512-byte blocks in GNU tools); write bytes, \
                 e.g. {digits}B or a count without a suffix"
            ));
        }
        _ => match SUFFIXES.iter().find(|(s, _)| *s == suffix) {
            Some(&(_, unit)) => unit,
            None => {
                return Err(format!(
                    "unknown size suffix {suffix:?} (use K, M, G, T, P, E or KiB, MiB... for \
                     powers of 1024; KB, MB... for powers of 1000; B for bytes)"
                ));
            }
        },
    };
    let too_large = || format!("{text:?} is too large for this platform");
    let value: u64 = digits.parse().map_err(|_| too_large())?;
    let bytes = value.checked_mul(unit).ok_or_else(too_large)?;
    usize::try_from(bytes).map_err(|_| too_large())?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_count;

    #[test]
    fn accepts_gnu_spellings() {
        for (text, bytes) in [
            ("0", 0u64),
            ("32", 32),
            ("32B", 32),
            ("1K", 1024),
            ("1k", 1024),
            ("16KiB", 16384),
            ("1KB", 1000),
            ("1kB", 1000),
            ("2M", 2 << 20),
            ("2MiB", 2 << 20),
            ("2MB", 2_000_000),
            ("1G", 1 << 30),
            ("1GiB", 1 << 30),
            ("1GB", 1_000_000_000),
            ("1T", 1 << 40),
            ("1TB", 1_000_000_000_000),
            ("1P", 1 << 50),
            ("1PB", 1_000_000_000_000_000),
            ("15E", 15 << 60),
            ("18EB", 18_000_000_000_000_000_000),
            ("18446744073709551615", u64::MAX),
        ] {
            // A count above usize::MAX (32-bit targets) is refused.
            let want = match usize::try_from(bytes) {
                Ok(_) => Ok(bytes),
                Err(_) => Err(format!("{text:?} is too large for this platform")),
            };
            assert_eq!(parse_count(text), want, "{text}");
        }
    }

    #[test]
    fn rejects_bad_counts() {
        for bad in [
            "",
            "x",
            "-1",
            "+1",
            "1.5",
            "1,5",
            "1 KiB",
            "é1",
            "\u{3fa}@3?",
            "1kib",
            "1KIB",
            "1b",
            "1m",
            "1g",
            "1Kb",
            "1iB",
            "KiB",
            "1MiBs",
            "1BB",
            "16E",
            "19EB",
            "18446744073709551616",
            "17179869184GiB",
            "99999999999999999999999",
        ] {
            let e = parse_count(bad).expect_err(bad);
            assert!(!e.is_empty() && !e.contains('\n'), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn signs_are_named() {
        assert_eq!(parse_count("-4").unwrap_err(), "a count cannot be negative");
        assert_eq!(
            parse_count("-4KiB").unwrap_err(),
            "a count cannot be negative"
        );
        assert_eq!(parse_count("+4").unwrap_err(), "a count takes no sign");
        assert!(
            parse_count("-")
                .unwrap_err()
                .contains("is not a byte count")
        );
    }
}
