//! The system calls of each phase of fkrng's life in a process, for sandbox authors:
//! `scripts/sandbox-syscalls.sh` runs this program under `strace -f` and reads the calls
//! between the markers it writes (`write(2, "phase NAME\n")`, made directly so that nothing
//! else runs between a marker and the phase).
//!
//! Phases, in order: `first-read` (the process's first 16-byte read), `thread-first-read`
//! (a new thread's first read, on that thread: a slot of the pool's first chunk, and the
//! vDSO's state page where its `getrandom` seeds the thread, mapped at this first use),
//! `steady` (1000 reads of 16 bytes on the main thread), `reseed`
//! (`fkrng::reseed()`), `fork-protection` (`fkrng::fork_protection()`, whose first call
//! checks wipe-on-fork), then `end`.

fn marker(name: &str) {
    let line = format!("phase {name}\n");
    // SAFETY: writes the bytes of `line`, which lives across the call, to stderr.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

fn main() {
    let mut buf = [0u8; 16];
    // The formatting machinery's first use happens before the first marker.
    marker("start");
    marker("first-read");
    fkrng::fill(&mut buf);
    marker("after-first-read");
    std::thread::spawn(|| {
        let mut buf = [0u8; 16];
        marker("thread-first-read");
        fkrng::fill(&mut buf);
        marker("after-thread-first-read");
        std::hint::black_box(buf);
    })
    .join()
    .unwrap();
    marker("steady");
    for _ in 0..1000 {
        fkrng::fill(&mut buf);
        std::hint::black_box(&buf);
    }
    marker("reseed");
    fkrng::reseed().expect("reseed");
    marker("fork-protection");
    let protection = fkrng::fork_protection();
    marker("end");
    println!("fork protection: {protection:?}");
}
