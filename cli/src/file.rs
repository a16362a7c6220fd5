//! `--out FILE`: where the output goes, and a replacement of FILE made only once complete.
//!
//! `-` is standard output. So is a FILE that is the file open on the tool's stdout (same
//! device and inode: `/dev/stdout`, `/dev/fd/1`, the path of the file stdout is redirected
//! to), and a FILE open on its stderr is written through stderr: the bytes go where a
//! shell's redirection would put them, at that descriptor's offset, so what the caller
//! wrote before and writes after stays around them. (A character device is left out of
//! this rule and opened anew: it has no offset to share, and a `/dev/null` put in place of
//! a closed stdout must not stand for it.)
//!
//! A regular file (or a name that does not exist yet) is written through a temporary file
//! in the same directory: `.<name>.<16 hex digits>.tmp`, created with `O_EXCL` and mode
//! 0600. Before any byte is written it gets the existing FILE's owner and group (`fchown`);
//! after the last byte, FILE's mode, or 0600 for a new FILE, exactly, whatever the umask
//! (`fchmod`; after the writes, since a write by a user other than root clears a
//! set-group-ID bit). It is then flushed to disk (`fsync`), renamed over FILE, and the
//! directory is flushed too. A failure anywhere before the rename removes the temporary
//! file and leaves FILE as it was, so an existing key is never truncated by a write that
//! then fails. FILE is first opened for writing (without truncating it) when it exists, so
//! a file the user may not write is refused as `openssl rand -out` would refuse it, not
//! replaced.
//!
//! When the owner and group cannot be given to the temporary file (a user other than root
//! writing a file that is not theirs, or whose group they are not in), the run fails before
//! writing and FILE stays as it was. It is not written in place instead, as openssl would:
//! a write that then failed would leave FILE part old, part new, and a replacement with the
//! writer's owner would change who may read the key. A shell redirection (`fkrng --raw 32 >
//! FILE`) writes such a file in place, at the user's choice.
//!
//! Consequences of replacing instead of rewriting: ACLs and other extended attributes of
//! the old file are not carried over, and other hard links to it keep the old bytes. A
//! symbolic link is followed: the file it points to is replaced (or created, if the link
//! dangles), the link stays. An interrupted run (a signal) can leave the temporary file
//! behind.
//!
//! Anything that exists and is not a regular file (a device such as `/dev/null` or
//! `/dev/full`, a FIFO, a terminal) is written in place, as opened for writing, since
//! there is nothing to replace; a directory fails with "Is a directory".

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::output::Kind;

/// How many names the temporary file may try before giving up (each is random, so a clash
/// means another file of that name already exists).
const TEMP_TRIES: usize = 8;

/// Where `--out` writes.
pub enum Target {
    /// The tool's standard output.
    Stdout,
    /// A file, written in place or replaced.
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
                replace: None,
            }));
        }
    }
    OutFile::create(path).map(Target::File)
}

/// Whether `meta` is that of the file open on `fd` (the same device and inode).
fn is_open_on(meta: &fs::Metadata, fd: BorrowedFd<'_>) -> bool {
    fd.try_clone_to_owned()
        .and_then(|fd| File::from(fd).metadata())
        .is_ok_and(|open| open.dev() == meta.dev() && open.ino() == meta.ino())
}

/// A replacement in the making: the temporary file, the path it is renamed to and the mode
/// it gets before that.
struct Replace {
    temp: PathBuf,
    target: PathBuf,
    mode: u32,
}

/// The output file: a temporary file to be renamed over the target, or what is written in
/// place (the target when it is not a regular file, or stderr).
pub struct OutFile {
    file: File,
    /// The name as the user gave it, for messages.
    shown: PathBuf,
    /// `None` when writing in place or once renamed.
    replace: Option<Replace>,
}

impl OutFile {
    /// Opens the output for `path`.
    ///
    /// # Errors
    /// The error of opening the target (for one that exists) or of resolving a symbolic
    /// link, naming `path`; that of creating the temporary file, naming its directory; and
    /// that of giving it the old file's owner and group.
    pub fn create(path: &Path) -> io::Result<Self> {
        let named = |e: io::Error| path_error(path, e);
        let (target, old) = match fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                // A device, FIFO or the like: write to it as it is.
                let file = OpenOptions::new().write(true).open(path).map_err(named)?;
                return Ok(Self {
                    file,
                    shown: path.to_owned(),
                    replace: None,
                });
            }
            Ok(meta) => {
                // May the user write it? Open it as openssl would, but keep its bytes.
                drop(OpenOptions::new().write(true).open(path).map_err(named)?);
                (fs::canonicalize(path).map_err(named)?, Some(meta))
            }
            // No file there; but a dangling symbolic link names where the new file goes
            // (as `open(O_CREAT)` would create it), and is kept.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                (dangling_link_target(path).map_err(named)?, None)
            }
            Err(e) => return Err(named(e)),
        };
        let dir = parent_dir(&target);
        let name = target.file_name().ok_or_else(|| {
            named(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a file name",
            ))
        })?;
        let no_temp = |e: io::Error| {
            let dir = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
            let what = format!("cannot create a temporary file in {}", dir.display());
            path_error(path, context(&what, e))
        };
        let mut last = None;
        for _ in 0..TEMP_TRIES {
            let tag = fkrng::try_u64().map_err(io::Error::other)?;
            let mut temp_name = std::ffi::OsString::from(".");
            temp_name.push(name);
            temp_name.push(format!(".{tag:016x}.tmp"));
            let temp = dir.join(temp_name);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
            {
                Ok(file) => {
                    // On failure, dropping `out` removes the temporary file.
                    let out = Self {
                        file,
                        shown: path.to_owned(),
                        replace: Some(Replace {
                            temp,
                            target,
                            mode: old.as_ref().map_or(0o600, |old| old.mode() & 0o7777),
                        }),
                    };
                    if let Some(old) = &old {
                        out.keep_owner(old).map_err(named)?;
                    }
                    return Ok(out);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(no_temp(e)),
            }
        }
        Err(no_temp(last.expect("TEMP_TRIES > 0")))
    }

    /// Gives the temporary file `old`'s owner and group.
    ///
    /// # Errors
    /// That of `fchown`, saying which owner could not be kept.
    fn keep_owner(&self, old: &fs::Metadata) -> io::Result<()> {
        let (uid, gid) = (old.uid(), old.gid());
        std::os::unix::fs::fchown(&self.file, Some(uid), Some(gid)).map_err(|e| {
            context(
                &format!("a replacement cannot keep its owner and group {uid}:{gid}"),
                e,
            )
        })
    }

    /// What the output is: a replacement is a regular file.
    pub fn kind(&self) -> Kind {
        match self.replace {
            Some(_) => Kind::File,
            None => crate::output::kind_of(&self.file),
        }
    }

    /// Ends the output: for a replacement, gives the temporary file its mode, flushes it to
    /// disk, renames it over the target and flushes the directory.
    ///
    /// # Errors
    /// The error of `fchmod`, `fsync` or `rename` (the target is then unchanged) or of
    /// flushing the directory (the target is then replaced but perhaps not yet on disk); its
    /// message names the path.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(Replace { temp, target, mode }) = self.replace.take() else {
            return Ok(());
        };
        let renamed = self
            .file
            .set_permissions(fs::Permissions::from_mode(mode))
            .and_then(|()| self.file.sync_all())
            .and_then(|()| fs::rename(&temp, &target));
        if let Err(e) = renamed {
            let _ = fs::remove_file(&temp);
            return Err(path_error(&self.shown, e));
        }
        File::open(parent_dir(&target))
            .and_then(|d| d.sync_all())
            .map_err(|e| path_error(&self.shown, e))
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

impl Drop for OutFile {
    /// Removes the temporary file of an output that was not committed.
    fn drop(&mut self) {
        if let Some(replace) = self.replace.take() {
            let _ = fs::remove_file(replace.temp);
        }
    }
}

/// `e` with `path` in front of its message ("key.bin: No space left on device (os error
/// 28)"), keeping its kind.
fn path_error(path: &Path, e: io::Error) -> io::Error {
    context(&path.display().to_string(), e)
}

/// `e` with `what` in front of its message, keeping its kind.
fn context(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Where a file created at `path` lands: `path` itself, or, when `path` is a symbolic link
/// whose target does not exist (a chain of them, up to the kernel's 40 links), that target,
/// read relative to the directory of the link that names it.
///
/// # Errors
/// The error of reading a link; `ELOOP` ("too many levels of symbolic links") past 40.
fn dangling_link_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = fs::read_link(&current)?;
                current = if next.is_absolute() {
                    next
                } else {
                    parent_dir(&current).join(next)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// The directory that holds `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}
