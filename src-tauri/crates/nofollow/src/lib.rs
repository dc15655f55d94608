//! Opening, reading, writing and removing a file along a path that was checked, without
//! following a link that appeared since: the walk opens each folder from `/` relative to the one before with
//! `O_NOFOLLOW`, the file is written beside its name and renamed into place relative to the
//! opened folder, and the folder is checked to still be where the path says just before the
//! rename. A folder swapped for a link to `~/.ssh` between the check and the write (a race a
//! command can run in a loop) fails the write instead of redirecting it.
//!
//! The paths given are real ones (the tools' `paths::resolve` resolves their links when it checks
//! them; git's callers start from a canonical folder), so a link met on the way is always a
//! change since the check. Used by the tools (every project file the agent reads, writes or
//! removes, checkpoints, a review's revert) and by git (`.worktreeinclude` copies, a merge put
//! back).

use std::ffi::{CStr, CString, OsStr};
use std::io::{Error, ErrorKind, Result, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Writes `content` to `path` whole (through a temporary file renamed over it): the file gets
/// `mode`, else the mode it has, else 0666 less the umask. Missing folders are made, but only
/// below `keep`: a missing `keep` (the project's folder, deleted while a task ran) is an error,
/// never made again.
pub fn write(path: &Path, content: &[u8], mode: Option<u32>, keep: &Path) -> Result<()> {
    let (dir, name) = open_parent(path, keep)?;
    // The mode of the file it replaces — a regular file's only (a link's would be 0777).
    let existing = stat_at(&dir, &name).filter(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
    let mode = mode.or_else(|| existing.map(|st| st.st_mode & 0o7777));
    let tmp = temp_name();
    let ctmp = cstr(tmp.as_os_str())?;
    // SAFETY: a valid folder descriptor and C string; the result is checked.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            ctmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned here alone.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    let written = (|| {
        file.write_all(content)?;
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.sync_data()?;
        still_at(&dir, path.parent().unwrap_or(Path::new("/")))?;
        let cname = cstr(name.as_os_str())?;
        // SAFETY: valid descriptors and C strings; the result is checked.
        let renamed = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                ctmp.as_ptr(),
                dir.as_raw_fd(),
                cname.as_ptr(),
            )
        };
        if renamed != 0 {
            return Err(Error::last_os_error());
        }
        Ok(())
    })();
    if written.is_err() {
        // SAFETY: as above; a temporary file left behind is only removed.
        unsafe { libc::unlinkat(dir.as_raw_fd(), ctmp.as_ptr(), 0) };
    }
    written
}

/// Opens the file at `path` for reading along its checked path: no link followed on the way or
/// at its end, and without waiting (a named pipe opens at once; the caller checks what it is).
pub fn open(path: &Path) -> Result<std::fs::File> {
    let (dir, name) = open_parent(path, path)?;
    let cname = cstr(name.as_os_str())?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: a valid folder descriptor and C string; the result is checked.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), cname.as_ptr(), flags) };
    if fd < 0 {
        let e = Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => Error::other(format!(
                "{} is a link now, not the file that was checked",
                path.display()
            )),
            _ => e,
        });
    }
    // SAFETY: just opened, owned here alone.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// The bytes and mode of the regular file at `path`, opened as [`open`] does; `None` when it is
/// not there. (A copy of a project file must be that file, not what a link swapped in leads
/// to.) A file of more than [`MAX_READ_BYTES`] — as it is found, or as it grows while it
/// is read — is refused (`ErrorKind::FileTooLarge`), never read into memory whole.
pub fn read(path: &Path) -> Result<Option<(Vec<u8>, u32)>> {
    use std::io::Read;
    let max = MAX_READ_BYTES;
    let file = match open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let too_large = || {
        Error::new(
            ErrorKind::FileTooLarge,
            format!(
                "{} is larger than {} MB, too large to read whole",
                path.display(),
                max >> 20
            ),
        )
    };
    if meta.len() > max {
        return Err(too_large());
    }
    // (Its size is only a hint: a sparse file says a terabyte.)
    let mut bytes = Vec::with_capacity(meta.len().min(8 << 20) as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    use std::os::unix::fs::PermissionsExt;
    Ok(Some((bytes, meta.permissions().mode() & 0o7777)))
}

/// The largest file [`read`] reads: a file something made huge is not taken into memory.
pub const MAX_READ_BYTES: u64 = 256 << 20;

/// Removes the file at `path` (not following a link on the way, making no folder); `false` when
/// it was not there.
pub fn remove(path: &Path) -> Result<bool> {
    let (dir, name) = match open_parent(path, path) {
        Ok(found) => found,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    still_at(&dir, path.parent().unwrap_or(Path::new("/")))?;
    let cname = cstr(name.as_os_str())?;
    // SAFETY: a valid folder descriptor and C string; the result is checked.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), cname.as_ptr(), 0) } != 0 {
        let e = Error::last_os_error();
        return match e.kind() {
            ErrorKind::NotFound => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

/// Opens the folder `path` is in, walking from `/` without following links, and gives the file's
/// name. Folders missing below `keep` are made; a missing folder at or above it is an error.
fn open_parent(path: &Path, keep: &Path) -> Result<(OwnedFd, PathBuf)> {
    if !path.is_absolute() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "the path is not absolute",
        ));
    }
    let name = match path.file_name() {
        Some(name) => PathBuf::from(name),
        None => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "the path names no file",
            ))
        }
    };
    let parent = path.parent().unwrap_or(Path::new("/"));
    let mut dir = open_dir(None, c"/")?;
    let mut at = PathBuf::from("/");
    for component in parent.components() {
        let part = match component {
            Component::RootDir => continue,
            Component::Normal(part) => part,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "the path holds `.` or `..`",
                ))
            }
        };
        at.push(part);
        let cpart = cstr(part)?;
        dir = match open_dir(Some(&dir), &cpart) {
            Ok(next) => next,
            Err(e) if e.kind() == ErrorKind::NotFound && at.starts_with(keep) && at != keep => {
                // SAFETY: a valid folder descriptor and C string; the result is checked.
                if unsafe { libc::mkdirat(dir.as_raw_fd(), cpart.as_ptr(), 0o777) } != 0 {
                    let e = Error::last_os_error();
                    if e.kind() != ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
                open_dir(Some(&dir), &cpart)?
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "{} is gone (deleted or moved)",
                        at.display()
                    ),
                ))
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Err(Error::other(format!(
                    "{} is a link now (or no longer a folder), not what was checked; nothing was written through it",
                    at.display()
                )))
            }
            Err(e) => return Err(e),
        };
    }
    Ok((dir, name))
}

fn open_dir(at: Option<&OwnedFd>, name: &CStr) -> Result<OwnedFd> {
    // `O_PATH`: a folder one may pass through but not list (0711) is still opened.
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid descriptor (or AT_FDCWD with an absolute name) and C string; checked.
    let fd = unsafe {
        libc::openat(
            at.map_or(libc::AT_FDCWD, |d| d.as_raw_fd()),
            name.as_ptr(),
            flags,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: just opened, owned here alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(dir: &OwnedFd, name: &Path) -> Option<libc::stat> {
    let cname = cstr(name.as_os_str()).ok()?;
    // SAFETY: zeroed `stat` is a valid out-parameter; valid descriptor and C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            cname.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0).then_some(st)
}

/// Fails unless the opened folder `dir` is still at `expected` (an ancestor moved away since the
/// walk would put the file elsewhere). Linux only; elsewhere the walk alone guards.
fn still_at(dir: &OwnedFd, expected: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    if let Ok(now) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) {
        if now != expected {
            return Err(Error::other(format!(
                "{} moved while it was written to (now at {}); nothing was written",
                expected.display(),
                now.display()
            )));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (dir, expected);
    Ok(())
}

/// A temporary name for a file being written, unique to this process and call, and short (a
/// file's name near the 255-byte limit leaves no room to add to it).
fn temp_name() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    PathBuf::from(format!(".codewright-{}-{n}.tmp", std::process::id()))
}

fn cstr(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| Error::new(ErrorKind::InvalidInput, "a NUL in the path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_removes_along_a_path_and_refuses_a_link_on_the_way() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap().join("project");
        let outside = base.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        write(&root.join("a/b/c.txt"), b"one", None, &root).unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"one");
        write(&root.join("a/b/c.txt"), b"two", Some(0o640), &root).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(root.join("a/b/c.txt")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
        // A folder swapped for a link out: refused, nothing written outside.
        std::fs::rename(root.join("a/b"), root.join("a/b.old")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a/b")).unwrap();
        let err = write(&root.join("a/b/c.txt"), b"evil", None, &root).unwrap_err();
        assert!(err.to_string().contains("is a link now"), "{err}");
        assert!(!outside.join("c.txt").exists());
        std::fs::write(outside.join("c.txt"), "keep").unwrap();
        assert!(remove(&root.join("a/b/c.txt")).is_err());
        assert!(outside.join("c.txt").exists());
        // The project's folder deleted: never made again.
        std::fs::remove_dir_all(&root).unwrap();
        let err = write(&root.join("x.txt"), b"x", None, &root).unwrap_err();
        assert!(err.to_string().contains("is gone"), "{err}");
        assert!(!root.exists());
        assert!(!remove(&root.join("x.txt")).unwrap());
        // A name of 250 bytes is written (the temporary name is short).
        let base2 = tempfile::tempdir().unwrap();
        let root2 = base2.path().canonicalize().unwrap();
        let long = root2.join("x".repeat(250));
        write(&long, b"ok", None, &root2).unwrap();
        assert_eq!(std::fs::read(&long).unwrap(), b"ok");
        // A removal under folders that are gone makes none of them.
        assert!(!remove(&root2.join("gone/deeper/x.txt")).unwrap());
        assert!(!root2.join("gone").exists());
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    }
}
