//! Seals a stream in 16 KiB chunks with AES-256-GCM, a fresh random 96-bit nonce per chunk,
//! then opens it again and compares. Sealing and opening work in fixed buffers: a counting
//! allocator checks that neither makes a heap allocation.
//!
//! ```text
//! cargo run --example seal_file_nonce            # a generated 1 MiB (+ 123 bytes) buffer
//! cargo run --example seal_file_nonce -- FILE    # FILE, sealed to a temporary file
//! ```
//!
//! Sealed format, one record per chunk:
//!
//! ```text
//! nonce (12 bytes) | length L (u32, little-endian, at most 16384) | ciphertext (L) | tag (16)
//! ```
//!
//! ending with a record of length 0. The associated data of record `i` is `i` as a u64
//! (little-endian) and a final-record flag byte, so records cannot be reordered, dropped,
//! or cut off after a complete record without the opening failing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::File;
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{AeadInOut, Generate, Key, KeyInit, Nonce, Tag};

/// Plaintext bytes per record: 16 KiB.
const CHUNK: usize = 16 * 1024;
/// Nonce (12 bytes) and length (4 bytes).
const HEADER: usize = 12 + 4;
/// AES-GCM tag: 16 bytes.
const TAG: usize = 16;
/// Records per key: one random 96-bit nonce each, at most 2^32 (NIST SP 800-38D).
const MAX_RECORDS: u64 = 1 << 32;

/// Counts heap allocations (`alloc` and `realloc`) of the whole program.
struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a counter is added.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Debug)]
enum Error {
    Io(io::Error),
    /// A record failed authentication, or the stream ended early or went on past its end.
    Tampered(u64),
    /// The key has sealed its 2^32 records.
    KeyUsedUp,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Tampered(i) => write!(f, "record {i} is forged, missing or out of place"),
            Error::KeyUsedUp => f.write_str("the key has sealed 2^32 records"),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

fn aad(index: u64, last: bool) -> [u8; 9] {
    let mut aad = [0u8; 9];
    aad[..8].copy_from_slice(&index.to_le_bytes());
    aad[8] = u8::from(last);
    aad
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Seals `input` into `output`; returns the number of records written, end record included.
fn seal(cipher: &Aes256Gcm, input: &mut impl Read, output: &mut impl Write) -> Result<u64, Error> {
    let mut record = [0u8; HEADER + CHUNK + TAG];
    let mut index = 0u64;
    loop {
        let n = read_up_to(input, &mut record[HEADER..HEADER + CHUNK])?;
        if index >= MAX_RECORDS {
            return Err(Error::KeyUsedUp);
        }
        // A fresh random nonce for every record: 12 bytes from the thread's generator.
        let nonce: [u8; 12] = fkrng::array();
        let (header, rest) = record.split_at_mut(HEADER);
        header[..12].copy_from_slice(&nonce);
        header[12..].copy_from_slice(&(n as u32).to_le_bytes());
        let (body, tail) = rest.split_at_mut(n);
        let tag = cipher
            .encrypt_inout_detached(
                &Nonce::<Aes256Gcm>::from(nonce),
                &aad(index, n == 0),
                body.into(),
            )
            .map_err(|_| Error::Tampered(index))?;
        tail[..TAG].copy_from_slice(&tag);
        output.write_all(&record[..HEADER + n + TAG])?;
        index += 1;
        if n == 0 {
            return Ok(index);
        }
    }
}

/// Opens a sealed stream and hands each chunk of plaintext to `sink`; returns the number of
/// records read, end record included.
fn open(
    cipher: &Aes256Gcm,
    input: &mut impl Read,
    mut sink: impl FnMut(&[u8]) -> Result<(), Error>,
) -> Result<u64, Error> {
    let mut record = [0u8; HEADER + CHUNK + TAG];
    let mut index = 0u64;
    loop {
        if read_up_to(input, &mut record[..HEADER])? != HEADER {
            return Err(Error::Tampered(index)); // cut off before the end record
        }
        let nonce: [u8; 12] = record[..12].try_into().expect("12-byte slice");
        let n = u32::from_le_bytes(record[12..HEADER].try_into().expect("4-byte slice")) as usize;
        if n > CHUNK {
            return Err(Error::Tampered(index));
        }
        let body_and_tag = &mut record[HEADER..HEADER + n + TAG];
        if read_up_to(input, body_and_tag)? != n + TAG {
            return Err(Error::Tampered(index));
        }
        let (body, tag) = body_and_tag.split_at_mut(n);
        let tag = Tag::<Aes256Gcm>::try_from(&*tag).expect("16-byte tag");
        cipher
            .decrypt_inout_detached(
                &Nonce::<Aes256Gcm>::from(nonce),
                &aad(index, n == 0),
                body.into(),
                &tag,
            )
            .map_err(|_| Error::Tampered(index))?;
        index += 1;
        if n == 0 {
            // Nothing may follow the end record.
            return match read_up_to(input, &mut record[..1])? {
                0 => Ok(index),
                _ => Err(Error::Tampered(index)),
            };
        }
        sink(body)?;
    }
}

/// Bytes of the sealed form of `len` plaintext bytes.
fn sealed_len(len: usize) -> usize {
    let records = len.div_ceil(CHUNK) + 1;
    len + records * (HEADER + TAG)
}

/// Runs `f` and returns its result with the number of heap allocations it made.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let out = f();
    (out, ALLOCATIONS.load(Ordering::Relaxed) - before)
}

fn run_buffer(cipher: &Aes256Gcm) -> Result<(), String> {
    let mut plain = vec![0u8; (1 << 20) + 123];
    fkrng::fill(&mut plain);
    let mut sealed = Vec::with_capacity(sealed_len(plain.len()));

    let (records, seal_allocs) = allocations(|| seal(cipher, &mut plain.as_slice(), &mut sealed));
    let records = records.map_err(|e| format!("seal: {e}"))?;
    if sealed.len() != sealed_len(plain.len()) {
        return Err(format!(
            "sealed {} bytes, expected {}",
            sealed.len(),
            sealed_len(plain.len())
        ));
    }

    let mut offset = 0;
    let (opened, open_allocs) = allocations(|| {
        open(cipher, &mut sealed.as_slice(), |chunk| {
            if plain.get(offset..offset + chunk.len()) != Some(chunk) {
                return Err(Error::Tampered(0));
            }
            offset += chunk.len();
            Ok(())
        })
    });
    let opened = opened.map_err(|e| format!("open: {e}"))?;
    if opened != records || offset != plain.len() {
        return Err("opened stream differs from the input".into());
    }
    println!(
        "sealed {} bytes in {records} records ({} bytes sealed), opened and compared: equal",
        plain.len(),
        sealed.len()
    );
    report_allocations(seal_allocs, open_allocs)?;

    // Tampering: a flipped ciphertext bit, a dropped end record, swapped records.
    let mut flipped = sealed.clone();
    flipped[HEADER + 5] ^= 1;
    let cut = &sealed[..sealed.len() - (HEADER + TAG)];
    let rec = HEADER + CHUNK + TAG;
    let mut swapped = sealed.clone();
    swapped[..2 * rec].rotate_left(rec);
    for (what, bytes) in [
        ("flipped bit", &flipped[..]),
        ("missing end", cut),
        ("swapped", &swapped[..]),
    ] {
        match open(cipher, &mut &bytes[..], |_| Ok(())) {
            Err(Error::Tampered(i)) => println!("{what}: rejected at record {i}"),
            other => return Err(format!("{what}: not rejected ({other:?})")),
        }
    }
    Ok(())
}

fn run_file(cipher: &Aes256Gcm, path: &str) -> Result<(), String> {
    let sealed_path = std::env::temp_dir().join(format!("fkrng-sealed-{}.bin", std::process::id()));
    let result = (|| {
        let mut input = File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut output =
            File::create(&sealed_path).map_err(|e| format!("{}: {e}", sealed_path.display()))?;
        let (records, seal_allocs) = allocations(|| seal(cipher, &mut input, &mut output));
        let records = records.map_err(|e| format!("seal: {e}"))?;

        let mut sealed = File::open(&sealed_path).map_err(|e| e.to_string())?;
        let mut original = File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut expected = [0u8; CHUNK];
        let mut total = 0u64;
        let (opened, open_allocs) = allocations(|| {
            open(cipher, &mut sealed, |chunk| {
                let got = read_up_to(&mut original, &mut expected[..chunk.len()])?;
                if got != chunk.len() || expected[..got] != *chunk {
                    return Err(Error::Tampered(0));
                }
                total += got as u64;
                Ok(())
            })
        });
        let opened = opened.map_err(|e| format!("open: {e}"))?;
        if opened != records
            || read_up_to(&mut original, &mut expected[..1]).map_err(|e| e.to_string())? != 0
        {
            return Err("opened stream differs from the file".into());
        }
        println!("sealed {path} ({total} bytes) in {records} records, opened and compared: equal");
        report_allocations(seal_allocs, open_allocs)
    })();
    let _ = std::fs::remove_file(&sealed_path);
    result
}

fn report_allocations(seal: usize, open: usize) -> Result<(), String> {
    println!("heap allocations while sealing: {seal}, while opening: {open}");
    if seal != 0 || open != 0 {
        return Err("sealing or opening allocated".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let key = Key::<Aes256Gcm>::generate_from_rng(&mut fkrng::rng());
    let cipher = Aes256Gcm::new(&key);
    let result = match std::env::args().nth(1) {
        Some(path) => run_file(&cipher, &path),
        None => run_buffer(&cipher),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seal_file_nonce: {e}");
            ExitCode::FAILURE
        }
    }
}
