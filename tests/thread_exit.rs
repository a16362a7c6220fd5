//! Every state a thread sets up is released at its exit by fkrng's `pthread` key: a thread
//! whose first read comes from a key destructor, after its thread-local destructors have
//! run, still returns its slot (1,000 such threads leave the pool's claimed slots where they
//! were, in one chunk), and without a key no state is set up at all.

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

/// Runs the two checks in order: the first needs a process in which fkrng has not yet
/// created its thread-exit key.
#[test]
fn thread_exit_releases_every_state_it_sets_up() {
    no_state_is_set_up_without_a_thread_exit_key();
    first_reads_in_key_destructors_return_their_slots();
}

/// With every `pthread` key taken before fkrng could create its own, a thread's read sets up
/// no state (nothing would release it) and takes the one-off path; once a key is free, the
/// next thread sets up a state.
fn no_state_is_set_up_without_a_thread_exit_key() {
    let mut keys = Vec::new();
    loop {
        let mut key = 0;
        // SAFETY: `key` is a valid place; the key has no destructor.
        if unsafe { libc::pthread_key_create(&mut key, None) } != 0 {
            break;
        }
        keys.push(key);
    }
    let set_up = counters::states_set_up();
    let one_offs = counters::one_off_reads_unavailable();
    let read = || {
        std::thread::spawn(fkrng::array::<16>)
            .join()
            .expect("thread")
    };
    assert_ne!(read(), [0; 16]);
    assert_eq!(counters::states_set_up() - set_up, 0, "states set up");
    assert_eq!(
        counters::one_off_reads_unavailable() - one_offs,
        1,
        "one-off reads"
    );
    for key in keys {
        // SAFETY: a key created above, with no destructor and no values left.
        assert_eq!(unsafe { libc::pthread_key_delete(key) }, 0);
    }
    assert_ne!(read(), [0; 16]);
    assert_eq!(
        counters::states_set_up() - set_up,
        1,
        "states set up once a key is free"
    );
    println!(
        "thread_exit: with every key taken, 0 states set up and 1 one-off read; with one free, 1 state"
    );
}

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
