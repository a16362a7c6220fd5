//! Random AEAD nonces from fkrng: 96-bit nonces for AES-256-GCM with a per-key message
//! budget (NIST SP 800-38D: at most 2^32 messages per key with random nonces), 192-bit nonces
//! for XChaCha20-Poly1305, and what happens to nonces across `fork` and a snapshot restore.
//!
//! ```text
//! cargo run --example aead_nonce
//! ```

use std::collections::HashSet;
use std::process::ExitCode;

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, Generate, Key, KeyInit, Nonce, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// Messages allowed under one AES-GCM key with random 96-bit nonces (NIST SP 800-38D, 8.3).
const MAX_MESSAGES_PER_KEY: u64 = 1 << 32;

/// An AES-256-GCM key that counts the messages sealed under it.
struct GcmKey {
    cipher: Aes256Gcm,
    sealed: u64,
}

impl GcmKey {
    fn new() -> Self {
        let key = Key::<Aes256Gcm>::generate_from_rng(&mut fkrng::rng());
        GcmKey {
            cipher: Aes256Gcm::new(&key),
            sealed: 0,
        }
    }

    /// Seals `msg` under a fresh random 96-bit nonce; the nonce travels with the ciphertext.
    /// `None` once the key has sealed its 2^32 messages.
    fn seal(&mut self, aad: &[u8], msg: &[u8]) -> Option<([u8; 12], Vec<u8>)> {
        if self.sealed >= MAX_MESSAGES_PER_KEY {
            return None;
        }
        self.sealed += 1;
        let nonce: [u8; 12] = fkrng::array();
        let ct = self
            .cipher
            .encrypt(&Nonce::<Aes256Gcm>::from(nonce), Payload { msg, aad })
            .ok()?;
        Some((nonce, ct))
    }

    fn open(&self, nonce: &[u8; 12], aad: &[u8], ct: &[u8]) -> Option<Vec<u8>> {
        let nonce = Nonce::<Aes256Gcm>::from(*nonce);
        self.cipher.decrypt(&nonce, Payload { msg: ct, aad }).ok()
    }
}

fn gcm() -> Result<(), String> {
    let mut key = GcmKey::new();
    let mut nonces = HashSet::new();
    let n = 100_000;
    for i in 0..n {
        let msg = format!("record {i}");
        let (nonce, ct) = key.seal(b"v1", msg.as_bytes()).ok_or("key used up")?;
        if !nonces.insert(nonce) {
            return Err(format!("nonce repeated at message {i}"));
        }
        if i % 10_000 == 0 && key.open(&nonce, b"v1", &ct).as_deref() != Some(msg.as_bytes()) {
            return Err(format!("message {i} did not open"));
        }
    }
    println!(
        "AES-256-GCM: {n} messages sealed, {} distinct 96-bit nonces, {} of 2^32 used",
        nonces.len(),
        key.sealed
    );
    key.sealed = MAX_MESSAGES_PER_KEY;
    if key.seal(b"v1", b"one too many").is_some() {
        return Err("the key sealed more than 2^32 messages".into());
    }
    println!("AES-256-GCM: message 2^32 + 1 refused; a new key is needed");
    Ok(())
}

fn xchacha() -> Result<(), String> {
    let mut rng = fkrng::rng();
    let cipher = XChaCha20Poly1305::new(&chacha20poly1305::Key::generate_from_rng(&mut rng));
    let nonce = XNonce::generate_from_rng(&mut rng);
    let ct = cipher
        .encrypt(&nonce, b"no message count to keep".as_ref())
        .map_err(|e| e.to_string())?;
    let pt = cipher
        .decrypt(&nonce, ct.as_ref())
        .map_err(|e| e.to_string())?;
    if pt != b"no message count to keep" {
        return Err("XChaCha20-Poly1305 round trip failed".into());
    }
    println!(
        "XChaCha20-Poly1305: 192-bit nonce {}, sealed and opened {} bytes",
        hex(&nonce),
        pt.len()
    );
    Ok(())
}

/// Parent and child each draw a nonce right after `fork`; they must differ.
#[cfg(unix)]
fn fork() -> Result<(), String> {
    // Warm the parent's generator so that the child inherits a seeded, non-empty state.
    let _: [u8; 12] = fkrng::array();

    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two file descriptors for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err("pipe failed".into());
    }
    // SAFETY: this program has one thread here, so the child may run arbitrary code; it only
    // draws a nonce, writes it to the pipe and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        let nonce: [u8; 12] = fkrng::array();
        // SAFETY: `nonce` is 12 readable bytes; fds[1] is the pipe's write end.
        let n = unsafe { libc::write(fds[1], nonce.as_ptr().cast(), nonce.len()) };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if n == 12 { 0 } else { 1 }) };
    }
    let parent: [u8; 12] = fkrng::array();
    let mut child = [0u8; 12];
    // SAFETY: `child` is 12 writable bytes; fds[0] is the pipe's read end.
    let n = unsafe { libc::read(fds[0], child.as_mut_ptr().cast(), child.len()) };
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-pointer.
    unsafe {
        libc::waitpid(pid, &mut status, 0);
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    if n != 12 || status != 0 {
        return Err("the child did not report its nonce".into());
    }
    println!(
        "fork: parent's next nonce {}, child's first {} ({})",
        hex(&parent),
        hex(&child),
        if parent == child { "SAME" } else { "different" }
    );
    if parent == child {
        return Err("a forked child repeated its parent's nonce".into());
    }
    Ok(())
}

/// What a snapshot-restore hook does: `reseed_all` before the first nonce after the restore.
fn snapshot_restore() {
    fkrng::reseed_all();
    let nonce: [u8; 12] = fkrng::array();
    println!(
        "snapshot restore: reseed_all() called, next nonce {} comes from a fresh OS seed",
        hex(&nonce)
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn main() -> ExitCode {
    let mut steps: Vec<fn() -> Result<(), String>> = vec![gcm, xchacha];
    #[cfg(unix)]
    steps.push(fork);
    for step in steps {
        if let Err(e) = step() {
            eprintln!("aead_nonce: {e}");
            return ExitCode::FAILURE;
        }
    }
    snapshot_restore();
    ExitCode::SUCCESS
}
