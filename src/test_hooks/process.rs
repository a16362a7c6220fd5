//! Unit-test helpers that run code in a child process or a fresh test process, and the lock
//! that keeps epoch-sensitive tests apart from forking ones. Imports nothing of the
//! thread-local layer, so tests of lower layers may use it.

/// Keeps the process-wide epoch steady for the tests that count a state's reseeds. A
/// `fork()` in a parallel test bumps the epoch in this process too (the atfork prepare
/// handler), which would reseed their state mid-count: those tests hold this lock for
/// reading, and the tests that fork hold it for writing.
static EPOCH_USERS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by a test that counts reseeds: no fork starts in this process meanwhile.
pub(crate) fn steady_epoch() -> std::sync::RwLockReadGuard<'static, ()> {
    EPOCH_USERS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Held by a test around its `fork()`: waits for the reseed-counting tests to finish.
pub(crate) fn forking() -> std::sync::RwLockWriteGuard<'static, ()> {
    EPOCH_USERS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `child` in a child process made by `fork()` (atfork handlers run) or by a raw
/// `clone` system call (none run) and returns the 32 bytes it sends back through a pipe.
/// The child only reads the generator, writes and `_exit`s.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
pub(crate) fn in_child(raw_clone: bool, child: fn() -> Option<[u8; 32]>) -> [u8; 32] {
    use fkrng_test_support::child::{self, How};
    let _fork = forking();
    let how = if raw_clone { How::RawClone } else { How::Fork };
    let bytes = child::run(how, |pipe| match child() {
        Some(out) => {
            pipe.send(&out);
            0
        }
        None => 1,
    })
    .expect_success("a generator read in the child");
    bytes.try_into().expect("the child sends 32 bytes")
}

/// Marks a test binary run again for one test ([`in_new_process`]).
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
const IN_NEW_PROCESS: &str = "FKRNG_TEST_IN_NEW_PROCESS";

/// For a unit test that needs a process of its own (one whose fork handlers are not yet
/// registered, or one whose process-wide settings no other test shares). In the test
/// binary's usual run: runs the test `name` (its full path, as `--exact` takes it) again,
/// alone, in a new process (through the emulator that `FKRNG_TEST_RUNNER` names, as in
/// the runs for other architectures), asserts that it passed and returns its output. In
/// that new process: returns `None`, and the caller runs the test's body.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
pub(crate) fn in_new_process(name: &str) -> Option<String> {
    if std::env::var_os(IN_NEW_PROCESS).is_some() {
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let mut command = fkrng_test_support::runner::command(exe);
    let out = command
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(IN_NEW_PROCESS, "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{name} did not run: {text}");
    Some(text)
}
