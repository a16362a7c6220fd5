//! README.md's Rust examples are example programs that cargo compiles (`examples/readme_*.rs`
//! and, for a crate on `rand_core` 0.6 under its own name, the package in
//! `examples/rand-core-06/`), shown verbatim: every Rust block of the README is one of these
//! files, whole, and every file is shown. So each block compiles when pasted into a
//! `src/main.rs` with the dependencies the README names, with no hidden lines and no renamed
//! crates. CI runs the programs (`.ci/run`, "ecosystem: examples").

const README: &str = include_str!("../README.md");

/// The examples shown in the README, by path.
const EXAMPLES: [(&str, &str); 6] = [
    (
        "examples/readme_library.rs",
        include_str!("../examples/readme_library.rs"),
    ),
    (
        "examples/readme_seeded.rs",
        include_str!("../examples/readme_seeded.rs"),
    ),
    (
        "examples/readme_aead.rs",
        include_str!("../examples/readme_aead.rs"),
    ),
    (
        "examples/readme_keys.rs",
        include_str!("../examples/readme_keys.rs"),
    ),
    (
        "examples/rand-core-06/src/main.rs",
        include_str!("../examples/rand-core-06/src/main.rs"),
    ),
    (
        "examples/readme_rustls.rs",
        include_str!("../examples/readme_rustls.rs"),
    ),
];

/// The bodies of the README's ```` ```rust ```` blocks, in order.
fn rust_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in README.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(body), "```") => {
                blocks.push(std::mem::take(body));
                current = None;
            }
            (Some(body), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unterminated ```rust block");
    blocks
}

#[test]
fn every_rust_block_is_an_example_file() {
    let blocks = rust_blocks();
    for (i, block) in blocks.iter().enumerate() {
        assert!(
            EXAMPLES.iter().any(|(_, text)| text == block),
            "README's Rust block {} is not one of the example files:\n{block}",
            i + 1
        );
    }
    for (path, text) in EXAMPLES {
        assert!(
            blocks.iter().any(|b| b == text),
            "{path} is not shown verbatim in README.md"
        );
    }
}

#[test]
fn blocks_have_no_hidden_lines_or_renamed_crates() {
    for block in rust_blocks() {
        for line in block.lines() {
            assert!(
                !(line == "#" || line.starts_with("# ")),
                "a rustdoc-hidden line: {line}"
            );
            for renamed in ["aes_gcm_010", "ed25519_dalek_2", "rand_08", "rand_09"] {
                assert!(!line.contains(renamed), "a renamed crate: {line}");
            }
        }
    }
}
