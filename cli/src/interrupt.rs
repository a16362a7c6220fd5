//! Removal of the file a run created, when the run ends before that file is complete: by
//! an error (the drop of [`Created`]) or by SIGINT, SIGTERM, SIGHUP or SIGQUIT (a handler).
//!
//! Contracts:
//! - [`create`] makes the file with those signals blocked and records its path, device and
//!   inode before unblocking them, so no signal can end the run between the creation and
//!   the record (a signal that arrived meanwhile is handled right after).
//! - The path is removed only while it names the inode that was created (`lstat`, then
//!   `unlink`): a name another process put in its place is left alone. In a sticky
//!   directory no other user can rename the file away, so only its owner's own
//!   replacements fall in the gap between the two calls.
//! - A signal the tool was started with ignored (`nohup`'s SIGHUP, a background job's
//!   SIGINT) stays ignored.
//! - After the removal the handler restores the signal's default action and raises it
//!   again, so the run ends as that signal ends it (the caller sees the same status).
//! - [`Created::keep`] ends the record: a signal after it ends the run and leaves the file.
//!
//! SIGKILL cannot be caught, so a file being written when it arrives stays. The tool has
//! one thread, so blocking the signals on it blocks them for the process.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The signals that end a run and remove its unfinished file.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The path of the unfinished file (a string leaked by [`create`], never freed), or null.
static PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// The unfinished file's device and inode.
static DEV: AtomicU64 = AtomicU64::new(0);
static INO: AtomicU64 = AtomicU64::new(0);

/// A file this run created and has not completed; dropping it removes the file.
pub struct Created(());

impl Created {
    /// The file is complete: it stays, whatever ends the run from now on.
    pub fn keep(self) {
        PATH.store(std::ptr::null_mut(), Ordering::SeqCst);
        std::mem::forget(self);
    }
}

impl Drop for Created {
    /// Removes the unfinished file. The record is cleared only after the removal, so a
    /// signal in between finds it and removes (or finds already removed) the file.
    fn drop(&mut self) {
        unlink_if_created(PATH.load(Ordering::SeqCst));
        PATH.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// Runs `open`, which creates the file at `path` (with `O_EXCL`), with [`SIGNALS`] blocked,
/// and records the new file for removal.
///
/// # Errors
/// `InvalidInput` for a path with a NUL byte; otherwise the error of `open`, or of reading
/// the new file's inode (the file is removed again then).
pub fn create(path: &Path, open: impl FnOnce() -> io::Result<File>) -> io::Result<(File, Created)> {
    let name = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let blocked = signal_set();
    let mut before = signal_set();
    // SAFETY: both sets are initialised `sigset_t`s that live across the call.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut before) };
    install_handlers(&blocked);
    let created = open().and_then(|file| match file.metadata() {
        Ok(meta) => {
            DEV.store(meta.dev(), Ordering::SeqCst);
            INO.store(meta.ino(), Ordering::SeqCst);
            PATH.store(name.into_raw(), Ordering::SeqCst);
            Ok((file, Created(())))
        }
        Err(e) => {
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    });
    // SAFETY: `before` is the mask read above; a null old-mask pointer is allowed.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    created
}

/// [`SIGNALS`] as a signal set.
fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset takes valid signals.
    unsafe {
        let mut set = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Installs [`on_signal`] for each of [`SIGNALS`] that is not ignored, with all of them
/// blocked while it runs.
fn install_handlers(mask: &libc::sigset_t) {
    for signal in SIGNALS {
        // SAFETY: sigaction reads and writes `sigaction` structs that live across the
        // calls; the handler is an `extern "C" fn(c_int)`, as `sa_sigaction` without
        // SA_SIGINFO expects.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_mask = *mask;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Removes the unfinished file, if any, then ends the run by `signal`'s default action.
/// Calls only async-signal-safe functions.
extern "C" fn on_signal(signal: libc::c_int) {
    unlink_if_created(PATH.swap(std::ptr::null_mut(), Ordering::SeqCst));
    // SAFETY: signal and raise are async-signal-safe. `signal` is blocked while this
    // handler runs, so it is delivered, by its default action, when the handler returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Removes `path` (null: nothing) if it still names the recorded device and inode.
fn unlink_if_created(path: *mut libc::c_char) {
    if path.is_null() {
        return;
    }
    // SAFETY: a non-null `path` is the NUL-terminated string [`create`] leaked, which is
    // never freed; lstat writes one `stat` into `meta`, read only when it succeeded.
    unsafe {
        let mut meta: libc::stat = std::mem::zeroed();
        if libc::lstat(path, &mut meta) == 0
            && meta.st_dev as u64 == DEV.load(Ordering::SeqCst)
            && meta.st_ino as u64 == INO.load(Ordering::SeqCst)
        {
            libc::unlink(path);
        }
    }
}
