//! `--out FILE`: where the output goes, opened as a shell's `> FILE` opens it.
//!
//! `-` is standard output. So is a FILE that is the file open on the tool's stdout (same
//! device and inode: `/dev/stdout`, `/dev/fd/1`, the path of the file stdout is redirected
//! to), and a FILE open on its stderr is written through stderr: the bytes go where a
//! shell's redirection would put them, at that descriptor's offset, so what the caller
//! wrote before and writes after stays around them. (A character device is left out of
//! this rule and opened anew: it has no offset to share, and a `/dev/null` put in place of
//! a closed stdout must not stand for it.)
//!
//! Any other FILE is opened by the kernel from the path as given; no symbolic link is read
//! here, so the kernel's rules for links and sticky directories (`fs.protected_symlinks`,
//! `fs.protected_regular`, `fs.protected_fifos`) decide as they do for `>`:
//! - first `O_CREAT|O_EXCL` with mode 0600 (then set to exactly 0600, whatever the umask):
//!   a new file, which this run owns and removes again if it does not complete (see
//!   [`crate::interrupt`]);
//! - when the name exists, `O_TRUNC` (`>` adds `O_CREAT`, which here would create a file,
//!   and leave it behind, should the name be removed in between): the same inode is
//!   truncated and written in place, so its owner, group, mode, ACLs, extended attributes,
//!   hard links and bind mounts stay, and a device or FIFO is written as it is. A failure
//!   part way leaves it truncated or part written, as `>` would.
//! - a symbolic link to a name that does not exist is refused: `O_EXCL` does not create
//!   through a link (the kernel answers `EEXIST`), and a file created at the end of a link
//!   could not be removed again without resolving the link here.
//!
//! The existing file is checked to be the one the open reached (same device and inode as
//! before it), so that a file this run created, in a race with another process removing
//! the name, is never taken for one that was there before.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::interrupt::Created;
use crate::output::Kind;

/// Where `--out` writes.
pub enum Target {
    /// The tool's standard output.
    Stdout,
    /// A file, written in place.
    File(OutFile),
}

/// The output for `--out path`.
///
/// # Errors
/// Those of [`OutFile::create`], and that of duplicating stderr.
pub fn open(path: &Path) -> io::Result<Target> {
    if path == Path::new("-") {
        return Ok(Target::Stdout);
    }
    // A stdout or stderr the caller closed is refused through its links too: reopening
    // `/dev/stdout` would reach the runtime's `/dev/null` stand-in and lose the output.
    if let Some(fd) = names_descriptor(path)
        && crate::output::closed_at_start(fd) == Some(true)
    {
        return Err(path_error(path, io::Error::from_raw_os_error(libc::EBADF)));
    }
    if let Ok(meta) = fs::metadata(path)
        && !meta.file_type().is_char_device()
    {
        if is_open_on(&meta, io::stdout().as_fd()) {
            return Ok(Target::Stdout);
        }
        if is_open_on(&meta, io::stderr().as_fd()) {
            let file = File::from(io::stderr().as_fd().try_clone_to_owned()?);
            return Ok(Target::File(OutFile {
                file,
                shown: path.to_owned(),
                created: None,
            }));
        }
    }
    OutFile::create(path).map(Target::File)
}

/// The descriptor of this process that `path` reopens through `/proc`'s descriptor links
/// (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`, after any symbolic links), if any.
fn names_descriptor(path: &Path) -> Option<libc::c_int> {
    let pid = std::process::id();
    let fd_dirs = [
        format!("/proc/{pid}/fd"),
        format!("/proc/{pid}/task/{pid}/fd"),
    ];
    let mut path = path.to_owned();
    // The kernel's limit on links followed in one lookup.
    for _ in 0..40 {
        let name = path.file_name()?.to_owned();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let parent = fs::canonicalize(parent).ok()?;
        if fd_dirs.iter().any(|d| parent == Path::new(d)) {
            return name.to_str()?.parse().ok();
        }
        path = parent.join(fs::read_link(parent.join(&name)).ok()?);
    }
    None
}

/// Whether `meta` is that of the file open on `fd` (the same device and inode) for writing;
/// a descriptor opened read-only (`1< FILE`) cannot take the output, so the path is opened.
fn is_open_on(meta: &fs::Metadata, fd: BorrowedFd<'_>) -> bool {
    // SAFETY: F_GETFL on a borrowed descriptor; no pointers are passed.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    flags != -1
        && flags & libc::O_ACCMODE != libc::O_RDONLY
        && fd
            .try_clone_to_owned()
            .and_then(|fd| File::from(fd).metadata())
            .is_ok_and(|open| open.dev() == meta.dev() && open.ino() == meta.ino())
}

/// The output file, written in place.
pub struct OutFile {
    file: File,
    /// The name as the user gave it, for messages.
    shown: PathBuf,
    /// `Some` while the file is one this run created and has not completed: dropping it
    /// removes the file.
    created: Option<Created>,
}

impl OutFile {
    /// Opens `path` as the module documentation describes.
    ///
    /// # Errors
    /// The error of creating or opening the file, naming `path`; for a symbolic link to a
    /// missing name, an error saying so; for a name replaced between the two opens, an
    /// error saying so (nothing is written then).
    pub fn create(path: &Path) -> io::Result<Self> {
        let named = |e: io::Error| path_error(path, e);
        let mut new = OpenOptions::new();
        new.write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOCTTY);
        match crate::interrupt::create(path, || new.open(path)) {
            Ok((file, created)) => {
                // Dropping `created` on failure removes the new file.
                file.set_permissions(fs::Permissions::from_mode(0o600))
                    .map_err(named)?;
                return Ok(Self {
                    file,
                    shown: path.to_owned(),
                    created: Some(created),
                });
            }
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(named(e)),
            Err(_) => {}
        }
        let before = fs::metadata(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => named(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a symbolic link to a missing file; a new file is not created through a link",
            )),
            _ => named(e),
        })?;
        // No `O_CREAT`: a name removed since the first open is an error here, not a new
        // file this run would leave behind.
        let file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOCTTY)
            .open(path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => named(io::Error::new(
                    e.kind(),
                    "removed by another process while being opened; nothing written",
                )),
                _ => named(e),
            })?;
        let after = file.metadata().map_err(named)?;
        if (after.dev(), after.ino()) != (before.dev(), before.ino()) {
            return Err(named(io::Error::other(
                "replaced by another file while being opened; nothing written",
            )));
        }
        Ok(Self {
            file,
            shown: path.to_owned(),
            created: None,
        })
    }

    /// What the output is.
    pub fn kind(&self) -> Kind {
        crate::output::kind_of(&self.file)
    }

    /// Ends the output: a file this run created is complete and stays.
    pub fn commit(mut self) {
        if let Some(created) = self.created.take() {
            created.keep();
        }
    }
}

impl Write for OutFile {
    /// Writes to the file; an error names the path and keeps its kind.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf).map_err(|e| path_error(&self.shown, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `e` with `path` in front of its message ("key.bin: No space left on device (os error
/// 28)"), keeping its kind.
fn path_error(path: &Path, e: io::Error) -> io::Error {
    let shown = crate::args::one_line(&path.to_string_lossy());
    io::Error::new(e.kind(), format!("{shown}: {e}"))
}
