//! A thread whose first read comes from a `pthread` key destructor, after its thread-local
//! destructors have run, still returns its state slot: 1,000 such threads leave the pool's
//! claimed slots where they were, in one chunk.

#![cfg(all(unix, fkrng_test_hooks))]

use fkrng::test_hooks::{counters, memory};
use std::sync::OnceLock;

static KEY: OnceLock<libc::pthread_key_t> = OnceLock::new();

/// The key's destructor: the thread's first fkrng read.
unsafe extern "C" fn read_at_exit(_: *mut libc::c_void) {
    let mut bytes = [0u8; 16];
    fkrng::fill(&mut bytes);
    assert_ne!(bytes, [0; 16]);
}

#[test]
fn first_reads_in_key_destructors_return_their_slots() {
    let key = *KEY.get_or_init(|| {
        let mut key = 0;
        // SAFETY: `key` is a valid place; the destructor lives for the whole program.
        assert_eq!(
            unsafe { libc::pthread_key_create(&mut key, Some(read_at_exit)) },
            0
        );
        key
    });
    let (_, claimed_before) = memory::pool_census();
    let set_up_before = counters::states_set_up();
    for _ in 0..10 {
        let threads: Vec<_> = (0..100)
            .map(|_| {
                std::thread::spawn(move || {
                    // SAFETY: a key created above; the value is never dereferenced.
                    unsafe { libc::pthread_setspecific(key, std::ptr::dangling()) };
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
    }
    let (chunks, claimed) = memory::pool_census();
    let set_up = counters::states_set_up() - set_up_before;
    println!(
        "thread_exit: 1000 threads read first in a key destructor: {set_up} states set up, {claimed} slots claimed after (before {claimed_before}), {chunks} chunks"
    );
    assert_eq!(
        set_up, 1000,
        "each thread set up a state in its key destructor"
    );
    assert_eq!(claimed, claimed_before, "slots left claimed");
    assert_eq!(chunks, 1, "chunks mapped");
}
