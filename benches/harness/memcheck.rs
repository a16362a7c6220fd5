//! A small program that exercises every entry point of the thread-local generator, for
//! memory checkers (`scripts/valgrind.sh` runs it under valgrind memcheck): `fill` of sizes
//! around the buffer and refill boundaries, `try_fill`, `array`, `u32`, `u64`, `rng()`,
//! `reseed`, `reseed_all`, 8 threads at once, a read from a thread-local destructor after
//! the thread's state is released, and a `fork` whose child reads too.
//!
//! It checks what it can see: outputs of different threads, of the parent and the child,
//! and before and after a reseed all differ. Exits with status 0 when all is well.

use rand_core::Rng;
use std::collections::HashSet;
use std::sync::mpsc;

fn distinct(label: &str, values: &[[u8; 32]]) {
    let set: HashSet<&[u8; 32]> = values.iter().collect();
    assert_eq!(set.len(), values.len(), "{label}: repeated 32-byte outputs");
}

struct ReadsOnDrop(mpsc::Sender<[u8; 32]>);

impl Drop for ReadsOnDrop {
    fn drop(&mut self) {
        // Runs during thread exit, possibly after the thread's state was released.
        let mut b = [0u8; 32];
        fkrng::fill(&mut b);
        let _ = self.0.send(b);
    }
}

thread_local! {
    static LATE: std::cell::RefCell<Option<ReadsOnDrop>> = const { std::cell::RefCell::new(None) };
}

fn worker(id: usize, late: mpsc::Sender<[u8; 32]>) -> Vec<[u8; 32]> {
    let mut out = Vec::new();
    for n in [
        0usize, 1, 31, 32, 33, 991, 992, 993, 1023, 1024, 1025, 1985, 70_000,
    ] {
        let mut b = vec![0u8; n];
        fkrng::fill(&mut b);
        if n >= 32 {
            out.push(b[..32].try_into().unwrap());
        }
    }
    let mut b = [0u8; 32];
    fkrng::try_fill(&mut b).expect("OS random source");
    out.push(b);
    out.push(fkrng::array());
    let words = [fkrng::u64(), fkrng::u64(), fkrng::u64(), fkrng::u64()];
    let mut w = [0u8; 32];
    for (c, v) in w.as_chunks_mut::<8>().0.iter_mut().zip(words) {
        c.copy_from_slice(&v.to_le_bytes());
    }
    out.push(w);
    let mut rng = fkrng::rng();
    let mut r = [0u8; 32];
    rng.fill_bytes(&mut r);
    out.push(r);
    assert_ne!(fkrng::u32(), fkrng::u32(), "thread {id}");
    fkrng::reseed().expect("OS random source");
    out.push(fkrng::array());
    LATE.with(|l| *l.borrow_mut() = Some(ReadsOnDrop(late)));
    out
}

fn main() {
    let (late_tx, late_rx) = mpsc::channel();
    let threads: Vec<_> = (0..8)
        .map(|id| {
            let late = late_tx.clone();
            std::thread::spawn(move || worker(id, late))
        })
        .collect();
    drop(late_tx);
    let mut all: Vec<[u8; 32]> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("worker thread"))
        .collect();
    let late: Vec<[u8; 32]> = late_rx.iter().collect();
    assert_eq!(late.len(), 8, "every thread-local destructor read");
    all.extend(late);
    fkrng::reseed_all();
    all.push(fkrng::array());
    distinct("threads", &all);

    // fork: the child's first read must differ from the parent's next read.
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only reads from the generator, writes to a pipe and exits with
    // `_exit`; the generator's fork handling is what is under test.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let b: [u8; 32] = fkrng::array();
        // SAFETY: writes 32 bytes from a live array to the pipe, then exits without
        // running the parent's atexit handlers.
        unsafe {
            libc::write(fds[1], b.as_ptr().cast(), 32);
            libc::_exit(0);
        }
    }
    let parent: [u8; 32] = fkrng::array();
    let mut child = [0u8; 32];
    // SAFETY: reads at most 32 bytes into a live 32-byte array.
    let n = unsafe { libc::read(fds[0], child.as_mut_ptr().cast(), 32) };
    let mut status = 0;
    // SAFETY: waits for the child made above.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(n, 32, "child wrote its bytes");
    assert_ne!(parent, child, "child repeated the parent's stream");
    assert!(!all.contains(&child), "child repeated earlier output");
    println!(
        "memcheck: {} distinct 32-byte outputs from 8 threads, destructors and a fork child",
        all.len() + 1
    );
}
