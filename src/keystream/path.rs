//! The keystream path a build takes: its names, the build-time pin for tests, and the
//! public [`keystream_path`].

/// The keystream path that refills and direct fills take: one of fkrng's x86-64 kernels, the
/// `chacha20` crate, or (in builds with debug assertions or at opt-level 0) fkrng's
/// one-block plain-Rust code.
/// [`keystream_path`] names the one this build takes on this CPU. Every path gives the same
/// bytes; more may be added (for example for other architectures).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeystreamPath {
    /// fkrng's sixteen-block AVX-512 kernel (x86-64 CPUs with AVX-512F), with its
    /// eight-block AVX2 kernel for what is left of a fill after whole 16-block passes (1 KiB
    /// each) and its eight-block AVX-512 tail kernel for partial passes.
    Avx512,
    /// fkrng's eight-block AVX2 kernel (x86-64 CPUs with AVX2 but not AVX-512F), 512 bytes
    /// per pass.
    Avx2,
    /// The `chacha20` crate alone, with the backend it picks for itself (SSE2, AVX2 or, when
    /// built with `--cfg chacha20_avx512`, AVX-512 on x86-64; NEON on AArch64; plain Rust
    /// elsewhere): every target that is not x86-64, and x86-64 CPUs without AVX2.
    Portable,
    /// fkrng's ChaCha20 one block at a time in plain Rust (`keystream/small_stack.rs`),
    /// which needs little stack even unoptimised: builds with debug assertions (every
    /// Cargo profile at opt-level 0, such as a dependent's debug build), builds at
    /// opt-level 0 without them, and builds whose optimisation level fkrng's build script
    /// could not learn (no `OPT_LEVEL` from Cargo) take it unless a path is pinned,
    /// because unoptimised SIMD code needs more stack than a 16 KiB thread has.
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

// The build-time pin of the keystream path, for tests: `--cfg fkrng_keystream="avx512"`,
// `"avx2"` or `"portable"` in RUSTFLAGS (see docs/ASSURANCE.md). A pin to a kernel this
// target cannot have is a build error; one to a kernel this CPU lacks panics at the first
// refill (see `keystream_path`).
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

/// The keystream path fixed at build time by `--cfg fkrng_keystream="..."`, if any.
pub(super) const PINNED: Option<KeystreamPath> = if cfg!(fkrng_keystream = "avx512") {
    Some(KeystreamPath::Avx512)
} else if cfg!(fkrng_keystream = "avx2") {
    Some(KeystreamPath::Avx2)
} else if cfg!(fkrng_keystream = "portable") {
    Some(KeystreamPath::Portable)
} else {
    None
};

/// The keystream path that refills and direct fills take in this build on this CPU: the
/// widest kernel the CPU has (detected at run time with CPUID, cached by `cpufeatures`), or the one
/// pinned at build time with `--cfg fkrng_keystream="avx512"|"avx2"|"portable"` (a switch
/// for tests), or in builds with debug assertions or at opt-level 0 and no pin
/// [`KeystreamPath::SmallStack`]. `fkrng --version` prints it as `keystream: <name>`.
///
/// # Panics
/// Only in a build pinned to a kernel this CPU lacks (for example `avx512` on a CPU without
/// AVX-512F): the pin never falls back to another path, so that a test run meant for one
/// kernel cannot pass on another. Every read of such a build panics the same way.
#[inline]
pub fn keystream_path() -> KeystreamPath {
    super::dispatch::selected().path
}
