//! The error type of the OS-backed API.

use core::fmt;

/// A failure of the operating system's random source, which fkrng seeds and reseeds from.
///
/// Returned by [`crate::try_fill`] and [`crate::reseed`] when the first seeding of a
/// thread, a reseed after `fork` or [`crate::reseed_all`], or an on-demand reseed cannot get
/// 32 fresh bytes from the OS. No output is produced in that case: fkrng never falls back
/// to an unseeded, all-zero or inherited key.
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub struct Error {
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `getrandom` (or its file fallback) reported an error.
    Os(getrandom::Error),
    /// The source reported success but delivered 32 zero bytes (an emulator or a
    /// fault-injecting tracer that skipped the call): no entropy was received.
    AllZero,
}

impl Error {
    pub(crate) const ALL_ZERO: Error = Error {
        kind: Kind::AllZero,
    };

    /// The raw OS error code (an `errno` value such as `EAGAIN`, `EPERM` or `ENOSYS` on
    /// Unix), when the OS gave one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self.kind {
            Kind::Os(e) => e.raw_os_error(),
            Kind::AllZero => None,
        }
    }
}

impl From<getrandom::Error> for Error {
    fn from(e: getrandom::Error) -> Self {
        Error { kind: Kind::Os(e) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Os(e) => write!(f, "the OS random source failed: {e}"),
            Kind::AllZero => f.write_str("the OS random source returned only zero bytes"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Os(e) => f.debug_tuple("Error").field(&e).finish(),
            Kind::AllZero => f.write_str("Error(AllZero)"),
        }
    }
}

impl std::error::Error for Error {}

/// An I/O error whose message names the OS random source (for example "the OS random
/// source failed: Resource temporarily unavailable (os error 11)") and whose kind is that
/// of the OS error code (`WouldBlock` for `EAGAIN`, `PermissionDenied` for `EPERM`,
/// `Unsupported` for `ENOSYS`) or `Other`. The [`Error`] itself, with its raw OS code, is
/// the I/O error's inner error (`get_ref`, `downcast`).
impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        let kind = e.raw_os_error().map_or(std::io::ErrorKind::Other, |code| {
            std::io::Error::from_raw_os_error(code).kind()
        });
        std::io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_names_the_source_and_keeps_the_error() {
        let e = Error::from(getrandom::Error::UNEXPECTED);
        let io = std::io::Error::from(e);
        assert_eq!(io.kind(), std::io::ErrorKind::Other);
        assert!(
            io.to_string().starts_with("the OS random source failed: "),
            "{io}"
        );
        let inner = io.get_ref().and_then(|i| i.downcast_ref::<Error>());
        assert_eq!(inner, Some(&e));
        let zero = std::io::Error::from(Error::ALL_ZERO);
        assert_eq!(zero.kind(), std::io::ErrorKind::Other);
        assert_eq!(
            zero.to_string(),
            "the OS random source returned only zero bytes"
        );
    }
}
