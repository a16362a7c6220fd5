//! The kernel's `getrandom` in the vDSO (Linux 6.11 and later; here x86-64 with glibc),
//! for a new thread's first seed once the process has seeded by the system call.
//!
//! The vDSO function (`__vdso_getrandom`, version `LINUX_2.6`, `lib/vdso/getrandom.c` and
//! `Documentation/ABI` of the kernel) answers from the kernel's generator without entering
//! the kernel: it keeps a ChaCha20 key of its own in an opaque state that the caller maps,
//! takes a new key from the kernel (one `getrandom` system call) whenever the kernel's
//! generator has moved on (the kernel reseeds at least every 60 seconds, and at once on a
//! VM generation change), and erases each key and every byte it hands out, as fkrng's own
//! generator does. A warm state serves a 36-byte seed in about 100 ns, where the system
//! call takes 600 ns or more; a new thread's first read is mostly that call.
//!
//! The states live in one page mapped as the vDSO asks (`MAP_DROPPABLE`: wiped in a forked
//! child, excluded from core dumps), up to 32 states of 144 bytes on 6.x kernels. A seed
//! leases one state for the duration of the call with a compare-and-swap on a claim word
//! in ordinary memory (the droppable page may be zeroed under memory pressure, so it holds
//! no claim), and gives it back after: no lock, so a signal handler's or a forked child's
//! read never waits. When every state is leased, the page cannot be mapped, or the vDSO
//! has no `getrandom`, the caller makes the system call as before.
//!
//! The function is looked up once, by a constructor in `.init_array` (`dlopen` and
//! `dlvsym` are not async-signal-safe, and a seed may be read in a signal handler), through
//! glibc's link map: `dlopen("linux-vdso.so.1", RTLD_NOLOAD)`. Static binaries and other C
//! libraries find none and keep the system call.

use crate::Error;
use core::cell::Cell;
use core::ffi::{c_uint, c_void};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// `ssize_t vgetrandom(void *buffer, size_t len, unsigned int flags, void *opaque_state,
/// size_t opaque_len)`: bytes written, or a negated error number.
type VGetrandom = unsafe extern "C" fn(*mut c_void, usize, c_uint, *mut c_void, usize) -> isize;

/// `struct vgetrandom_opaque_params` (`include/uapi/linux/random.h`): what a state needs.
#[repr(C)]
struct Params {
    size_of_opaque_state: u32,
    mmap_prot: u32,
    mmap_flags: u32,
    reserved: [u32; 13],
}

/// The page the states are carved from (x86-64 pages are 4 KiB).
const PAGE: usize = 4096;
/// States per page at most: one claim bit each.
const MAX_STATES: usize = 32;

/// The vDSO function's address, 0 where there is none.
static FUNCTION: AtomicUsize = AtomicUsize::new(0);
/// Bytes per opaque state, as the kernel gives them.
static STATE_LEN: AtomicUsize = AtomicUsize::new(0);
/// How the state page must be mapped.
static MAP_PROT: AtomicU32 = AtomicU32::new(0);
static MAP_FLAGS: AtomicU32 = AtomicU32::new(0);
/// States in the page (at most [`MAX_STATES`]).
static STATES: AtomicU32 = AtomicU32::new(0);
/// The state page, once mapped; never unmapped.
static STATE_PAGE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());
/// Set when mapping the page failed: no thread asks again.
static MAP_FAILED: AtomicBool = AtomicBool::new(false);
/// Bit `i` set: state `i` is leased to a call under way.
static CLAIMS: AtomicU32 = AtomicU32::new(0);

std::thread_local! {
    /// The state this thread's call under way has leased, plus 1 (0: none), for the fork
    /// child handler, which keeps that claim alone. No destructor: usable in teardown.
    static LEASED: Cell<u32> = const { Cell::new(0) };
}

/// Runs when the program (or the shared library holding fkrng) is loaded, before any of
/// its threads reads: finds the vDSO function and asks it how to make states.
#[used]
#[unsafe(link_section = ".init_array")]
static FIND_FUNCTION: extern "C" fn() = find_function;

extern "C" fn find_function() {
    // SAFETY: `dlopen` with RTLD_NOLOAD loads nothing: it returns glibc's handle of the
    // vDSO image the kernel mapped, or NULL. `dlvsym` takes NUL-terminated names; a
    // non-NULL result is the address of the kernel's `vgetrandom` with the signature of
    // `VGetrandom` (the `LINUX_2.6` version of the symbol is that ABI). Called with a NULL
    // buffer, length 0 and `opaque_len` of all ones, it only writes the parameters to
    // `params` and returns 0; it makes no system call. The handle is closed again (the
    // vDSO stays mapped for the process's lifetime, as does the function).
    unsafe {
        let vdso = libc::dlopen(
            c"linux-vdso.so.1".as_ptr(),
            libc::RTLD_NOLOAD | libc::RTLD_LAZY,
        );
        if vdso.is_null() {
            return;
        }
        let symbol = libc::dlvsym(vdso, c"__vdso_getrandom".as_ptr(), c"LINUX_2.6".as_ptr());
        libc::dlclose(vdso);
        if symbol.is_null() {
            return;
        }
        let function: VGetrandom = core::mem::transmute::<*mut c_void, VGetrandom>(symbol);
        let mut params: Params = core::mem::zeroed();
        let answered = function(
            core::ptr::null_mut(),
            0,
            0,
            (&mut params as *mut Params).cast(),
            usize::MAX,
        );
        let len = params.size_of_opaque_state as usize;
        if answered != 0 || len == 0 || len > PAGE {
            return;
        }
        STATE_LEN.store(len, Ordering::Relaxed);
        STATES.store((PAGE / len).min(MAX_STATES) as u32, Ordering::Relaxed);
        MAP_PROT.store(params.mmap_prot, Ordering::Relaxed);
        MAP_FLAGS.store(params.mmap_flags, Ordering::Relaxed);
        // Release: a thread that finds the function finds the parameters.
        FUNCTION.store(symbol as usize, Ordering::Release);
    }
}

/// Whether the vDSO offers `getrandom` to this process.
pub(crate) fn available() -> bool {
    // The reference keeps the constructor in the link (an unreferenced object of a library
    // may be left out with its `.init_array` entry).
    core::hint::black_box(&FIND_FUNCTION);
    FUNCTION.load(Ordering::Acquire) != 0
}

/// Fills `dest` from the vDSO: `None` where it has no `getrandom`, the state page cannot
/// be mapped, or every state is leased (the caller makes the system call instead). The
/// errors are the system call's (the vDSO makes it itself when it must): `EINTR` retries.
pub(super) fn fill(dest: &mut [u8]) -> Option<Result<(), Error>> {
    if !available() {
        return None;
    }
    // SAFETY: a non-zero `FUNCTION` was stored from a `VGetrandom` by `find_function`.
    let function =
        unsafe { core::mem::transmute::<usize, VGetrandom>(FUNCTION.load(Ordering::Acquire)) };
    let len = STATE_LEN.load(Ordering::Relaxed);
    let filled = leased(|state| {
        super::linux::fill_exact(dest, |chunk| {
            // SAFETY: `chunk` is valid for writes of its length; `state` is a state of the
            // kernel's size in memory mapped as the kernel asked, leased to this call alone.
            let n = unsafe { function(chunk.as_mut_ptr().cast(), chunk.len(), 0, state, len) };
            if n < 0 {
                // SAFETY: sets this thread's errno, as the system call would have.
                unsafe { *libc::__errno_location() = (-n) as i32 };
                return -1;
            }
            n
        })
    })?;
    #[cfg(any(test, feature = "test-hooks"))]
    if filled.is_ok() {
        crate::test_hooks::counters::count_vdso_fill();
    }
    Some(filled)
}

/// Runs `f` with a state leased to it alone (the first free one), and gives it back;
/// `None` when the page cannot be mapped or every state is leased.
fn leased<R>(f: impl FnOnce(*mut c_void) -> R) -> Option<R> {
    let page = state_page()?;
    let index = claim()?;
    let outer = LEASED.with(|l| l.replace(index + 1));
    // SAFETY: state `index` lies inside the mapped page (`index < STATES`, and STATES
    // states of `STATE_LEN` bytes fit in the page), so it does not cross a page boundary.
    let state = unsafe { page.add(index as usize * STATE_LEN.load(Ordering::Relaxed)) };
    let result = f(state.cast());
    LEASED.with(|l| l.set(outer));
    CLAIMS.fetch_and(!(1 << index), Ordering::Release);
    Some(result)
}

/// The state page, mapped at the first call (losers of a race unmap theirs).
fn state_page() -> Option<*mut u8> {
    let page = STATE_PAGE.load(Ordering::Acquire);
    if !page.is_null() {
        return Some(page);
    }
    if MAP_FAILED.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: an anonymous mapping with the kernel's protection and flags; no address is
    // given, so nothing existing is replaced.
    let new = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            PAGE,
            MAP_PROT.load(Ordering::Relaxed) as i32,
            MAP_FLAGS.load(Ordering::Relaxed) as i32,
            -1,
            0,
        )
    };
    if new == libc::MAP_FAILED {
        MAP_FAILED.store(true, Ordering::Relaxed);
        return None;
    }
    let new = new.cast::<u8>();
    match STATE_PAGE.compare_exchange(
        core::ptr::null_mut(),
        new,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => Some(new),
        Err(theirs) => {
            // SAFETY: mapped above and never published: nothing else refers to it.
            unsafe { libc::munmap(new.cast(), PAGE) };
            Some(theirs)
        }
    }
}

/// Leases the first free state, if any.
fn claim() -> Option<u32> {
    let states = STATES.load(Ordering::Relaxed);
    let all = if states >= 32 {
        u32::MAX
    } else {
        (1u32 << states) - 1
    };
    let mut claims = CLAIMS.load(Ordering::Relaxed);
    loop {
        let free = !claims & all;
        if free == 0 {
            return None;
        }
        let index = free.trailing_zeros();
        match CLAIMS.compare_exchange_weak(
            claims,
            claims | 1 << index,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return Some(index),
            Err(now) => claims = now,
        }
    }
}

/// In a forked child (the child handler): every claim cleared but the one of the forking
/// thread's call under way, if a fork from a signal handler interrupted one. The page
/// itself was wiped by the kernel, so every state takes a new key at its next use.
/// Async-signal-safe: a thread-local read and an atomic store.
pub(crate) fn reset_after_fork() {
    let keep = LEASED.try_with(Cell::get).unwrap_or(0);
    CLAIMS.store(
        if keep == 0 { 0 } else { 1 << (keep - 1) },
        Ordering::Relaxed,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use fkrng_test_support::child::{self, How};

    #[test]
    fn the_vdso_fills_requests_with_distinct_bytes() {
        if !fkrng_test_support::runner::vdso_getrandom_expected() {
            println!(
                "vdso: no vDSO getrandom expected here; found: {}",
                available()
            );
            return;
        }
        assert!(available(), "Linux 6.11 or later offers the vDSO getrandom");
        // The kernel's sizes on x86-64 since 6.11: 144-byte states, 28 to a page.
        assert_eq!(STATE_LEN.load(Ordering::Relaxed), 144);
        assert_eq!(STATES.load(Ordering::Relaxed), 28);
        let (mut a, mut b) = ([0u8; 36], [0u8; 36]);
        fill(&mut a).expect("a state").expect("bytes");
        fill(&mut b).expect("a state").expect("bytes");
        assert_ne!(a, [0; 36]);
        assert_ne!(a, b);
        // Large requests too (the vDSO loops over its batches).
        let mut big = vec![0u8; 100_000];
        fill(&mut big).expect("a state").expect("bytes");
        assert!(big.chunks(32).all(|c| c != [0; 32]));
    }

    /// Claims of the parent's other threads are cleared in a forked child; the forking
    /// thread's own lease (a fork from a signal handler that interrupted a call) is kept.
    #[test]
    fn a_forked_child_keeps_only_the_forking_threads_lease() {
        if !available() {
            println!("vdso: no vDSO getrandom here; skipped");
            return;
        }
        // Registers the fork handlers.
        crate::fill(&mut [0u8; 16]);
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let claims_in_child = || {
            child::run(How::Fork, |pipe| {
                pipe.send(&CLAIMS.load(Ordering::Relaxed).to_le_bytes());
                0
            })
            .expect_success("forked child")
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                leased(|_| {
                    held.wait();
                    release.wait();
                })
                .expect("a state");
            });
            held.wait();
            // Checked once the other thread is released: a failure must not leave it
            // waiting (the scope would wait for it forever).
            let outcome = std::panic::catch_unwind(|| {
                assert_ne!(
                    CLAIMS.load(Ordering::Relaxed),
                    0,
                    "the other thread's lease"
                );
                let other = claims_in_child();
                let (own, kept) = leased(|_| {
                    let own = 1u32 << (LEASED.with(Cell::get) - 1);
                    (own, claims_in_child())
                })
                .expect("a state");
                (other, own, kept)
            });
            release.wait();
            let (other, own, kept) = outcome.unwrap_or_else(|e| std::panic::resume_unwind(e));
            assert_eq!(
                other,
                0u32.to_le_bytes(),
                "claims in a child of a fork while another thread held a state"
            );
            assert_eq!(
                kept,
                own.to_le_bytes(),
                "claims in a child of a fork during a lease"
            );
        });
    }
}
