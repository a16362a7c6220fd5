//! Fork handler registration.

/// A fork handler: an `extern "C"` function without arguments.
pub(crate) type Handler = extern "C" fn();

/// Registers the handlers with `pthread_atfork`: 0, or its error number (`ENOMEM`).
/// Without `fork` (not Unix, or Miri) this registers nothing and returns 0.
#[cfg_attr(any(not(unix), miri), allow(unused_variables))]
pub(crate) fn register(prepare: Handler, parent: Handler, child: Handler) -> i32 {
    #[cfg(all(unix, not(miri)))]
    // SAFETY: the handlers are argument-less `extern "C"` functions that live for the whole
    // program; their own contracts make them safe in a forked child.
    return unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    #[cfg(any(not(unix), miri))]
    return 0;
}
