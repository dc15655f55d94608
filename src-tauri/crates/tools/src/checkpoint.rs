//! Per-turn checkpoints. Before a turn first changes a file, the file's content (or the fact that
//! it did not exist) is saved content-addressed under `checkpoints/blobs` in the data folder and
//! indexed in the store. Restoring puts every file touched since a checkpoint back as it was,
//! touches nothing else, and is itself recorded as a checkpoint — so a restore can be undone.
//! No git needed.

use codewright_protocol::TaskId;
use codewright_store::{PreImage, Store};
use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One task's checkpoints.
pub struct Checkpoints {
    blobs: PathBuf,
    store: Arc<Mutex<Store>>,
    /// (turn, path) already saved in this process: later changes in the same turn are free.
    saved: Mutex<HashSet<(i64, PathBuf)>>,
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
        }
    }

    /// Saves `path` as it is now into the checkpoint of `turn`, unless this turn already did.
    /// Call it before every change to a file.
    pub fn before_change(&self, task: TaskId, turn: i64, path: &Path) -> Result<(), String> {
        let key = (turn, path.to_path_buf());
        if self.saved.lock().expect("saved lock").contains(&key) {
            return Ok(());
        }
        let pre = self.snapshot(path)?;
        let store = self.store.lock().expect("store lock");
        let checkpoint = store
            .turn_checkpoint(task, turn)
            .map_err(|e| format!("cannot record the checkpoint: {e}"))?;
        store
            .add_pre_image(checkpoint, &pre)
            .map_err(|e| format!("cannot record the checkpoint: {e}"))?;
        drop(store);
        self.saved.lock().expect("saved lock").insert(key);
        Ok(())
    }

    /// Puts every file changed by checkpoint `from` or any later one of `task` back as it was
    /// before `from`.
    pub fn restore(&self, task: TaskId, from: i64) -> Result<Restored, String> {
        let (pres, turn) = {
            let store = self.store.lock().expect("store lock");
            let turn = store
                .checkpoints(task)
                .map_err(|e| e.to_string())?
                .into_iter()
                .find(|c| c.id == from)
                .map(|c| c.turn)
                .ok_or_else(|| {
                    format!("task {} has no checkpoint {from}; list them with `codewright-cli checkpoints list {}`", task.0, task.0)
                })?;
            (store.pre_images_since(task, from).map_err(|e| e.to_string())?, turn)
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
            .record_restore(task, turn, &now)
            .map_err(|e| format!("cannot record the restore: {e}"))?;
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
                        format!("the saved copy of {} is missing ({e}); it was not restored", path.display())
                    })?;
                    write_atomically(&path, &content, pre.mode)
                        .map_err(|e| format!("cannot restore {}: {e}", path.display()))?;
                    restored.written.push(path);
                }
                None => match std::fs::remove_file(&path) {
                    Ok(()) => restored.removed.push(path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("cannot remove {}: {e}", path.display())),
                },
            }
        }
        self.saved.lock().expect("saved lock").clear();
        Ok(restored)
    }

    /// Restores the checkpoint of a turn (see [`Checkpoints::restore`]).
    pub fn restore_turn(&self, task: TaskId, turn: i64) -> Result<Restored, String> {
        let id = self
            .store
            .lock()
            .expect("store lock")
            .checkpoints(task)
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|c| c.turn == turn && c.kind == codewright_protocol::CheckpointKind::Turn)
            .map(|c| c.id)
            .ok_or_else(|| format!("turn {turn} of task {} changed no files", task.0))?;
        self.restore(task, id)
    }

    /// The file's current state, its content saved as a blob.
    fn snapshot(&self, path: &Path) -> Result<PreImage, String> {
        let shown = path.display();
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {
                let content =
                    std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
                let hash = blake3::hash(&content).to_hex().to_string();
                let blob = self.blob_path(&hash);
                if !blob.exists() {
                    write_atomically(&blob, &content, None).map_err(|e| {
                        format!("cannot save a checkpoint copy of {shown} in {}: {e}", self.blobs.display())
                    })?;
                }
                Ok(PreImage {
                    path: path.to_string_lossy().into_owned(),
                    blob: Some(hash),
                    mode: Some(meta.permissions().mode() & 0o7777),
                })
            }
            Ok(_) => Err(format!("{shown} is not a regular file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PreImage {
                path: path.to_string_lossy().into_owned(),
                blob: None,
                mode: None,
            }),
            Err(e) => Err(format!("cannot read {shown}: {e}")),
        }
    }

    fn blob_path(&self, hash: &str) -> PathBuf {
        self.blobs.join(&hash[..2]).join(&hash[2..])
    }
}

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so a
/// crash never leaves a half-written file. Creates missing parent folders.
pub(crate) fn write_atomically(
    path: &Path,
    content: &[u8],
    mode: Option<u32>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(content)?;
    tmp.as_file().sync_data()?;
    let mode = mode.or_else(|| {
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    });
    if let Some(mode) = mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
