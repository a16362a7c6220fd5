//! The kernel's `getrandom` in the vDSO (Linux 6.11 and later; used on x86-64),
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
//! The function is found at the first seed that may use it, in the vDSO image the kernel
//! maps into every process (its ELF header at `getauxval(AT_SYSINFO_EHDR)`), by reading
//! the image's dynamic symbol table ([`lookup`]): plain memory reads, so no dynamic loader
//! call (`dlsym` is not async-signal-safe, and a seed may be read in a signal handler),
//! nothing at process start, and the same in static binaries. Threads that race to look
//! it up find the same answer.

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

/// The vDSO function's address, [`UNKNOWN`] before the lookup, [`NONE`] where there is
/// none.
static FUNCTION: AtomicUsize = AtomicUsize::new(UNKNOWN);
const UNKNOWN: usize = 0;
const NONE: usize = 1;
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
    /// Leases under way on this thread, from just before the claim to just after its
    /// release (more than 1 when a signal handler's seed interrupted one), for the fork
    /// child handler. No destructor: usable in teardown.
    static LEASES: Cell<u32> = const { Cell::new(0) };
}

/// The vDSO's `getrandom`, looked up at the first call and remembered.
fn function() -> Option<VGetrandom> {
    let mut found = FUNCTION.load(Ordering::Acquire);
    if found == UNKNOWN {
        found = find_function().unwrap_or(NONE);
        // Release: a thread that finds the function finds the parameters stored before.
        FUNCTION.store(found, Ordering::Release);
    }
    if found == NONE {
        return None;
    }
    // SAFETY: any other value was stored from the address of the vDSO's `vgetrandom`,
    // whose ABI `VGetrandom` is (the `LINUX_2.6` version of the symbol).
    Some(unsafe { core::mem::transmute::<usize, VGetrandom>(found) })
}

/// Whether the vDSO offers `getrandom` to this process (looked up now if not yet).
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) fn available() -> bool {
    function().is_some()
}

/// Finds the function and asks it how states are made (stored for [`fill`]).
fn find_function() -> Option<usize> {
    // SAFETY: `getauxval` reads the auxiliary vector; AT_SYSINFO_EHDR is the address of
    // the vDSO's ELF image, mapped readable by the kernel for the process's lifetime, or 0.
    let image = unsafe { libc::getauxval(AT_SYSINFO_EHDR) } as usize;
    if image == 0 {
        return None;
    }
    // SAFETY: `image` is the vDSO's ELF image, as `lookup` requires.
    let address = unsafe { lookup(image, b"__vdso_getrandom", b"LINUX_2.6") }?;
    let mut params = Params {
        size_of_opaque_state: 0,
        mmap_prot: 0,
        mmap_flags: 0,
        reserved: [0; 13],
    };
    // SAFETY: `address` is the vDSO's `vgetrandom`. Called with a NULL buffer, length 0
    // and `opaque_len` of all ones, it only writes the parameters to `params` and returns
    // 0 (Linux 6.11 and later); it makes no system call.
    let answered = unsafe {
        core::mem::transmute::<usize, VGetrandom>(address)(
            core::ptr::null_mut(),
            0,
            0,
            (&mut params as *mut Params).cast(),
            usize::MAX,
        )
    };
    let len = params.size_of_opaque_state as usize;
    if answered != 0 || len == 0 || len > PAGE {
        return None;
    }
    STATE_LEN.store(len, Ordering::Relaxed);
    STATES.store((PAGE / len).min(MAX_STATES) as u32, Ordering::Relaxed);
    MAP_PROT.store(params.mmap_prot, Ordering::Relaxed);
    MAP_FLAGS.store(params.mmap_flags, Ordering::Relaxed);
    Some(address)
}

/// The program headers of the ELF image at `image`, if it is a 64-bit image whose program
/// headers have the size this machine's `ProgramHeader` has.
///
/// # Safety
/// `image` is a mapped, well-formed ELF image whose program headers lie in it, as the
/// kernel maps the vDSO.
unsafe fn program_headers<'a>(image: usize) -> Option<&'a [ProgramHeader]> {
    // SAFETY: the ELF header at the image's start and the program header table at the
    // offset it gives, 8-byte aligned as the format gives them, which the caller vouches
    // for; the table is read only once the header says it is 64-bit with entries of this
    // size.
    unsafe {
        let header = &*(image as *const Header);
        if header.ident[..5] != *b"\x7fELF\x02"
            || usize::from(header.program_header_size) != size_of::<ProgramHeader>()
        {
            return None;
        }
        Some(core::slice::from_raw_parts(
            (image + header.program_headers as usize) as *const ProgramHeader,
            usize::from(header.program_header_count),
        ))
    }
}

/// `AT_SYSINFO_EHDR` (`linux/auxvec.h`): the vDSO image's address.
const AT_SYSINFO_EHDR: libc::c_ulong = 33;

/// The parts of the 64-bit ELF types (`elf.h`) read here.
#[repr(C)]
struct Header {
    ident: [u8; 16],
    kind: u16,
    machine: u16,
    version: u32,
    entry: u64,
    program_headers: u64,
    section_headers: u64,
    flags: u32,
    header_size: u16,
    program_header_size: u16,
    program_header_count: u16,
}

#[repr(C)]
struct ProgramHeader {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    file_size: u64,
    memory_size: u64,
    align: u64,
}

#[repr(C)]
struct Symbol {
    name: u32,
    info: u8,
    other: u8,
    section: u16,
    value: u64,
    size: u64,
}

#[repr(C)]
struct VersionDefinition {
    version: u16,
    flags: u16,
    index: u16,
    count: u16,
    hash: u32,
    aux: u32,
    next: u32,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;

/// The address of the defined global function `name` of version `version` in the ELF
/// image at `image`, found through its `DT_HASH` table (which the kernel's vDSO images
/// carry), or `None`.
///
/// # Safety
/// `image` must be the address of a mapped, well-formed 64-bit ELF image of this machine,
/// as the kernel maps the vDSO: every table its dynamic section names lies in the image.
unsafe fn lookup(image: usize, name: &[u8], version: &[u8]) -> Option<usize> {
    // SAFETY (every read below): the reads are of the image's own headers and tables, at
    // the offsets and addresses its headers give, which the caller vouches for; each type
    // read has the alignment the ELF format gives it (8 bytes for headers, symbols and
    // dynamic entries, 4 for the hash table and version definitions, 2 for version
    // indices); strings are NUL-terminated in the string table.
    unsafe {
        let headers = program_headers(image)?;
        // Link-time addresses become run-time ones by this offset.
        let load = headers.iter().find(|h| h.kind == PT_LOAD)?;
        let bias = image
            .wrapping_add(load.offset as usize)
            .wrapping_sub(load.vaddr as usize);
        let dynamic = headers.iter().find(|h| h.kind == PT_DYNAMIC)?;
        let mut entry = bias.wrapping_add(dynamic.vaddr as usize) as *const [u64; 2];
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
            let symbol = &*(symbols as *const Symbol).add(i);
            if symbol.section == 0
                || symbol.info & 0xf != STT_FUNC
                || symbol.info >> 4 != STB_GLOBAL
                || text(strings + symbol.name as usize) != name
            {
                continue;
            }
            // Its version: the definition whose index the symbol's version entry names,
            // whose first auxiliary entry (vda_name, vda_next) names the version.
            if versions != 0 && definitions != 0 {
                let wanted = *(versions as *const u16).add(i) & 0x7fff;
                let mut at = definitions;
                let named = loop {
                    let definition = &*(at as *const VersionDefinition);
                    if definition.index == wanted {
                        let aux = at + definition.aux as usize;
                        break text(strings + *(aux as *const u32) as usize) == version;
                    }
                    if definition.next == 0 {
                        break false;
                    }
                    at += definition.next as usize;
                };
                if !named {
                    continue;
                }
            }
            return Some(bias.wrapping_add(symbol.value as usize));
        }
        None
    }
}

/// Fills `dest` from the vDSO: `None` where it has no `getrandom`, the state page cannot
/// be mapped, or every state is leased (the caller makes the system call instead). The
/// errors are the system call's (the vDSO makes it itself when it must): `EINTR` retries.
pub(super) fn fill(dest: &mut [u8]) -> Option<Result<(), Error>> {
    let function = function()?;
    let len = STATE_LEN.load(Ordering::Relaxed);
    let filled = leased(|state| {
        super::entropy::fill_exact(dest, |chunk| {
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
    if filled.is_ok() {
        crate::probe::count(crate::probe::Event::VdsoFill);
    }
    Some(filled)
}

/// Runs `f` with a state leased to it alone (the first free one), and gives it back;
/// `None` when the page cannot be mapped or every state is leased.
fn leased<R>(f: impl FnOnce(*mut c_void) -> R) -> Option<R> {
    let page = state_page()?;
    // Counted before the claim and until after the release: a fork from a signal handler
    // anywhere in between leaves every claim in place in the child.
    LEASES.with(|l| l.set(l.get() + 1));
    let result = claim().map(|index| {
        // SAFETY: state `index` lies inside the mapped page (`index < STATES`, and STATES
        // states of `STATE_LEN` bytes fit in the page), so it does not cross a page
        // boundary.
        let state = unsafe { page.add(index as usize * STATE_LEN.load(Ordering::Relaxed)) };
        let result = f(state.cast());
        CLAIMS.fetch_and(!(1 << index), Ordering::Release);
        result
    });
    LEASES.with(|l| l.set(l.get() - 1));
    result
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

/// In a forked child (the child handler): the claims of the parent's other threads are
/// cleared, since those threads do not exist here; the page itself was wiped by the kernel,
/// so every state takes a new key at its next use. When the fork interrupted a lease of the
/// forking thread's own (a fork from a signal handler), which claim is that lease's is not
/// known, and every claim is left in place: those states go unused in this child, never
/// shared. Async-signal-safe: a thread-local read and an atomic store.
pub(crate) fn reset_after_fork() {
    if LEASES.try_with(Cell::get).unwrap_or(1) == 0 {
        CLAIMS.store(0, Ordering::Relaxed);
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

    /// The index of a state leased by [`leased`].
    fn index_of(state: *mut c_void) -> usize {
        (state as usize - STATE_PAGE.load(Ordering::Relaxed) as usize)
            / STATE_LEN.load(Ordering::Relaxed)
    }

    /// Claims of the parent's other threads are cleared in a forked child; when the fork
    /// interrupts a lease of the forking thread's own, every claim stays.
    #[test]
    fn a_forked_child_clears_other_threads_claims_unless_it_forked_during_a_lease() {
        if !available() {
            println!("vdso: no vDSO getrandom here; skipped");
            return;
        }
        // Registers the fork handlers.
        crate::fill(&mut [0u8; 16]);
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let claims_in_child = || {
            let bytes = child::run(How::Fork, |pipe| {
                pipe.send(&CLAIMS.load(Ordering::Relaxed).to_le_bytes());
                0
            })
            .expect_success("forked child");
            u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
        };
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let mut index = 0;
                leased(|state| {
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
                let (own, kept) = leased(|state| {
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
