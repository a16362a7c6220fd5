//! The keystream paths ([`KeystreamPath`]) and the build-time pin of one, for tests. This
//! file names paths only; `dispatch.rs` maps them to kernels and picks one.

/// The ChaCha20 code that refills and direct fills run; [`keystream_path`] names the one
/// this build takes on this CPU. Every path writes the same bytes; more may be added.
///
/// [`keystream_path`]: crate::keystream_path
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeystreamPath {
    /// fkrng's AVX-512 kernel in assembly (16-block, 1 KiB passes and a last pass of any
    /// block count), on x86-64 CPUs with AVX-512F, in every build: it writes no stack.
    Avx512,
    /// fkrng's AVX2 kernel in assembly (8-block, 512-byte passes and a last pass of any
    /// block count), on x86-64 CPUs with AVX2 but not AVX-512F, in every build: it writes no
    /// stack.
    Avx2,
    /// On x86-64 CPUs without AVX2, fkrng's SSE2 kernel in assembly (4-block, 256-byte
    /// groups and a group of the one to three blocks left over); on AArch64, fkrng's NEON kernel in
    /// assembly (both in every build: they write no stack); on other targets the crate alone.
    Portable,
    /// fkrng's one-block plain-Rust ChaCha20 (`keystream/small_stack.rs`), on CPUs and
    /// targets without an assembly kernel (not x86-64, nor AArch64 with NEON), unless a path is pinned, in builds with debug
    /// assertions, at opt-level 0, or at a level the build
    /// script could not learn: unoptimised SIMD code needs more than a 16 KiB thread stack.
    SmallStack,
}

impl KeystreamPath {
    /// The lower-case name used by `fkrng --version` and by the `fkrng_keystream` build
    /// switch: `avx512`, `avx2` or `portable` (and `small-stack`, which is not a pin).
    pub const fn name(self) -> &'static str {
        match self {
            KeystreamPath::Avx512 => "avx512",
            KeystreamPath::Avx2 => "avx2",
            KeystreamPath::Portable => "portable",
            KeystreamPath::SmallStack => "small-stack",
        }
    }
}

impl core::fmt::Display for KeystreamPath {
    /// Writes [`KeystreamPath::name`].
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

// The pin, `--cfg fkrng_keystream="avx512"|"avx2"|"portable"` (docs/ASSURANCE.md): a pin to
// a kernel this target cannot have is a build error, one this CPU lacks a panic.
#[cfg(all(
    any(fkrng_keystream = "avx512", fkrng_keystream = "avx2"),
    not(target_arch = "x86_64")
))]
compile_error!("--cfg fkrng_keystream=\"avx512\" or \"avx2\" needs target_arch x86_64");
#[cfg(any(
    all(fkrng_keystream = "avx512", fkrng_keystream = "avx2"),
    all(fkrng_keystream = "avx512", fkrng_keystream = "portable"),
    all(fkrng_keystream = "avx2", fkrng_keystream = "portable")
))]
compile_error!("more than one --cfg fkrng_keystream value given");

/// The path pinned with `--cfg fkrng_keystream`, if any.
pub(super) const PINNED: Option<KeystreamPath> = if cfg!(fkrng_keystream = "avx512") {
    Some(KeystreamPath::Avx512)
} else if cfg!(fkrng_keystream = "avx2") {
    Some(KeystreamPath::Avx2)
} else if cfg!(fkrng_keystream = "portable") {
    Some(KeystreamPath::Portable)
} else {
    None
};
