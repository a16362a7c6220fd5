//! Link arguments of the shared library on Linux and Android: a soname, and `-z nodelete`,
//! which keeps the library mapped after `dlclose` (its fork handlers and thread-local
//! destructors stay registered with the C library and must never point into unmapped code).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfkrng_ffi.so");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}
