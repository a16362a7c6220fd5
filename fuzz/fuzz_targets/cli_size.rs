//! The CLI's byte-count parser (src/bin/fkrng/size.rs) on any string: it never panics, and
//! it accepts exactly the counts an independent reading of its grammar accepts, with the
//! same value (digits times the suffix's unit, computed in 128 bits).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/bin/fkrng/size.rs"]
mod size;

/// The grammar: one or more ASCII digits, then nothing or one of the eight suffixes; the
/// value must fit in u64 and usize.
fn oracle(text: &str) -> Option<u64> {
    let split = text.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let unit: u128 = match suffix {
        "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return None,
    };
    // Leading zeros do not change the value; more than 40 significant digits overflow.
    let significant = digits.trim_start_matches('0');
    if significant.len() > 40 {
        return None;
    }
    let value: u128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    let bytes = value.checked_mul(unit)?;
    let bytes = u64::try_from(bytes).ok()?;
    usize::try_from(bytes).ok()?;
    Some(bytes)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let got = size::parse_count(text);
    match (got, oracle(text)) {
        (Ok(v), Some(w)) => assert_eq!(v, w, "{text:?}"),
        (Err(msg), None) => {
            assert!(!msg.is_empty() && !msg.contains('\n'), "{text:?}: {msg:?}");
        }
        (got, want) => panic!("{text:?}: parser says {got:?}, grammar says {want:?}"),
    }
});
