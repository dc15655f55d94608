//! What was read from `SKILL.md` files, kept between runs in one file ([`Places::cache`]), so a
//! run reads and parses only the skills that changed: with hundreds of skills installed, reading
//! them all was most of `exec`'s start (BENCHMARKS.md).
//!
//! An entry is used while its file's size, modification time and inode are what they were. As
//! git does for its index, a file modified less than [`SETTLED`] before it was read is not kept:
//! two writes within one tick of the file system's clock, the same size, would otherwise look
//! unchanged. The cache is only ever a shortcut: a file that cannot be read or written, or an
//! entry that does not match, means reading the skill itself.
//!
//! [`Places::cache`]: crate::Places::cache

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file modified more recently than this before it is read is read again next time.
const SETTLED: Duration = Duration::from_secs(2);
/// Entries kept at most (the skills of every project the user ran, and their home's).
const MAX_ENTRIES: usize = 5000;
/// Bumped when what an entry holds changes: an older file is ignored.
const VERSION: u32 = 1;

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Stamp {
    len: u64,
    /// Nanoseconds since the Unix epoch.
    modified: u64,
    inode: u64,
}

impl Stamp {
    /// `None` when the file system gives no modification time.
    pub(super) fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        let modified = meta.modified().ok()?;
        let since = modified.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp {
            len: meta.len(),
            modified: since.as_nanos() as u64,
            inode,
        })
    }

    fn settled(&self, now: SystemTime) -> bool {
        let modified = SystemTime::UNIX_EPOCH + Duration::from_nanos(self.modified);
        now.duration_since(modified).is_ok_and(|age| age >= SETTLED)
    }
}

/// What a `SKILL.md` says: its name and description, or why it cannot be used.
pub(super) type Parsed = Result<(String, String), String>;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Entry {
    stamp: Stamp,
    parsed: Parsed,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Stored {
    version: u32,
    /// By the `SKILL.md`'s path (only paths that are UTF-8 are kept).
    files: HashMap<String, Entry>,
}

/// The cache as one discovery uses it: entries looked up and recorded, written back once.
pub(super) struct Cache {
    path: PathBuf,
    stored: Stored,
    seen: Vec<String>,
    changed: bool,
    now: SystemTime,
}

impl Cache {
    /// Reads the cache at `path` (empty when it is missing, unreadable or of another version).
    pub(super) fn open(path: &Path) -> Cache {
        let stored = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|s| s.version == VERSION)
            .unwrap_or(Stored {
                version: VERSION,
                files: HashMap::new(),
            });
        Cache {
            path: path.to_path_buf(),
            stored,
            seen: Vec::new(),
            changed: false,
            now: SystemTime::now(),
        }
    }

    /// What `file` said when it had `stamp`, if that was recorded.
    pub(super) fn get(&mut self, file: &Path, stamp: Stamp) -> Option<Parsed> {
        let key = file.to_str()?;
        self.seen.push(key.to_string());
        let entry = self.stored.files.get(key)?;
        (entry.stamp == stamp).then(|| entry.parsed.clone())
    }

    /// Records what `file` said with `stamp` (unless it was modified too recently to trust).
    pub(super) fn put(&mut self, file: &Path, stamp: Stamp, parsed: &Parsed) {
        let Some(key) = file.to_str() else {
            return;
        };
        if !stamp.settled(self.now) {
            // A stale entry must not outlive the file it described.
            self.changed |= self.stored.files.remove(key).is_some();
            return;
        }
        self.stored.files.insert(
            key.to_string(),
            Entry {
                stamp,
                parsed: parsed.clone(),
            },
        );
        self.changed = true;
    }

    /// Writes the cache back if anything changed, dropping the entries of `folders` (the ones
    /// this discovery listed) whose files it did not see. A failure is ignored: the next run
    /// reads the skills themselves.
    pub(super) fn save(mut self, folders: &[PathBuf]) {
        let seen: std::collections::HashSet<&str> = self.seen.iter().map(String::as_str).collect();
        let before = self.stored.files.len();
        self.stored.files.retain(|file, _| {
            seen.contains(file.as_str()) || !folders.iter().any(|f| Path::new(file).starts_with(f))
        });
        if self.stored.files.len() > MAX_ENTRIES {
            // The others' (projects run long ago) go first.
            self.stored
                .files
                .retain(|file, _| seen.contains(file.as_str()));
        }
        if !self.changed && self.stored.files.len() == before {
            return;
        }
        let _ = write(&self.path, &self.stored);
    }
}

/// Writes `stored` whole, through a temporary file renamed over the old one: another run
/// reading it meanwhile sees the old cache or the new, never half of one.
fn write(path: &Path, stored: &Stored) -> std::io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)?;
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    let mut out = std::io::BufWriter::new(file.as_file_mut());
    serde_json::to_writer(&mut out, stored)?;
    std::io::Write::flush(&mut out)?;
    drop(out);
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
