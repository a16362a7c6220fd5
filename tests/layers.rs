//! The import structure of `src/`, against the layer line of docs/DESIGN.md
//! (`Layers (top to bottom): a + b, c, ...`, naming every top-level module; `lib` is
//! src/lib.rs):
//!
//! - no import circle between files, test code included (`tests.rs` files and modules
//!   declared under a test cfg), and none between top-level modules in production code;
//! - no production import from a lower layer to a higher one;
//! - no production import of test-only code (modules declared under `cfg(test)`,
//!   `cfg(fkrng_test_hooks)` or `cfg(fuzzing)`).
//!
//! An import is a path that starts with `crate::`, `super::` or `self::` (`use` groups
//! expanded), resolved to the longest module it names. Comments and `#[cfg(test)] mod`
//! blocks are left out of production code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct File {
    module: Module,
    text: String,
    test_only: bool,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(path: &Path, src: &Path) -> Module {
    let rel = path
        .strip_prefix(src)
        .expect("under src/")
        .with_extension("");
    let mut parts: Module = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("lib" | "mod")) {
        parts.pop();
    }
    parts
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text without `#[cfg(test)] mod name { ... }` blocks.
fn strip_test_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = rest[at + 12..].trim_start();
        let after = after.strip_prefix("pub(crate) ").unwrap_or(after);
        let is_block = after.starts_with("mod ")
            && after
                .find(['{', ';'])
                .is_some_and(|i| after.as_bytes()[i] == b'{');
        if !is_block {
            out.push_str(&rest[..at + 12]);
            rest = &rest[at + 12..];
            continue;
        }
        out.push_str(&rest[..at]);
        let open = at + 12 + (rest[at + 12..].len() - after.len()) + after.find('{').unwrap();
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            depth += match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            if depth == 0 {
                end = open + i + 1;
                break;
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every `crate::`/`super::`/`self::` path in `text`, with `{a, b::c}` groups expanded.
fn paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|p| text[i..].starts_with(p))
            && (i == 0 || !word(bytes[i - 1]) && bytes[i - 1] != b':');
        if !starts {
            i += 1;
            continue;
        }
        let (path, end) = path_at(text, i);
        out.extend(path);
        i = end.max(i + 1);
    }
    out
}

/// The paths of the path expression starting at `i`, and where it ends.
fn path_at(text: &str, mut i: usize) -> (Vec<String>, usize) {
    let bytes = text.as_bytes();
    let mut head = String::new();
    loop {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        head.push_str(&text[start..i]);
        if !text[i..].starts_with("::") {
            return (vec![head], i);
        }
        i += 2;
        if text[i..].starts_with('{') {
            let mut depth = 0;
            let mut end = i;
            for (k, c) in text[i..].char_indices() {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    end = i + k;
                    break;
                }
            }
            let inner = &text[i + 1..end];
            let mut out = Vec::new();
            for part in split_top(inner) {
                let part = part.split(" as ").next().unwrap_or("").trim();
                if part.is_empty() || part == "self" {
                    out.push(head.clone());
                } else {
                    for tail in path_at(part, 0).0 {
                        out.push(format!("{head}::{tail}"));
                    }
                }
            }
            return (out, end + 1);
        }
        head.push_str("::");
    }
}

fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn resolve(from: &Module, path: &str, known: &BTreeSet<Module>) -> Option<Module> {
    let mut segs = path.split("::").map(str::to_owned).peekable();
    let mut base = from.clone();
    if segs.peek().map(String::as_str) == Some("crate") {
        segs.next();
        base.clear();
    }
    for seg in segs {
        match seg.as_str() {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => base.push(seg),
        }
    }
    (0..=base.len())
        .rev()
        .map(|k| base[..k].to_vec())
        .find(|m| known.contains(m))
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The attributes (`#[...]`, possibly over several lines) and doc lines just before the
/// end of `text`, last first.
fn attributes_before(mut text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    loop {
        let t = text.trim_end();
        if t.ends_with(']') {
            let mut depth = 0;
            let mut start = None;
            for (i, c) in t.char_indices().rev() {
                depth += match c {
                    ']' => 1,
                    '[' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    start = Some(i);
                    break;
                }
            }
            let Some(open) = start.filter(|&i| i > 0 && t.as_bytes()[i - 1] == b'#') else {
                return out;
            };
            out.push(&t[open - 1..]);
            text = &t[..open - 1];
        } else if let Some(i) = t.rfind('\n').map(|i| i + 1).or(Some(0))
            && t[i..].trim_start().starts_with("///")
        {
            text = &t[..i];
        } else {
            return out;
        }
    }
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("::")
    }
}

fn top(m: &Module) -> String {
    m.first().cloned().unwrap_or_else(|| "lib".into())
}

/// The strongly connected components of more than one node: the import circles.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let (mut seen, mut stack) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(n) = stack.pop() {
            for next in edges.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|k| (k, reach(k))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (node, seen) in &reached {
        if !seen.contains(*node) || out.iter().any(|c| c.contains(*node)) {
            continue;
        }
        let circle = seen
            .iter()
            .filter(|m| reached.get(m).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        out.push(circle);
    }
    out
}

/// Every file of `src/`, its module, and whether it is test-only (a `tests.rs` file, or a module
/// declared under a test cfg, or inside one).
fn sources(src: &Path) -> Vec<File> {
    let mut list = Vec::new();
    rust_files(src, &mut list);
    let mut files: Vec<File> = Vec::new();
    let mut test_decls: BTreeSet<Module> = BTreeSet::new();
    for path in &list {
        let module = module_of(path, src);
        let raw = std::fs::read_to_string(path).expect("a source file");
        // Modules declared under a test cfg: `#[cfg(...test...)] mod name;`.
        for (at, _) in raw.match_indices("mod ") {
            let line_start = raw[..at].rfind('\n').map_or(0, |i| i + 1);
            let head = raw[line_start..at].trim();
            if !["", "pub", "pub(crate)"].contains(&head) {
                continue;
            }
            let Some(name) = raw[at + 4..]
                .split(';')
                .next()
                .filter(|n| is_ident(n.trim()))
            else {
                continue;
            };
            let attrs = attributes_before(&raw[..line_start]);
            let test_cfg = attrs.iter().any(|a| {
                a.starts_with("#[cfg(")
                    && !a.contains("not(test")
                    && ["(test", " test", "fkrng_test_hooks", "fuzzing"]
                        .iter()
                        .any(|t| a.contains(t))
            });
            if test_cfg {
                let mut m = module.clone();
                m.push(name.trim().to_owned());
                test_decls.insert(m);
            }
        }
        let is_tests_file = path.file_name().is_some_and(|n| n == "tests.rs");
        files.push(File {
            module,
            text: raw,
            test_only: is_tests_file,
        });
    }
    for f in &mut files {
        if test_decls.iter().any(|t| f.module.starts_with(t)) {
            f.test_only = true;
        }
    }
    files
}

#[test]
fn imports_point_down_the_declared_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let design = std::fs::read_to_string(root.join("docs/DESIGN.md")).expect("docs/DESIGN.md");
    let line = design
        .lines()
        .find_map(|l| {
            l.trim_matches(['`', ' '])
                .strip_prefix("Layers (top to bottom):")
        })
        .expect("DESIGN.md declares 'Layers (top to bottom): ...'");
    let mut layer = BTreeMap::new();
    for (i, slot) in line.trim_matches(['`', ' ', '.']).split(',').enumerate() {
        for m in slot.split('+') {
            layer.insert(m.trim().to_owned(), i);
        }
    }

    let files = sources(&src);
    let known: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let is_test = |m: &Module| files.iter().any(|f| &f.module == m && f.test_only);

    let mut file_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut top_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let (mut ups, mut into_tests) = (Vec::new(), Vec::new());
    for f in &files {
        let all = strip_comments(&f.text);
        let production = strip_test_blocks(&all);
        for (text, counted) in [(&all, false), (&production, true)] {
            for p in paths(text) {
                let Some(to) = resolve(&f.module, &p, &known) else {
                    continue;
                };
                if to == f.module {
                    continue;
                }
                file_edges
                    .entry(name(&f.module))
                    .or_default()
                    .insert(name(&to));
                if !counted || f.test_only {
                    continue;
                }
                if is_test(&to) {
                    into_tests.push(format!("{} -> {}", name(&f.module), name(&to)));
                    continue;
                }
                let (a, b) = (top(&f.module), top(&to));
                if a != b {
                    top_edges.entry(a.clone()).or_default().insert(b.clone());
                }
                if let (Some(la), Some(lb)) = (layer.get(&a), layer.get(&b))
                    && lb < la
                {
                    ups.push(format!("{} -> {}", name(&f.module), name(&to)));
                }
            }
        }
    }
    let tops: BTreeSet<String> = files
        .iter()
        .filter(|f| !f.test_only)
        .map(|f| top(&f.module))
        .collect();
    let unnamed: Vec<&String> = tops.iter().filter(|t| !layer.contains_key(*t)).collect();
    let file_circles = circles(&file_edges);
    let module_circles = circles(&top_edges);
    println!(
        "layers: {} files, {} top-level modules; file circles {:?}; module circles {:?}; \
         arrows up {ups:?}; into test code {into_tests:?}",
        files.len(),
        tops.len(),
        file_circles,
        module_circles
    );
    assert!(
        unnamed.is_empty(),
        "top-level modules missing from the layer line: {unnamed:?}"
    );
    assert!(
        file_circles.is_empty(),
        "import circles between files: {file_circles:?}"
    );
    assert!(
        module_circles.is_empty(),
        "import circles between modules: {module_circles:?}"
    );
    assert!(ups.is_empty(), "imports running up the layers: {ups:?}");
    assert!(
        into_tests.is_empty(),
        "production imports of test-only code: {into_tests:?}"
    );
}

/// The platform is chosen in the OS seam: outside `src/os` at most two production files name an
/// operating system or family in a `cfg` (or a path under `std::os`), so that a platform's
/// differences stay in one place (the one `cfg_if!` of `src/os.rs`).
#[test]
fn operating_systems_are_chosen_under_src_os() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = ["target_os", "target_family", "unix", "windows"];
    let mut choosing = Vec::new();
    for f in sources(&src) {
        if f.test_only || f.module.first().is_some_and(|m| m == "os") {
            continue;
        }
        let production = strip_test_blocks(&strip_comments(&f.text));
        let names_os = production.lines().any(|line| {
            line.contains("cfg")
                && names.iter().any(|n| {
                    line.match_indices(n).any(|(at, _)| {
                        let before = line[..at].chars().next_back();
                        let after = line[at + n.len()..].chars().next();
                        let ident =
                            |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                        !ident(before) && !ident(after)
                    })
                })
                || line.contains("std::os::")
        });
        if names_os {
            choosing.push(name(&f.module));
        }
    }
    println!("layers: files outside src/os that choose by operating system: {choosing:?}");
    assert!(
        choosing.len() <= 2,
        "more than two production files outside src/os choose by operating system: {choosing:?}"
    );
}
