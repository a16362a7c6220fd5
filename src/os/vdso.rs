//! The vDSO's `getrandom` (x86-64 Linux 6.11+) for new threads' first seeds. Invariants: a
//! state serves one call at a time, leased by a claim bit ([`crate::claims`]) outside the
//! state page (which the kernel may drop); the function is found without `dlsym`.

use crate::claims;
use crate::error::Error;
use core::ffi::{c_uint, c_void};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, compiler_fence};

/// `vgetrandom(buffer, len, flags, opaque_state, opaque_len)`: bytes written, or -errno.
type VGetrandom = unsafe extern "C" fn(*mut c_void, usize, c_uint, *mut c_void, usize) -> isize;

/// The state page's size (an x86-64 page), and the most states it holds (claim bits).
const PAGE: usize = 4096;
const MAX_STATES: usize = 32;
/// The function's address; [`UNKNOWN`] before the lookup, [`NONE`] where there is none.
static FUNCTION: AtomicUsize = AtomicUsize::new(UNKNOWN);
const UNKNOWN: usize = 0;
const NONE: usize = 1;
/// The kernel's state size and mapping parameters, stored before [`FUNCTION`] (Release).
static STATE_LEN: AtomicUsize = AtomicUsize::new(0);
static MAP_PROT: AtomicU32 = AtomicU32::new(0);
static MAP_FLAGS: AtomicU32 = AtomicU32::new(0);
static STATES: AtomicU32 = AtomicU32::new(0);
/// The state page once mapped (unmapped by [`close`] only); a failed mapping is tried again.
static STATE_PAGE: AtomicPtr<u8> = AtomicPtr::new(null_mut());
/// The epoch each state was last zeroed in: a state leased in a later epoch (after a fork
/// or `reseed_all`) is zeroed first, so the vDSO takes a new key for it from the kernel.
static STAMPS: [AtomicU64; MAX_STATES] = [const { AtomicU64::new(0) }; MAX_STATES];
/// Bit `i` set: state `i` is leased to a call under way.
static CLAIMS: [AtomicUsize; 1] = [AtomicUsize::new(0)];

std::thread_local! {
    /// Leases under way on this thread (2 if a signal handler's interrupted one); no destructor.
    /// An atomic (relaxed) because a handler on this thread reads it (`reset_after_fork`).
    static LEASES: AtomicU32 = const { AtomicU32::new(0) };
}

/// The vDSO's `getrandom`, looked up at the first call and remembered.
pub(crate) fn function() -> Option<VGetrandom> {
    let mut found = FUNCTION.load(Ordering::Acquire);
    if found == UNKNOWN {
        found = find_function().unwrap_or(NONE);
        FUNCTION.store(found, Ordering::Release);
    }
    // SAFETY: any value but NONE is the address of the vDSO's `vgetrandom`, of ABI `VGetrandom`.
    (found != NONE).then(|| unsafe { core::mem::transmute::<usize, VGetrandom>(found) })
}

/// Finds the function and stores the state parameters it gives.
fn find_function() -> Option<usize> {
    // SAFETY: no preconditions; gives the vDSO image's address (mapped for life) or 0.
    let image = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    let image = core::num::NonZeroUsize::new(image)?.get();
    // SAFETY: `image` is the vDSO's ELF image, as `lookup` requires.
    let address = unsafe { lookup(image, b"__vdso_getrandom", b"LINUX_2.6") }?;
    // `struct vgetrandom_opaque_params`: state size, mmap prot and flags, 13 reserved.
    let mut params = [0u32; 16];
    // SAFETY: `address` is the vDSO's `vgetrandom`. With a NULL buffer, length 0 and
    // `opaque_len` all ones it only writes the parameters to `params` and returns 0.
    let answered = unsafe {
        let vgetrandom = core::mem::transmute::<usize, VGetrandom>(address);
        vgetrandom(null_mut(), 0, 0, params.as_mut_ptr().cast(), usize::MAX)
    };
    let [len, prot, flags, ..] = params;
    let len = len as usize;
    if answered != 0 || len == 0 || len > PAGE {
        return None;
    }
    STATE_LEN.store(len, Ordering::Relaxed);
    STATES.store((PAGE / len).min(MAX_STATES) as u32, Ordering::Relaxed);
    MAP_PROT.store(prot, Ordering::Relaxed);
    MAP_FLAGS.store(flags, Ordering::Relaxed);
    Some(address)
}

#[repr(C)] // `Elf64_Verdef` (`elf.h`): vd_version, vd_flags, vd_ndx, vd_cnt, vd_hash, ...
struct VersionDefinition {
    _version_flags: [u16; 2],
    index: u16,
    _count_hash: [u16; 3],
    aux: u32,
    next: u32,
}

const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
/// `st_info` of a global function: `STB_GLOBAL << 4 | STT_FUNC`.
const GLOBAL_FUNCTION: u8 = (1 << 4) | 2;

/// The address of the defined global function `name@version` in the ELF image at `image`.
///
/// # Safety
/// `image` is a mapped, well-formed 64-bit ELF image of this machine, as the kernel maps
/// the vDSO: its headers and every table its dynamic section names lie in it.
unsafe fn lookup(image: usize, name: &[u8], version: &[u8]) -> Option<usize> {
    // SAFETY (every read below): the image's own headers and tables, at the offsets its
    // headers give (caller's contract), aligned as ELF gives them; the program headers
    // only once the header shows entries of our size; strings are NUL-terminated.
    unsafe {
        let header = &*(image as *const libc::Elf64_Ehdr);
        if header.e_ident[..5] != *b"\x7fELF\x02"
            || usize::from(header.e_phentsize) != size_of::<libc::Elf64_Phdr>()
        {
            return None;
        }
        let first = (image + header.e_phoff as usize) as *const libc::Elf64_Phdr;
        let headers = core::slice::from_raw_parts(first, usize::from(header.e_phnum));
        // Link-time addresses become run-time ones by this offset.
        let load = headers.iter().find(|h| h.p_type == libc::PT_LOAD)?;
        let bias = image
            .wrapping_add(load.p_offset as usize)
            .wrapping_sub(load.p_vaddr as usize);
        let dynamic = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC)?;
        let mut entry = bias.wrapping_add(dynamic.p_vaddr as usize) as *const [u64; 2];
        let (mut hash, mut strings, mut symbols, mut versions, mut definitions) = (0, 0, 0, 0, 0);
        loop {
            let [tag, value] = *entry;
            let at = bias.wrapping_add(value as usize);
            match tag {
                DT_NULL => break,
                DT_HASH => hash = at,
                DT_STRTAB => strings = at,
                DT_SYMTAB => symbols = at,
                DT_VERSYM => versions = at,
                DT_VERDEF => definitions = at,
                _ => {}
            }
            entry = entry.add(1);
        }
        if hash == 0 || strings == 0 || symbols == 0 {
            return None;
        }
        let text = |at: usize| core::ffi::CStr::from_ptr(at as *const core::ffi::c_char).to_bytes();
        // DT_HASH holds nbucket, then nchain: the number of symbols.
        let count = *(hash as *const u32).add(1) as usize;
        for i in 0..count {
            let symbol = &*(symbols as *const libc::Elf64_Sym).add(i);
            let defined = symbol.st_shndx != 0 && symbol.st_info == GLOBAL_FUNCTION;
            if !defined || text(strings + symbol.st_name as usize) != name {
                continue;
            }
            // The symbol's version: the definition of the index its version entry gives,
            // named by that definition's first auxiliary entry.
            let named = versions == 0 || definitions == 0 || {
                let wanted = *(versions as *const u16).add(i) & 0x7fff;
                let mut at = definitions;
                loop {
                    let definition = &*(at as *const VersionDefinition);
                    if definition.index == wanted {
                        let aux = at + definition.aux as usize;
                        break text(strings + *(aux as *const u32) as usize) == version;
                    }
                    if definition.next == 0 {
                        break false;
                    }
                    at += definition.next as usize;
                }
            };
            if named {
                return Some(bias.wrapping_add(symbol.st_value as usize));
            }
        }
        None
    }
}

/// Fills `dest` from the vDSO with a state zeroed in `epoch` ([`STAMPS`]), or the system call's
/// error; `None` where there is no vDSO `getrandom`, no state page or no free state.
pub(super) fn fill(dest: &mut [u8], epoch: u64) -> Option<Result<(), Error>> {
    let function = function()?;
    let len = STATE_LEN.load(Ordering::Relaxed);
    let filled = leased(|state, index| {
        if STAMPS[index].load(Ordering::Relaxed) != epoch {
            // SAFETY: the leased state's `len` bytes lie in the mapped page, this call's alone.
            // Zeroed, the vDSO keys it afresh from the kernel (as after `MAP_DROPPABLE`).
            unsafe { core::ptr::write_bytes(state.cast::<u8>(), 0, len) };
            STAMPS[index].store(epoch, Ordering::Relaxed);
            crate::probe::count(crate::probe::Event::VdsoStateCleared);
        }
        super::entropy::fill_exact(dest, |chunk| {
            // SAFETY: `chunk` is valid for writes of its length; `state` is a state of the
            // kernel's size in memory mapped as the kernel asked, leased to this call alone.
            let n = unsafe { function(chunk.as_mut_ptr().cast(), chunk.len(), 0, state, len) };
            if n < 0 {
                // SAFETY: sets this thread's errno, as the system call would have.
                unsafe { *libc::__errno_location() = (-n) as i32 };
            }
            n.max(-1)
        })
    })?;
    if filled.is_ok() {
        crate::probe::count(crate::probe::Event::VdsoFill);
    }
    Some(filled)
}

/// Runs `f` with a free state leased to it alone, and its index; `None` without a free state.
fn leased<R>(f: impl FnOnce(*mut c_void, usize) -> R) -> Option<R> {
    let page = state_page()?;
    // Counted around claim and release, for a fork from a signal handler in between; the
    // fences keep the count's stores outside the claim's and the release's.
    LEASES.with(|l| l.store(l.load(Ordering::Relaxed) + 1, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
    let states = STATES.load(Ordering::Relaxed) as usize;
    let result = claims::claim(&CLAIMS, states).map(|index| {
        // SAFETY: `index < STATES`, and STATES states of `STATE_LEN` bytes fit in the
        // mapped page, so state `index` lies inside it.
        let state = unsafe { page.add(index * STATE_LEN.load(Ordering::Relaxed)) };
        let result = f(state.cast(), index);
        claims::release(&CLAIMS, index);
        result
    });
    compiler_fence(Ordering::SeqCst);
    LEASES.with(|l| l.store(l.load(Ordering::Relaxed) - 1, Ordering::Relaxed));
    result
}

/// At the process's first read: looks the function up and maps the state page, so that no
/// later thread's read makes a mapping (a sandbox installed after one read, which may list
/// the `mmap` flags it allows, never meets `MAP_DROPPABLE`). A failed mapping is tried
/// again at a later first read.
pub(super) fn prepare() {
    if function().is_some() {
        let _ = state_page();
    }
}

/// The state page, mapped at the first call (the losers of a race unmap theirs).
fn state_page() -> Option<*mut u8> {
    let page = STATE_PAGE.load(Ordering::Acquire);
    if !page.is_null() {
        return Some(page);
    }
    let prot = MAP_PROT.load(Ordering::Relaxed) as i32;
    let flags = MAP_FLAGS.load(Ordering::Relaxed) as i32;
    // SAFETY: an anonymous mapping with the kernel's protection and flags and no address
    // hint, so nothing existing is replaced.
    let new = unsafe { libc::mmap(null_mut(), PAGE, prot, flags, -1, 0) };
    if new == libc::MAP_FAILED {
        return None;
    }
    let new = new.cast::<u8>();
    match STATE_PAGE.compare_exchange(null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(new),
        Err(theirs) => {
            // SAFETY: mapped above and never published: nothing else refers to it.
            unsafe { libc::munmap(new.cast(), PAGE) };
            Some(theirs)
        }
    }
}

/// Unmaps the state page unless a state is leased, sealing the claims first (later seeds take
/// the system call). At unload or exit, while other threads may still seed.
pub(crate) fn close() {
    let page =
        claims::seal(&CLAIMS, MAX_STATES).then(|| STATE_PAGE.swap(null_mut(), Ordering::AcqRel));
    if let Some(page) = page.filter(|p| !p.is_null()) {
        // SAFETY: the page `state_page` published; sealed, no state of it is in use or can be.
        unsafe { libc::munmap(page.cast(), PAGE) };
    }
}

/// In a forked child: clears the claims (the parent's other threads are gone) unless the
/// fork interrupted a lease of this thread, whose claim is unknown; then every claim stays,
/// those states unused, never shared. Async-signal-safe: a thread-local read, a store.
pub(crate) fn reset_after_fork() {
    if LEASES.try_with(|l| l.load(Ordering::Relaxed)).unwrap_or(1) == 0 {
        claims::reset(&CLAIMS, None);
    }
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
                function().is_some()
            );
            return;
        }
        assert!(
            function().is_some(),
            "Linux 6.11 or later offers the vDSO getrandom"
        );
        // The kernel's sizes on x86-64 since 6.11: 144-byte states, 28 to a page.
        assert_eq!(STATE_LEN.load(Ordering::Relaxed), 144);
        assert_eq!(STATES.load(Ordering::Relaxed), 28);
        let (mut a, mut b) = ([0u8; 36], [0u8; 36]);
        fill(&mut a, 1).expect("a state").expect("bytes");
        fill(&mut b, 1).expect("a state").expect("bytes");
        assert_ne!(a, [0; 36]);
        assert_ne!(a, b);
        // Large requests too (the vDSO loops over its batches).
        let mut big = vec![0u8; 100_000];
        fill(&mut big, 1).expect("a state").expect("bytes");
        assert!(big.chunks(32).all(|c| c != [0; 32]));
    }

    /// A state is zeroed before its first use in each epoch, and only then: after a fork or
    /// `reseed_all` no vDSO state from before serves a seed.
    #[test]
    fn a_state_is_cleared_once_per_epoch() {
        if function().is_none() {
            println!("vdso: no vDSO getrandom here; skipped");
            return;
        }
        let cleared = || crate::probe::total(crate::probe::Event::VdsoStateCleared);
        let stamped = |epoch| {
            STAMPS
                .iter()
                .filter(|s| s.load(Ordering::Relaxed) == epoch)
                .count()
        };
        // Epochs no process reaches, so that other tests' leases never share them.
        let mut seed = [0u8; 36];
        for epoch in [u64::MAX - 7, u64::MAX - 6] {
            let before = cleared();
            fill(&mut seed, epoch).expect("a state").expect("bytes");
            assert_eq!(stamped(epoch), 1, "one state stamped with the new epoch");
            assert!(
                cleared() > before,
                "the state was cleared for the new epoch"
            );
        }
    }

    /// The index of a state leased by [`leased`].
    fn index_of(state: *mut c_void) -> usize {
        (state as usize - STATE_PAGE.load(Ordering::Relaxed) as usize)
            / STATE_LEN.load(Ordering::Relaxed)
    }

    /// Claims of the parent's other threads are cleared in a forked child; when the fork
    /// interrupts a lease of the forking thread's own, every claim stays.
    #[test]
    fn a_forked_child_clears_other_threads_claims_unless_it_forked_during_a_lease() {
        if function().is_none() {
            println!("vdso: no vDSO getrandom here; skipped");
            return;
        }
        // Registers the fork handlers.
        crate::fill(&mut [0u8; 16]);
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let claims_in_child = || {
            let bytes = child::run(How::Fork, |pipe| {
                pipe.send(&(CLAIMS[0].load(Ordering::Relaxed) as u32).to_le_bytes());
                0
            })
            .expect_success("forked child");
            u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
        };
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let mut index = 0;
                leased(|state, _| {
                    index = index_of(state);
                    held.wait();
                    release.wait();
                })
                .expect("a state");
                index
            });
            held.wait();
            // Checked once the other thread is released: a failure must not leave it
            // waiting (the scope would wait for it forever).
            let outcome = std::panic::catch_unwind(|| {
                let cleared = claims_in_child();
                let (own, kept) = leased(|state, _| {
                    let own = index_of(state);
                    (own, claims_in_child())
                })
                .expect("a state");
                (cleared, own, kept)
            });
            release.wait();
            let other = other.join().expect("the other thread");
            let (cleared, own, kept) = outcome.unwrap_or_else(|e| std::panic::resume_unwind(e));
            assert_eq!(
                cleared, 0,
                "claims in a child forked while another thread held a state"
            );
            let both = (1u32 << other) | (1 << own);
            assert_eq!(kept & both, both, "claims in a child forked during a lease");
        });
    }
}
