use codewright_protocol::ErrorKind;
use rusqlite::ErrorCode;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in the store, each with a message that says what happened and
/// what to do. The `Display` text is meant to be shown to the user as is.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot use the data folder {}: {source}. Make sure it is a folder you can write to, or point CODEWRIGHT_HOME (or --home) at another one.", path.display())]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot open the database {}: {reason}. Make sure the file and its folder are writable, or point CODEWRIGHT_HOME (or --home) at another folder.", path.display())]
    CannotOpen { path: PathBuf, reason: String },

    #[error("the database {} is in use by another process that has not let go of it for {} s{}. Codewright's windows and codewright-cli share the file, so this is usually a long write: wait for it to finish (or end that process), then try again.", path.display(), waited_secs, holders_text(holders))]
    Locked {
        path: PathBuf,
        waited_secs: u64,
        /// The other processes that have the file open (`pid name`), when they can be seen.
        holders: Vec<String>,
    },

    #[error("the disk holding {} is full, so the database cannot be opened or written. Free some space on it, then try again.", path.display())]
    DiskFull { path: PathBuf },

    #[error("the database {} is not a readable Codewright database (it may be corrupt); it was left untouched. Move it aside (for example rename it to codewright.db.bak) to start with an empty one, or restore it from a backup.", path.display())]
    Corrupt { path: PathBuf },

    #[error("the database {} was written by a newer Codewright (schema version {found}; this build knows up to {supported}). Update Codewright, or use another data folder.", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("{what} {id} does not exist (it may have been removed)")]
    NotFound { what: &'static str, id: i64 },

    #[error("{0}")]
    Invalid(String),

    #[error("the folder {} does not exist", path.display())]
    PathNotFound { path: PathBuf },

    #[error("{} is a file, not a folder; choose the folder that contains it", path.display())]
    NotADirectory { path: PathBuf },

    #[error("cannot read {}: {source}", path.display())]
    PathUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("the folder {path} is already a project (\"{name}\")")]
    AlreadyAdded { path: String, name: String },

    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// What kind of error it is, in the one vocabulary front ends branch on.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::DataDir { .. }
            | StoreError::CannotOpen { .. }
            | StoreError::Locked { .. }
            | StoreError::DiskFull { .. } => ErrorKind::DataDir,
            StoreError::Corrupt { .. } => ErrorKind::Corrupt,
            StoreError::TooNew { .. } => ErrorKind::TooNew,
            StoreError::NotFound { .. } => ErrorKind::NotFound,
            StoreError::Invalid(_) => ErrorKind::BadInput,
            StoreError::PathNotFound { .. }
            | StoreError::NotADirectory { .. }
            | StoreError::PathUnreadable { .. } => ErrorKind::BadPath,
            StoreError::AlreadyAdded { .. } => ErrorKind::AlreadyAdded,
            StoreError::Sqlite(_) => ErrorKind::Store,
        }
    }

    /// True for errors that make the whole store unusable (shown as an error screen, not a toast).
    pub fn is_fatal(&self) -> bool {
        self.kind().is_fatal()
    }

    /// Classifies an error met while opening or migrating the file at `path`.
    pub(crate) fn from_open(path: &Path, e: rusqlite::Error) -> StoreError {
        let free = free_bytes(path.parent().unwrap_or(Path::new(".")));
        StoreError::classify_open(path, e, free, crate::BUSY_TIMEOUT.as_secs())
    }

    /// [`StoreError::from_open`] with the free space of the disk known (`None`: unknown).
    pub(crate) fn classify_open(
        path: &Path,
        e: rusqlite::Error,
        free: Option<u64>,
        waited_secs: u64,
    ) -> StoreError {
        let path = path.to_path_buf();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::Corrupt { path }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                holders: holders(&path),
                path,
                waited_secs,
            },
            // SQLite often says "disk I/O error" when it cannot grow a file on a full disk.
            Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
            Some(ErrorCode::SystemIoFailure) if free.is_some_and(|f| f < 64 * 1024) => {
                StoreError::DiskFull { path }
            }
            // Whatever else goes wrong while opening, the user needs the path and a way out.
            _ => StoreError::CannotOpen {
                path,
                reason: e.to_string(),
            },
        }
    }
}

fn holders_text(holders: &[String]) -> String {
    if holders.is_empty() {
        String::new()
    } else {
        format!(" (open in: {})", holders.join(", "))
    }
}

/// Bytes free for this user on the disk holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statvfs is a valid out-parameter; a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0)
        .then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// The other processes that have the database (or its WAL files) open, as `pid name`: read from
/// `/proc` (Linux; processes of other users are not seen).
fn holders(path: &Path) -> Vec<String> {
    let Ok(real) = path.canonicalize() else {
        return Vec::new();
    };
    let names: Vec<std::ffi::OsString> = ["", "-wal", "-shm"]
        .iter()
        .map(|end| {
            let mut n = real.as_os_str().to_owned();
            n.push(end);
            n
        })
        .collect();
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in procs.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let has = fds
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|target| names.iter().any(|n| target.as_os_str() == n));
        if has {
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            out.push(format!("{} (process {pid})", name.trim()));
        }
        if out.len() >= 5 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_full_disk_is_named_whatever_sqlite_calls_it() {
        let path = Path::new("/data/codewright.db");
        let full = StoreError::classify_open(path, sqlite(rusqlite::ffi::SQLITE_FULL), None, 10);
        assert!(matches!(full, StoreError::DiskFull { .. }));
        let io = StoreError::classify_open(path, sqlite(rusqlite::ffi::SQLITE_IOERR), Some(0), 10);
        assert!(
            io.to_string()
                .contains("disk holding /data/codewright.db is full"),
            "{io}"
        );
        // An I/O error with room on the disk is not called a full disk.
        let io =
            StoreError::classify_open(path, sqlite(rusqlite::ffi::SQLITE_IOERR), Some(1 << 30), 10);
        assert!(matches!(io, StoreError::CannotOpen { .. }));
    }
}
