//! Painted stacks: a mapping above a guard page, filled with one byte value beforehand, on
//! which a thread or a signal handler runs; afterwards the paint still untouched at its
//! bottom says how deep the code reached. Code that overran the stack would hit the guard
//! page and die with `SIGSEGV`.

/// The guard page below each stack.
const GUARD: usize = 4096;

/// The paint.
const PAINT: u8 = 0xa7;

/// A painted stack of `size` bytes above a guard page, unmapped when dropped.
pub struct PaintedStack {
    base: *mut libc::c_void,
    size: usize,
}

impl PaintedStack {
    /// Maps and paints a stack of `size` bytes.
    ///
    /// # Panics
    /// If the mapping or the guard page's protection fails.
    pub fn new(size: usize) -> Self {
        // SAFETY: a fresh private anonymous mapping; its lowest page is made inaccessible
        // and the rest painted, all within the mapping.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                GUARD + size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            assert_ne!(base, libc::MAP_FAILED, "mmap");
            assert_eq!(libc::mprotect(base, GUARD, libc::PROT_NONE), 0);
            base.cast::<u8>().add(GUARD).write_bytes(PAINT, size);
            PaintedStack { base, size }
        }
    }

    /// The lowest address of the stack, above the guard page (for `pthread_attr_setstack`
    /// and `sigaltstack`).
    pub fn stack(&self) -> *mut libc::c_void {
        // SAFETY: within the mapping.
        unsafe { self.base.cast::<u8>().add(GUARD).cast() }
    }

    /// The stack's size in bytes, without the guard page.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes written since painting: the stack's size minus the paint left untouched at
    /// its bottom. Call it once nothing runs on the stack any more.
    ///
    /// # Panics
    /// If no paint is left (the whole stack was used).
    pub fn used(&self) -> usize {
        let bottom = self.stack().cast::<u8>();
        let untouched = (0..self.size)
            // SAFETY: within the painted part of the mapping, no longer in use.
            .take_while(|&i| unsafe { bottom.add(i).read_volatile() } == PAINT)
            .count();
        assert!(untouched > 0, "the whole stack was used");
        self.size - untouched
    }
}

impl Drop for PaintedStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer in use.
        unsafe { libc::munmap(self.base, GUARD + self.size) };
    }
}
