//! What was read from `SKILL.md` files, kept between runs ([`Places::cache`]), so a run reads and
//! parses only the skills that changed: with hundreds of skills installed, reading them all was
//! most of `exec`'s start (BENCHMARKS.md).
//!
//! An entry is used while its file's [`Stamp`] — size, modification and change times, inode and
//! device — is what it was, and while the same build of the same program reads it (one file per
//! program, dropped whole when the program's own file changes: a new version may read skills
//! differently). As git does for its index, a file modified less than [`SETTLED`] before the
//! discovery began (or in the future) is never kept: two writes within one tick of the file
//! system's clock, of the same size, would otherwise look unchanged. A file system that caches
//! attributes (NFS) may show a change late, as it does to git. The cache is only ever a shortcut:
//! a cache that cannot be read or written, or an entry that does not match, means reading the
//! skill itself.
//!
//! [`Places::cache`]: crate::Places::cache

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file modified less than this before a discovery began is read again by the next one.
const SETTLED: Duration = Duration::from_secs(2);
/// Entries kept at most. Past it, only the ones the last discovery saw are kept (the other
/// projects' are read again when they next run).
const MAX_ENTRIES: usize = 5000;
/// A cache file larger than this is not read (one of `MAX_ENTRIES` entries is under 2 KB).
const MAX_BYTES: u64 = 32 << 20;
/// Bumped when what an entry holds changes: an older file is ignored.
const VERSION: u32 = 2;

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Stamp {
    len: u64,
    /// Nanoseconds since the Unix epoch.
    modified: u64,
    /// When its content or metadata last changed (Unix: ctime, which no program can set back as
    /// it can the modification time), nanoseconds since the epoch; 0 elsewhere.
    changed: u64,
    /// Unix only (0 elsewhere): a file written by renaming a new one over it is another inode.
    inode: u64,
    device: u64,
}

impl Stamp {
    /// `None` when the file system gives no modification time (or one before 1970).
    pub(super) fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        let modified = meta.modified().ok()?;
        let since = modified.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        #[cfg(unix)]
        let (changed, inode, device) = {
            use std::os::unix::fs::MetadataExt;
            let changed = (meta.ctime() as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec() as u64);
            (changed, meta.ino(), meta.dev())
        };
        #[cfg(not(unix))]
        let (changed, inode, device) = (0, 0, 0);
        Some(Stamp {
            len: meta.len(),
            modified: since.as_nanos() as u64,
            changed,
            inode,
            device,
        })
    }

    /// The stamp of the running program's own file, if it can be found.
    fn of_this_program() -> Option<Stamp> {
        let exe = std::env::current_exe().ok()?;
        Stamp::of(&std::fs::metadata(exe).ok()?)
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
    /// The program that read the entries (its own file's stamp).
    program: Option<Stamp>,
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
    /// Reads the running program's cache in the folder `folder` (empty when it is missing,
    /// unreadable, of another version or another build of the program).
    pub(super) fn open(folder: &Path) -> Cache {
        let program = Stamp::of_this_program();
        let name = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "codewright".into());
        let path = folder.join(format!("skills-{name}.json"));
        let stored = std::fs::File::open(&path)
            .ok()
            .filter(|f| f.metadata().is_ok_and(|m| m.len() <= MAX_BYTES))
            .and_then(|f| serde_json::from_reader::<_, Stored>(std::io::BufReader::new(f)).ok())
            .filter(|s| s.version == VERSION && program.is_some() && s.program == program)
            .unwrap_or(Stored {
                version: VERSION,
                program,
                files: HashMap::new(),
            });
        Cache {
            path,
            stored,
            seen: Vec::new(),
            changed: false,
            now: SystemTime::now(),
        }
    }

    /// What `file` said when it had `stamp`, if that was recorded; `file` counts as seen by
    /// this discovery either way.
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
            // Only what this discovery saw is kept: the other projects' are read again.
            self.stored
                .files
                .retain(|file, _| seen.contains(file.as_str()));
        }
        if !self.changed && self.stored.files.len() == before {
            return;
        }
        if let Ok(bytes) = serde_json::to_vec(&self.stored) {
            let _ = crate::write_whole(&self.path, &bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_by_another_build_of_the_program_are_not_used() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("SKILL.md");
        std::fs::write(&file, "x").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&file).unwrap()).unwrap();
        let said: Parsed = Ok(("x".into(), "y".into()));
        let mut cache = Cache::open(folder.path());
        cache.put(&file, stamp, &said);
        cache.save(&[]);
        assert_eq!(Cache::open(folder.path()).get(&file, stamp), Some(said));

        // The same cache file, written by another build (its program's stamp differs).
        let path = Cache::open(folder.path()).path;
        let mut stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        stored["program"]["modified"] = serde_json::json!(1);
        std::fs::write(&path, stored.to_string()).unwrap();
        assert_eq!(Cache::open(folder.path()).get(&file, stamp), None);
    }
}
