//! The CLI's byte-count parser (cli/src/size.rs) on any string: it never panics, and
//! it accepts exactly the counts an independent reading of its grammar accepts, with the
//! same value (digits times the suffix's unit, computed in 128 bits).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../cli/src/size.rs"]
mod size;

/// The grammar: one or more ASCII digits, then nothing, `B`, or a prefix letter with
/// nothing, `iB` or `B` after it; the value must fit in u64 and usize.
fn oracle(text: &str) -> Option<u64> {
    let split = text.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return None;
    }
    // GNU's reading: a bare letter or `iB` after it is a power of 1024, `B` after it a
    // power of 1000; `k` is the one lowercase letter; `B` alone is a byte.
    let (letter, rest) = match suffix.char_indices().nth(1) {
        Some((i, _)) => suffix.split_at(i),
        None => (suffix, ""),
    };
    let power: u32 = match letter {
        "" => 0,
        "B" if rest.is_empty() => 0,
        "K" | "k" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    let unit: u128 = match rest {
        "" | "iB" if letter != "k" || rest.is_empty() => 1024u128.pow(power),
        "B" => 1000u128.pow(power),
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
