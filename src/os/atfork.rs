//! Fork handler registration.

/// A fork handler: an `extern "C"` function without arguments.
pub(crate) type Handler = extern "C" fn();

/// Registers `prepare`, `parent` and `child` with `pthread_atfork` (Unix); returns 0 or the
/// error number (`ENOMEM`). Elsewhere, and under Miri, there is no `fork` and this returns
/// 0 without registering.
#[cfg_attr(any(not(unix), miri), allow(unused_variables))]
pub(crate) fn register(prepare: Handler, parent: Handler, child: Handler) -> i32 {
    #[cfg(all(unix, not(miri)))]
    // SAFETY: the handlers are `extern "C"` functions without arguments that live for the
    // whole program; their own contracts make them safe in a forked child.
    return unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    #[cfg(any(not(unix), miri))]
    return 0;
}
