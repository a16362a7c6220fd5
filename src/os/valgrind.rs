//! Valgrind client requests (x86-64): helgrind and DRD are told not to check the state chunks,
//! fkrng's own memory, which threads hand over through the claim words (`crate::claims`), whose
//! release and acquire those tools do not see. Natively a request changes no register and no
//! memory (rotations of one register by 128 bits in all, an exchange of a register with itself).

/// helgrind's `VALGRIND_HG_DISABLE_CHECKING` and DRD's `ANNOTATE_BENIGN_RACE_SIZED` (the
/// codes of valgrind's `helgrind.h` and `drd.h`, a stable ABI).
const REQUESTS: [usize; 2] = [0x4847_0127, 0x4452_0002];

/// Stops helgrind and DRD from checking the `len` bytes at `addr`; no effect outside them.
pub(crate) fn untrack(addr: *const u8, len: usize) {
    for request in REQUESTS {
        let args = [request, addr as usize, len, 0, 0, 0];
        // SAFETY: valgrind's request sequence leaves `rdi` and `rbx` as they were; only `rdx`
        // (the result, default 0) and the flags change, and valgrind only reads `args`.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51", "xchg rbx, rbx",
                in("rax") args.as_ptr(), inout("rdx") 0usize => _, options(nostack),
            );
        }
    }
}
