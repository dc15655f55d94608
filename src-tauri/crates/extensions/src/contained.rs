//! Reading the files the engine reads on its own — instructions, memory, skills and their files,
//! agents, commands, task files — from a folder a repository's author controls.
//!
//! Each read is **contained**: the file must resolve inside its root (the project; `/` for the
//! user's own files, which may link anywhere) — a link is followed only while it stays inside, checked before
//! the open and again on the opened file, so a link swapped in between is caught too. It must be
//! a **regular file** (a pipe, a device or a folder is refused without blocking: the open does not
//! wait for a writer), and it is read **with a cap while reading**, so `/dev/zero` or a 2 GB file
//! never fills memory.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read. Each says what happened in a person's words, naming the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It resolves outside its root (a link pointing out, or a folder on its way that does).
    Outside { path: PathBuf, root: PathBuf },
    /// It is a folder, a pipe, a socket or a device.
    NotAFile { path: PathBuf },
    /// It could not be read.
    Unreadable { path: PathBuf, error: String },
    /// Its bytes are not UTF-8 text.
    NotText { path: PathBuf },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Outside { path, root } => write!(
                f,
                "{} leads outside {} (through a link), so it is not read",
                path.display(),
                root.display()
            ),
            Refusal::NotAFile { path } => write!(
                f,
                "{} is not a regular file (a folder, a pipe or a device), so it is not read",
                path.display()
            ),
            Refusal::Unreadable { path, error } => {
                write!(f, "{} cannot be read: {error}", path.display())
            }
            Refusal::NotText { path } => write!(f, "{} is not text", path.display()),
        }
    }
}

impl std::error::Error for Refusal {}

/// The bytes of `path`, a file inside `root`: at most `max + 1` of them, so that a caller sees a
/// file over its limit without reading all of it. `None` when it (or `root`) does not exist.
pub fn read(root: &Path, path: &Path, max: u64) -> Result<Option<Vec<u8>>, Refusal> {
    let Some(file) = open(root, path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(path, e))?;
    Ok(Some(bytes))
}

/// The text of `path`, a file inside `root`, cut at `max` bytes (on a character's boundary);
/// `cut` says whether it was. `None` when it does not exist.
pub fn read_text(root: &Path, path: &Path, max: u64) -> Result<Option<Text>, Refusal> {
    let Some(mut bytes) = read(root, path, max)? else {
        return Ok(None);
    };
    let cut = bytes.len() as u64 > max;
    if cut {
        bytes.truncate(max as usize);
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // A cut may fall inside a character: keep what is whole before it.
        Err(e) if cut && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| Refusal::NotText {
                path: path.to_path_buf(),
            })?
        }
        Err(_) => {
            return Err(Refusal::NotText {
                path: path.to_path_buf(),
            })
        }
    };
    Ok(Some(Text { text, cut }))
}

/// A file's text as [`read_text`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    /// Whether the file went on past the limit.
    pub cut: bool,
}

/// Whether `dir` is a folder inside `root` (a link to a folder counts while it stays inside):
/// the folders whose entries the engine lists on its own are checked with this first.
pub fn is_dir_inside(root: &Path, dir: &Path) -> bool {
    match (root.canonicalize(), dir.canonicalize()) {
        (Ok(root), Ok(real)) => real.starts_with(&root) && real.is_dir(),
        _ => false,
    }
}

/// Whether `path` is a regular file inside `root` (what [`read`] would open), without opening it.
pub fn is_file_inside(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(real)) => real.starts_with(&root) && real.is_file(),
        _ => false,
    }
}

/// Whether a file may be written at `path` without leaving `root`: the nearest folder of it
/// that exists resolves inside `root`, and `path`, if it exists, is a regular file there (not a
/// link out). What a person saves from a settings screen (memory, a task file's status) is
/// checked with this first.
pub fn check_writable(root: &Path, path: &Path) -> Result<(), Refusal> {
    let Ok(real_root) = root.canonicalize() else {
        return Err(Refusal::Unreadable {
            path: root.to_path_buf(),
            error: "it does not exist".into(),
        });
    };
    let outside = || Refusal::Outside {
        path: path.to_path_buf(),
        root: real_root.clone(),
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        let real = path.canonicalize().map_err(|_| outside())?;
        if !real.starts_with(&real_root) {
            return Err(outside());
        }
        if !meta.is_file() && !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Err(Refusal::NotAFile {
                path: path.to_path_buf(),
            });
        }
        return Ok(());
    }
    let existing = path.ancestors().skip(1).find(|a| a.exists());
    match existing.and_then(|a| a.canonicalize().ok()) {
        Some(real) if real.starts_with(&real_root) => Ok(()),
        _ => Err(outside()),
    }
}

/// Opens `path` for reading if it is a regular file inside `root`; `None` when it is absent.
fn open(root: &Path, path: &Path) -> Result<Option<std::fs::File>, Refusal> {
    let Ok(root) = root.canonicalize() else {
        return Ok(None);
    };
    let real = match path.canonicalize() {
        Ok(real) => real,
        // Absent, or a link to nothing: there is no file to read.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(path, e)),
    };
    let outside = || Refusal::Outside {
        path: path.to_path_buf(),
        root: root.clone(),
    };
    if !real.starts_with(&root) {
        return Err(outside());
    }
    let file = open_no_wait(&real).map_err(|e| match e.raw_os_error() {
        // The resolved path became a link after it was resolved.
        Some(libc::ELOOP) => outside(),
        _ => unreadable(path, e),
    })?;
    let meta = file.metadata().map_err(|e| unreadable(path, e))?;
    if !meta.is_file() {
        return Err(Refusal::NotAFile {
            path: path.to_path_buf(),
        });
    }
    // A folder on the way swapped for a link between the check and the open: the opened file is
    // where the kernel says it is.
    if let Some(now) = where_open(&file) {
        if !now.starts_with(&root) {
            return Err(outside());
        }
    }
    Ok(Some(file))
}

/// Opens without following a last link and without waiting: a pipe with no writer opens at once
/// (and is then refused as not a file) instead of blocking the run.
fn open_no_wait(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
}

/// The path of an open file, as the kernel knows it (Linux; `None` elsewhere).
fn where_open(file: &std::fs::File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

fn unreadable(path: &Path, e: std::io::Error) -> Refusal {
    Refusal::Unreadable {
        path: path.to_path_buf(),
        error: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_inside_is_followed_and_one_out_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY").unwrap();
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::fs::write(root.join("AGENTS.md"), "be kind").unwrap();
        symlink("AGENTS.md", root.join("CLAUDE.md")).unwrap();
        symlink(outside.path().join("id_rsa"), root.join("evil.md")).unwrap();
        symlink(outside.path(), root.join("sub")).unwrap();
        let text = |p: &str| read_text(root, &root.join(p), 1024);
        assert_eq!(text("CLAUDE.md").unwrap().unwrap().text, "be kind");
        assert!(matches!(text("evil.md"), Err(Refusal::Outside { .. })));
        assert!(matches!(text("sub/id_rsa"), Err(Refusal::Outside { .. })));
        assert!(!is_dir_inside(root, &root.join("sub")));
        assert_eq!(text("missing.md").unwrap(), None);
        let refused = text("evil.md").unwrap_err().to_string();
        assert!(refused.contains("leads outside") && !refused.contains("PRIVATE"));
    }

    #[test]
    fn a_pipe_is_refused_at_once_and_a_huge_file_is_read_only_to_the_cap() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let fifo = root.join("AGENTS.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // Without O_NONBLOCK this open would wait for a writer forever.
        assert!(matches!(
            read(root, &fifo, 10),
            Err(Refusal::NotAFile { .. })
        ));
        // /dev/zero inside the root (a link to it is refused as outside; a bind is the same file).
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let mut big = std::fs::File::create(root.join("big.md")).unwrap();
        std::io::copy(&mut zero.take(3 << 20), &mut big).unwrap();
        let got = read_text(root, &root.join("big.md"), 1000)
            .unwrap()
            .unwrap();
        assert!(got.cut && got.text.len() == 1000);
        assert!(matches!(
            read(root, Path::new("/dev/zero"), 10),
            Err(Refusal::Outside { .. })
        ));
    }

    #[test]
    fn a_save_never_goes_through_a_link_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("memory.md"), "theirs").unwrap();
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        symlink(outside.path(), root.join(".codewright")).unwrap();
        symlink(outside.path().join("memory.md"), root.join("notes.md")).unwrap();
        assert!(check_writable(root, &root.join(".codewright/memory.md")).is_err());
        assert!(check_writable(root, &root.join(".codewright/new/deep.md")).is_err());
        assert!(check_writable(root, &root.join("notes.md")).is_err());
        assert!(check_writable(root, &root.join("new/folder/x.md")).is_ok());
        std::fs::write(root.join("mine.md"), "x").unwrap();
        assert!(check_writable(root, &root.join("mine.md")).is_ok());
    }

    #[test]
    fn a_cut_inside_a_character_keeps_what_is_whole() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("m.md"), "ab汉字").unwrap();
        let got = read_text(root.path(), &root.path().join("m.md"), 4)
            .unwrap()
            .unwrap();
        assert_eq!(got.text, "ab");
        assert!(got.cut);
    }
}
