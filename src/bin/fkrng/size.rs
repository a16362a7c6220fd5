//! Byte counts on the command line: `4096`, `16KiB`, `1GiB` (powers of 1024) and `10k`,
//! `5M`, `1G` (powers of 1000).

/// Parses a byte count. Accepts a whole number of bytes followed by no suffix, `KiB`, `MiB`,
/// `GiB`, `TiB` (1024-based) or `k`, `M`, `G`, `T` (1000-based), with no spaces. The result
/// must fit in `u64` and in `usize`.
///
/// # Errors
/// A short message for empty input, signs, fractions, unknown suffixes and counts too large
/// for this platform.
pub fn parse_count(text: &str) -> Result<u64, String> {
    if text.is_empty() {
        return Err("empty count".into());
    }
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!(
            "{text:?} is not a byte count (expected digits, e.g. 32 or 1MiB)"
        ));
    }
    if suffix.starts_with(['.', ',']) {
        return Err(format!("{text:?}: counts are whole bytes, not fractions"));
    }
    let unit: u64 = match suffix {
        "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "unknown size suffix {suffix:?} (use KiB, MiB, GiB, TiB, k, M, G or T)"
            ));
        }
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
    fn accepts_units() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("32"), Ok(32));
        assert_eq!(parse_count("16KiB"), Ok(16384));
        assert_eq!(parse_count("1GiB"), Ok(1 << 30));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("5M"), Ok(5_000_000));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
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
            "1kib",
            "1KB",
            "KiB",
            "1MiBs",
            "18446744073709551616",
            "17179869184GiB",
            "99999999999999999999999",
        ] {
            assert!(parse_count(bad).is_err(), "{bad:?} accepted");
        }
    }
}
