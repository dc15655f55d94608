//! Per-turn checkpoints. Before a turn first changes a file, the file's content (or the fact that
//! it did not exist) is saved content-addressed under `checkpoints/blobs` in the data folder and
//! indexed in the store. Restoring puts every file touched since a checkpoint back as it was,
//! touches nothing else, and is itself recorded as a checkpoint — so a restore can be undone.
//! No git needed.

use codewright_nofollow::MAX_READ_BYTES;
use codewright_protocol::{ErrorKind, TaskId};
use codewright_store::{PreImage, Store, StoreError};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why a checkpoint could not be made, read or restored; each says what was (not) done.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store could not record one (`what`: the checkpoint, the restore, the revert).
    #[error("cannot record the {what}: {source}")]
    Record {
        what: &'static str,
        source: StoreError,
    },
    /// A file could not be read, written or removed, or a saved copy of one is gone.
    #[error("{0}")]
    File(String),
    /// No such checkpoint or turn, or the task's folder is gone.
    #[error("{0}")]
    NotFound(String),
    /// Not done on purpose: a project too large to snapshot, a path outside the project.
    #[error("{0}")]
    Refused(String),
}

impl CheckpointError {
    /// Its kind in the engine's one vocabulary.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CheckpointError::Store(e) | CheckpointError::Record { source: e, .. } => e.kind(),
            CheckpointError::NotFound(_) => ErrorKind::NotFound,
            CheckpointError::File(_) | CheckpointError::Refused(_) => ErrorKind::Checkpoint,
        }
    }
}

/// A checkpoint's result.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;

fn record(what: &'static str) -> impl FnOnce(StoreError) -> CheckpointError {
    move |source| CheckpointError::Record { what, source }
}

/// Files as they were at a moment, their contents saved with the checkpoints' copies
/// ([`Checkpoints::copies`]).
#[derive(Debug)]
pub struct Copies(Vec<PreImage>);

/// One task's checkpoints.
pub struct Checkpoints {
    blobs: PathBuf,
    store: Arc<Mutex<Store>>,
    /// (turn, path) already saved in this process: later changes in the same turn are free.
    saved: Mutex<HashSet<(i64, PathBuf)>>,
    /// Files already saved as blobs, by their stamp: a tree scan only reads what changed.
    known: Mutex<HashMap<PathBuf, (Stamp, String)>>,
}

/// What identifies a file's version without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified_ns: i128,
    inode: u64,
    mode: u32,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            len: meta.len(),
            modified_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            inode: meta.ino(),
            mode: meta.mode() & 0o7777,
        }
    }
}

/// The project's files before a command ran (ignored files and `.git` excluded), each saved as a
/// blob, so whatever the command changes or deletes can be put back.
pub(crate) struct Tree {
    files: HashMap<PathBuf, (Stamp, String)>,
}

/// Projects with more files than this are not snapshotted before commands.
pub(crate) const MAX_TREE_FILES: usize = 20_000;
/// Files larger than this are left out of command snapshots.
const MAX_TREE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Saved copies are private to their owner (they may be copies of private files).
const BLOB_MODE: u32 = 0o600;

/// A file a task changed ([`Checkpoints::task_change`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// As the checkpoint recorded it (absolute).
    pub path: PathBuf,
    /// Its content before the task first changed it; `None`: it was not there.
    pub before: Option<Vec<u8>>,
    /// Its permission bits then, as far as they were recorded.
    pub before_mode: Option<u32>,
    /// Its content now; `None`: it is gone.
    pub now: Option<Vec<u8>>,
}

/// What a restore did, file by file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The checkpoint recording the state before the restore (restore it to undo).
    pub undo_checkpoint: i64,
    /// Files written back to their earlier content.
    pub written: Vec<PathBuf>,
    /// Files removed because they did not exist before.
    pub removed: Vec<PathBuf>,
}

impl Checkpoints {
    pub fn new(home: &Path, store: Arc<Mutex<Store>>) -> Checkpoints {
        Checkpoints {
            blobs: home.join("checkpoints").join("blobs"),
            store,
            saved: Mutex::new(HashSet::new()),
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Snapshots the project before a command: every file's stamp, new or changed ones saved as
    /// blobs. `Err` says why the command's changes will not be undoable.
    pub(crate) fn scan_tree(&self, root: &Path) -> Result<Tree> {
        let stamps = stamps(root)?;
        let mut known = self.known.lock().expect("known lock");
        let mut files = HashMap::with_capacity(stamps.len());
        for (path, stamp) in stamps {
            let hash = match known.get(&path) {
                Some((seen, hash)) if *seen == stamp => hash.clone(),
                _ => {
                    let Ok(Some((content, _))) = codewright_nofollow::read(&path) else {
                        continue;
                    };
                    let hash = blake3::hash(&content).to_hex().to_string();
                    let blob = self.blob_path(&hash);
                    if !blob.exists() {
                        write_atomically(&blob, &content, Some(BLOB_MODE)).map_err(|e| {
                            CheckpointError::File(format!(
                                "cannot save checkpoint copies in {}: {e}",
                                self.blobs.display()
                            ))
                        })?;
                    }
                    known.insert(path.clone(), (stamp, hash.clone()));
                    hash
                }
            };
            files.insert(path, (stamp, hash));
        }
        Ok(Tree { files })
    }

    /// After a command: records, in the turn's checkpoint, the earlier state of every file it
    /// created, changed or deleted. Returns how many files changed.
    pub(crate) fn record_tree_changes(
        &self,
        task: TaskId,
        turn: i64,
        root: &Path,
        before: &Tree,
    ) -> Result<usize> {
        let after = stamps(root)?;
        let mut changed: Vec<PreImage> = Vec::new();
        for (path, (stamp, hash)) in &before.files {
            if after.get(path) != Some(stamp) {
                changed.push(PreImage {
                    path: path.to_string_lossy().into_owned(),
                    blob: Some(hash.clone()),
                    mode: Some(stamp.mode),
                });
            }
        }
        for path in after.keys() {
            if !before.files.contains_key(path) {
                changed.push(PreImage {
                    path: path.to_string_lossy().into_owned(),
                    blob: None,
                    mode: None,
                });
            }
        }
        if changed.is_empty() {
            return Ok(0);
        }
        let store = self.store.lock().expect("store lock");
        let checkpoint = store
            .turn_checkpoint(task, turn)
            .map_err(record("checkpoint"))?;
        let mut saved = self.saved.lock().expect("saved lock");
        for pre in &changed {
            store
                .add_pre_image(checkpoint, pre)
                .map_err(record("checkpoint"))?;
            saved.insert((turn, PathBuf::from(&pre.path)));
        }
        Ok(changed.len())
    }

    /// Saves `path` as it is now into the checkpoint of `turn`, unless this turn already did.
    /// Call it before every change to a file.
    pub fn before_change(&self, task: TaskId, turn: i64, path: &Path) -> Result<()> {
        let key = (turn, path.to_path_buf());
        if self.saved.lock().expect("saved lock").contains(&key) {
            return Ok(());
        }
        let pre = self.snapshot(path)?;
        let store = self.store.lock().expect("store lock");
        let checkpoint = store
            .turn_checkpoint(task, turn)
            .map_err(record("checkpoint"))?;
        store
            .add_pre_image(checkpoint, &pre)
            .map_err(record("checkpoint"))?;
        drop(store);
        self.saved.lock().expect("saved lock").insert(key);
        Ok(())
    }

    /// Puts every file changed by checkpoint `from` or any later one of `task` back as it was
    /// before `from`.
    ///
    /// Each file is written back along its recorded path without following a link that appeared
    /// since (a folder of the project swapped for a link out fails the restore of what is under
    /// it, instead of writing there), and the task's folder (the project's, or its worktree) is
    /// never made again.
    pub fn restore(&self, task: TaskId, from: i64) -> Result<Restored> {
        let (pres, turn, root) = {
            let store = self.store.lock().expect("store lock");
            let root = store.task_folder(task)?.ok_or_else(|| {
                CheckpointError::NotFound(format!(
                    "task {}'s worktree was discarded; restore the task first, then its files",
                    task.0
                ))
            })?;
            let root = root.canonicalize().unwrap_or(root);
            let turn = store
                .checkpoints(task)?
                .into_iter()
                .find(|c| c.id == from)
                .map(|c| c.turn)
                .ok_or_else(|| {
                    CheckpointError::NotFound(format!(
                        "task {} has no checkpoint {from}; it may have been removed with its task",
                        task.0
                    ))
                })?;
            (store.pre_images_since(task, from)?, turn, root)
        };
        if !root.is_dir() {
            return Err(CheckpointError::NotFound(format!(
                "the task's folder {} is gone (deleted or moved); nothing was restored",
                root.display()
            )));
        }
        // (What was written outside the task's folder, with the user's approval, is put back
        // there.)
        let keep = |path: &Path| {
            if path.starts_with(&root) {
                root.clone()
            } else {
                PathBuf::from("/")
            }
        };
        // Record what is there now first, so this restore can be undone.
        let now: Vec<PreImage> = pres
            .iter()
            .map(|p| self.snapshot(Path::new(&p.path)))
            .collect::<Result<_, _>>()?;
        let undo_checkpoint = self
            .store
            .lock()
            .expect("store lock")
            .record_restore(task, turn, &now, None)
            .map_err(record("restore"))?;
        let mut restored = Restored {
            undo_checkpoint,
            written: Vec::new(),
            removed: Vec::new(),
        };
        for pre in pres {
            let path = PathBuf::from(&pre.path);
            match &pre.blob {
                Some(hash) => {
                    let content = std::fs::read(self.blob_path(hash)).map_err(|e| {
                        CheckpointError::File(format!(
                            "the saved copy of {} is missing ({e}); it was not restored",
                            path.display()
                        ))
                    })?;
                    codewright_nofollow::write(&path, &content, pre.mode, &keep(&path)).map_err(
                        |e| {
                            CheckpointError::File(format!("cannot restore {}: {e}", path.display()))
                        },
                    )?;
                    restored.written.push(path);
                }
                None => match codewright_nofollow::remove(&path) {
                    Ok(true) => restored.removed.push(path),
                    Ok(false) => {}
                    Err(e) => {
                        return Err(CheckpointError::File(format!(
                            "cannot remove {}: {e}",
                            path.display()
                        )))
                    }
                },
            }
        }
        self.saved.lock().expect("saved lock").clear();
        Ok(restored)
    }

    /// Restores the checkpoint of a turn (see [`Checkpoints::restore`]).
    pub fn restore_turn(&self, task: TaskId, turn: i64) -> Result<Restored> {
        let id = self
            .store
            .lock()
            .expect("store lock")
            .checkpoints(task)?
            .into_iter()
            .find(|c| c.turn == turn && c.kind == codewright_protocol::CheckpointKind::Turn)
            .map(|c| c.id)
            .ok_or_else(|| {
                CheckpointError::NotFound(format!(
                    "turn {turn} of task {} changed no files",
                    task.0
                ))
            })?;
        self.restore(task, id)
    }

    /// The file's current state, its content saved as a blob.
    fn snapshot(&self, path: &Path) -> Result<PreImage> {
        let shown = path.display();
        // (Read along its path without following a link swapped in since it was checked: the
        // copy is of the project's file, never of what such a link leads to. Copied as it is
        // read, hashed on the way: never held in memory whole.)
        let file = match codewright_nofollow::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PreImage {
                    path: path.to_string_lossy().into_owned(),
                    blob: None,
                    mode: None,
                })
            }
            Err(e) => return Err(CheckpointError::File(format!("cannot read {shown}: {e}"))),
        };
        let meta = file
            .metadata()
            .map_err(|e| CheckpointError::File(format!("cannot read {shown}: {e}")))?;
        if !meta.is_file() {
            return Err(CheckpointError::File(format!(
                "cannot read {shown}: not a regular file"
            )));
        }
        // (A restore reads a copy back whole.)
        let too_large = || {
            CheckpointError::File(format!(
                "{shown} is larger than {} MB, too large to keep a copy of",
                MAX_READ_BYTES >> 20
            ))
        };
        if meta.len() > MAX_READ_BYTES {
            return Err(too_large());
        }
        let hash = self.save_blob(file.take(MAX_READ_BYTES + 1)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::FileTooLarge {
                return too_large();
            }
            CheckpointError::File(format!(
                "cannot save a checkpoint copy of {shown} in {}: {e}",
                self.blobs.display()
            ))
        })?;
        Ok(PreImage {
            path: path.to_string_lossy().into_owned(),
            blob: Some(hash),
            mode: Some(meta.permissions().mode() & 0o7777),
        })
    }

    /// Copies what `file` holds into the blobs as it reads it, hashing on the way; returns the
    /// blob's hash (a blob already there is kept). More than [`MAX_READ_BYTES`] is refused
    /// (`FileTooLarge`: a file that grew while it was copied).
    fn save_blob(&self, mut file: impl std::io::Read) -> std::io::Result<String> {
        std::fs::create_dir_all(&self.blobs)?;
        let mut tmp = tempfile::Builder::new().tempfile_in(&self.blobs)?;
        let mut hasher = blake3::Hasher::new();
        let mut buffer = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        loop {
            let n = match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n as u64;
            if total > MAX_READ_BYTES {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            hasher.update(&buffer[..n]);
            tmp.write_all(&buffer[..n])?;
        }
        let hash = hasher.finalize().to_hex().to_string();
        let blob = self.blob_path(&hash);
        if !blob.exists() {
            tmp.as_file().sync_data()?;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(BLOB_MODE))?;
            std::fs::create_dir_all(blob.parent().unwrap_or(&self.blobs))?;
            tmp.persist(&blob).map_err(|e| e.error)?;
        }
        Ok(hash)
    }

    /// `paths` (files inside `root`, the folder a task works in) as they are now, copied so that
    /// a change made to them next — by someone other than the agent: a review's revert in a
    /// worktree — can be undone like any restore ([`Checkpoints::record_undo`]).
    pub fn copies(&self, root: &Path, paths: &[&Path]) -> Result<Copies> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if let Some(outside) = paths.iter().find(|p| !p.starts_with(&root)) {
            return Err(CheckpointError::Refused(format!(
                "{} is not in the task's folder; put it back from the checkpoints",
                outside.display()
            )));
        }
        let files = paths
            .iter()
            .map(|p| self.snapshot(p))
            .collect::<Result<_>>()?;
        Ok(Copies(files))
    }

    /// The bytes of `path`, a file inside `root` (the folder a task works in), read without
    /// following a link on the way; `None` when it is not there.
    pub fn read(&self, root: &Path, path: &Path) -> Result<Option<Vec<u8>>> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if !path.starts_with(&root) {
            return Err(CheckpointError::Refused(format!(
                "{} is not in the task's folder",
                path.display()
            )));
        }
        codewright_nofollow::read(path)
            .map(|read| read.map(|(content, _)| content))
            .map_err(|e| CheckpointError::File(format!("cannot read {}: {e}", path.display())))
    }

    /// Removes `path`, a file inside `root` (the folder a task works in), without following a
    /// link on the way; `false` when it was not there. Nothing is recorded: the caller copied
    /// it first ([`Checkpoints::copies`], [`Checkpoints::record_undo`]).
    pub fn remove(&self, root: &Path, path: &Path) -> Result<bool> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if !path.starts_with(&root) || path == root {
            return Err(CheckpointError::Refused(format!(
                "{} is not in the task's folder",
                path.display()
            )));
        }
        let removed = codewright_nofollow::remove(path)
            .map_err(|e| CheckpointError::File(format!("cannot remove {}: {e}", path.display())))?;
        self.saved.lock().expect("saved lock").clear();
        Ok(removed)
    }

    /// Whether the files of `copies` are still as they were copied (read, not copied again).
    pub fn unchanged(&self, copies: &Copies) -> Result<bool> {
        for kept in &copies.0 {
            let path = Path::new(&kept.path);
            let unreadable = |e: std::io::Error| {
                CheckpointError::File(format!("cannot read {}: {e}", path.display()))
            };
            // (Hashed as it is read.)
            let (blob, mode) = match codewright_nofollow::open(path) {
                Ok(file) => {
                    let meta = file.metadata().map_err(unreadable)?;
                    // (No copy is of such a file.)
                    if !meta.is_file() || meta.len() > MAX_READ_BYTES {
                        return Ok(false);
                    }
                    let mut hasher = blake3::Hasher::new();
                    hasher
                        .update_reader(file.take(MAX_READ_BYTES + 1))
                        .map_err(unreadable)?;
                    (
                        Some(hasher.finalize().to_hex().to_string()),
                        Some(meta.permissions().mode() & 0o7777),
                    )
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
                Err(e) => return Err(unreadable(e)),
            };
            if (blob.as_deref(), mode) != (kept.blob.as_deref(), kept.mode) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Forgets undo `id` of `task` ([`Checkpoints::record_undo`]): what it was recorded for did
    /// not happen.
    pub fn forget_undo(&self, task: TaskId, id: i64) -> Result<()> {
        self.store
            .lock()
            .expect("store lock")
            .forget_restore(task, id)
            .map_err(record("revert"))
    }

    /// Records `copies` as a restore of `task`'s that put back `reverted` (a path as the user
    /// knows it): undoing it puts them back. Returns the checkpoint's id.
    pub fn record_undo(&self, task: TaskId, copies: &Copies, reverted: &str) -> Result<i64> {
        let mut store = self.store.lock().expect("store lock");
        let turn = store
            .checkpoints(task)?
            .iter()
            .map(|c| c.turn)
            .max()
            .unwrap_or(0);
        store
            .record_restore(task, turn, &copies.0, Some(reverted))
            .map_err(record("revert"))
    }

    /// Puts `path` (a file `task` changed) back to `content` (`None`: removed) with `mode` (else
    /// the mode it has now), recording what is there now first as a restore of the task's, so it
    /// can be undone like any restore. Written along its path without following a link, and only
    /// inside `root`, the folder the task works in (the project's, or its worktree).
    pub fn put_back(
        &self,
        task: TaskId,
        root: &Path,
        path: &Path,
        content: Option<&[u8]>,
        mode: Option<u32>,
    ) -> Result<i64> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let reverted = path.strip_prefix(&root).unwrap_or(path).to_string_lossy();
        let now = self.copies(&root, &[path])?;
        let undo = self.record_undo(task, &now, &reverted)?;
        let now_mode = now.0.first().and_then(|p| p.mode);
        let written = match content {
            Some(content) => codewright_nofollow::write(path, content, mode.or(now_mode), &root)
                .map_err(|e| {
                    CheckpointError::File(format!("cannot write {}: {e}", path.display()))
                }),
            None => codewright_nofollow::remove(path).map(drop).map_err(|e| {
                CheckpointError::File(format!("cannot remove {}: {e}", path.display()))
            }),
        };
        if let Err(e) = written {
            // (Written whole or not at all: nothing changed, and there is nothing to undo.)
            let _ = self.forget_undo(task, undo);
            return Err(e);
        }
        self.saved.lock().expect("saved lock").clear();
        Ok(undo)
    }

    /// What `task` changed, file by file: each file its checkpoints saved, with its content
    /// before the task first changed it (`None`: it was not there) and as it is now (`None`:
    /// gone, or not a file any more). Files now as they were are left out.
    pub fn task_change(&self, task: TaskId) -> Result<Vec<ChangedFile>> {
        let pres = self
            .store
            .lock()
            .expect("store lock")
            .pre_images_since(task, 0)?;
        let mut out = Vec::new();
        for pre in pres {
            let path = PathBuf::from(&pre.path);
            let before = match &pre.blob {
                Some(hash) => Some(std::fs::read(self.blob_path(hash)).map_err(|e| {
                    CheckpointError::File(format!(
                        "the copy of {} before the task is unreadable: {e}",
                        path.display()
                    ))
                })?),
                None => None,
            };
            // (A file too large to read is said, not shown as gone.)
            let now = match codewright_nofollow::read(&path) {
                Ok(now) => now.map(|(bytes, _)| bytes),
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    return Err(CheckpointError::File(e.to_string()))
                }
                Err(_) => None,
            };
            if before != now {
                out.push(ChangedFile {
                    path,
                    before,
                    before_mode: pre.mode,
                    now,
                });
            }
        }
        Ok(out)
    }

    fn blob_path(&self, hash: &str) -> PathBuf {
        self.blobs.join(&hash[..2]).join(&hash[2..])
    }
}

/// The stamps of the project's files (what .gitignore ignores, `.git`, and files over 10 MB left
/// out).
fn stamps(root: &Path) -> Result<HashMap<PathBuf, Stamp>> {
    let found = Mutex::new(HashMap::new());
    let too_many = std::sync::atomic::AtomicBool::new(false);
    crate::files::walker(root).build_parallel().run(|| {
        Box::new(|entry| {
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let Ok(meta) = entry.metadata() else {
                return ignore::WalkState::Continue;
            };
            if meta.len() > MAX_TREE_FILE_BYTES {
                return ignore::WalkState::Continue;
            }
            let mut found = found.lock().expect("found lock");
            if found.len() >= MAX_TREE_FILES {
                too_many.store(true, std::sync::atomic::Ordering::Relaxed);
                return ignore::WalkState::Quit;
            }
            found.insert(entry.into_path(), Stamp::of(&meta));
            ignore::WalkState::Continue
        })
    });
    if too_many.into_inner() {
        return Err(CheckpointError::Refused(format!(
            "the project has more than {MAX_TREE_FILES} files, too many to snapshot before each command"
        )));
    }
    Ok(found.into_inner().expect("found lock"))
}

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so a
/// crash never leaves a half-written file. Creates missing parent folders. The file gets `mode`,
/// else the mode it has now, else — a new file — 0666 less the umask, as any program creating
/// it would give. For Codewright's own files (the checkpoints' copies); a project's files are
/// written with `codewright_nofollow::write`, which never follows a link swapped in on the way.
pub(crate) fn write_atomically(
    path: &Path,
    content: &[u8],
    mode: Option<u32>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = mode.or_else(|| {
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    });
    let mut builder = tempfile::Builder::new();
    if mode.is_none() {
        // The kernel applies the umask to the mode a file is created with.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(content)?;
    tmp.as_file().sync_data()?;
    if let Some(mode) = mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
