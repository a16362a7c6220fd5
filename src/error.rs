//! The error type of the OS-backed API.

use core::fmt;

/// A failure of the operating system's random source, which fkrng seeds and reseeds from.
///
/// Returned by [`crate::try_fill`] and [`crate::reseed`] when the first seeding of a thread, a
/// reseed after `fork` or [`crate::reseed_all`], an on-demand reseed or a one-off read (in a
/// signal handler that interrupted a read, after the thread's state was released, when the
/// memory for it is refused) cannot get 32 fresh bytes from the OS, or when a thread's first
/// read cannot register the fork handler (`pthread_atfork` failed) that tells a forked child
/// to reseed. No output is produced then: fkrng never falls back
/// to an unseeded, all-zero or inherited key, nor to a state that a fork could duplicate unnoticed.
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub struct Error(Kind);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The `getrandom` crate (the OS source outside Linux and Android) failed.
    Os(getrandom::Error),
    /// The kernel's source failed with this `errno` (Linux and Android).
    #[allow(dead_code)] // made only by the kernel source, `os::entropy` (Linux and Android)
    Errno(i32),
    /// The source reported success but delivered 32 zero bytes: no entropy was received.
    AllZero,
    /// The source reported more bytes than were asked for, or none.
    #[allow(dead_code)] // as `Errno`
    BadLength,
    /// `/dev/urandom` did not open the kernel's random character device.
    #[allow(dead_code)] // as `Errno`
    NotRandomDevice,
    /// `pthread_atfork` failed with this `errno`: a forked child could not be told to reseed.
    ForkHandler(i32),
}

impl Error {
    pub(crate) const ALL_ZERO: Error = Error(Kind::AllZero);
    #[allow(dead_code)] // as `Kind::Errno`
    pub(crate) const BAD_LENGTH: Error = Error(Kind::BadLength);
    #[allow(dead_code)] // as `Kind::Errno`
    pub(crate) const NOT_RANDOM_DEVICE: Error = Error(Kind::NotRandomDevice);

    /// The kernel source's failure with `errno` `code`.
    #[allow(dead_code)] // as `Kind::Errno`
    pub(crate) const fn from_errno(code: i32) -> Error {
        Error(Kind::Errno(code))
    }

    /// `pthread_atfork` failed with `errno` `code`.
    pub(crate) const fn fork_handler(code: i32) -> Error {
        Error(Kind::ForkHandler(code))
    }

    /// The raw OS error code (an `errno` value such as `EAGAIN`, `EPERM` or `ENOSYS` on
    /// Unix, `ENOMEM` when the fork handler could not be registered), when the OS gave one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self.0 {
            Kind::Os(e) => e.raw_os_error(),
            Kind::Errno(code) | Kind::ForkHandler(code) => Some(code),
            Kind::AllZero | Kind::BadLength | Kind::NotRandomDevice => None,
        }
    }
}

impl From<getrandom::Error> for Error {
    fn from(e: getrandom::Error) -> Self {
        Error(Kind::Os(e))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = |code| std::io::Error::from_raw_os_error(code);
        match self.0 {
            Kind::Os(e) => write!(f, "the OS random source failed: {e}"),
            Kind::Errno(code) => write!(f, "the OS random source failed: {}", os(code)),
            Kind::AllZero => f.write_str("the OS random source returned only zero bytes"),
            Kind::BadLength => f.write_str("the OS random source returned a bad length"),
            Kind::NotRandomDevice => f.write_str(
                "the OS random source failed: /dev/urandom is not the kernel's random device",
            ),
            Kind::ForkHandler(code) => write!(f, "cannot register the fork handler: {}", os(code)),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Kind::Os(e) => f.debug_tuple("Error").field(&e).finish(),
            Kind::Errno(code) => f.debug_tuple("Error").field(&code).finish(),
            Kind::ForkHandler(code) => f.debug_tuple("Error::ForkHandler").field(&code).finish(),
            kind => write!(f, "Error({kind:?})"),
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
