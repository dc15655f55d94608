//! What tools keep: the permission rules a project saved, the checkpoint index (which files a
//! turn changed and the content-addressed blob each held before), and what each task's agent
//! last saw of the files it read or wrote.

use crate::{now_ms, Result, Store, StoreError};
use codewright_protocol::{
    Checkpoint, CheckpointFile, CheckpointKind, PermissionRule, ProjectId, RuleAction, SavedRule,
    TaskId,
};
use rusqlite::{params, OptionalExtension};

/// A file's state before a checkpointed change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreImage {
    /// Absolute path.
    pub path: String,
    /// BLAKE3 (hex) of the content; `None` when the file did not exist.
    pub blob: Option<String>,
    /// Unix permission bits.
    pub mode: Option<u32>,
}

impl Store {
    /// The rules saved for a project, oldest first.
    pub fn rules(&self, project: ProjectId) -> Result<Vec<SavedRule>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, tool, pattern, action, created_at FROM permission_rules
             WHERE project_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([project.0], |r| {
            let action: String = r.get(3)?;
            Ok(SavedRule {
                id: r.get(0)?,
                project_id: project,
                rule: PermissionRule {
                    tool: r.get(1)?,
                    pattern: r.get(2)?,
                    action: RuleAction::parse(&action).unwrap_or(RuleAction::Ask),
                },
                created_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Saves a rule for a project (replacing the action of an equal tool + pattern).
    pub fn save_rule(&self, project: ProjectId, rule: &PermissionRule) -> Result<SavedRule> {
        if rule.tool.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a rule needs a tool name (or * for every tool)".into(),
            ));
        }
        let id: i64 = self.conn.query_row(
            "INSERT INTO permission_rules (project_id, tool, pattern, action, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(project_id, tool, pattern) DO UPDATE SET action = ?4
             RETURNING id",
            params![
                project.0,
                rule.tool,
                rule.pattern,
                rule.action.as_str(),
                now_ms()
            ],
            |r| r.get(0),
        )?;
        self.rules(project)?
            .into_iter()
            .find(|r| r.id == id)
            .ok_or(StoreError::NotFound { what: "rule", id })
    }

    /// Removes a saved rule.
    pub fn remove_rule(&self, id: i64) -> Result<()> {
        if self
            .conn
            .execute("DELETE FROM permission_rules WHERE id = ?1", [id])?
            == 0
        {
            return Err(StoreError::NotFound { what: "rule", id });
        }
        Ok(())
    }

    /// The checkpoint of a task's turn, creating it if needed.
    pub fn turn_checkpoint(&self, task: TaskId, turn: i64) -> Result<i64> {
        if let Some(id) = self
            .conn
            .query_row(
                "SELECT id FROM checkpoints WHERE task_id = ?1 AND turn = ?2 AND kind = 'turn'",
                params![task.0, turn],
                |r| r.get(0),
            )
            .optional()?
        {
            return Ok(id);
        }
        self.conn.execute(
            "INSERT INTO checkpoints (task_id, turn, kind, created_at) VALUES (?1, ?2, 'turn', ?3)",
            params![task.0, turn, now_ms()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records a file's pre-image in a checkpoint. The first record of a path wins: a checkpoint
    /// keeps the state from before its first change.
    pub fn add_pre_image(&self, checkpoint: i64, pre: &PreImage) -> Result<bool> {
        let added = self.conn.execute(
            "INSERT OR IGNORE INTO checkpoint_files (checkpoint_id, path, blob, mode)
             VALUES (?1, ?2, ?3, ?4)",
            params![checkpoint, pre.path, pre.blob, pre.mode],
        )?;
        Ok(added == 1)
    }

    /// Records a restore: a new checkpoint holding the pre-images of the files it is about to
    /// overwrite, in one transaction. `reverted`: the file a review's Revert puts back (its path
    /// in the project), for a restore made by one.
    pub fn record_restore(
        &mut self,
        task: TaskId,
        turn: i64,
        files: &[PreImage],
        reverted: Option<&str>,
    ) -> Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO checkpoints (task_id, turn, kind, created_at, reverted)
             VALUES (?1, ?2, 'restore', ?3, ?4)",
            params![task.0, turn, now_ms(), reverted],
        )?;
        let id = tx.last_insert_rowid();
        for pre in files {
            tx.execute(
                "INSERT OR IGNORE INTO checkpoint_files (checkpoint_id, path, blob, mode)
                 VALUES (?1, ?2, ?3, ?4)",
                params![id, pre.path, pre.blob, pre.mode],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Forgets restore `id` of `task`, recorded for a change that then did not happen (its
    /// copies' blobs stay until the blobs are swept). A turn's checkpoint is never forgotten.
    pub fn forget_restore(&mut self, task: TaskId, id: i64) -> Result<()> {
        self.conn.execute(
            "DELETE FROM checkpoints WHERE id = ?1 AND task_id = ?2 AND kind = 'restore'",
            params![id, task.0],
        )?;
        Ok(())
    }

    /// The checkpoints of a task, oldest first, with their files.
    pub fn checkpoints(&self, task: TaskId) -> Result<Vec<Checkpoint>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.id, c.turn, c.kind, c.created_at, f.path, f.blob IS NOT NULL, c.reverted
             FROM checkpoints c LEFT JOIN checkpoint_files f ON f.checkpoint_id = c.id
             WHERE c.task_id = ?1 ORDER BY c.id, f.path",
        )?;
        let mut rows = stmt.query([task.0])?;
        let mut out: Vec<Checkpoint> = Vec::new();
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            if out.last().map(|c| c.id) != Some(id) {
                let kind: String = r.get(2)?;
                out.push(Checkpoint {
                    id,
                    task_id: task,
                    turn: r.get(1)?,
                    kind: if kind == "restore" {
                        CheckpointKind::Restore
                    } else {
                        CheckpointKind::Turn
                    },
                    files: Vec::new(),
                    created_at: r.get(3)?,
                    reverted: r.get(6)?,
                });
            }
            if let Some(path) = r.get::<_, Option<String>>(4)? {
                let existed: bool = r.get(5)?;
                out.last_mut()
                    .expect("pushed above")
                    .files
                    .push(CheckpointFile { path, existed });
            }
        }
        Ok(out)
    }

    /// The pre-images needed to undo checkpoint `from` and everything after it in its task: for
    /// each file touched since, its state at the earliest of those checkpoints.
    pub fn pre_images_since(&self, task: TaskId, from: i64) -> Result<Vec<PreImage>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT f.path, f.blob, f.mode FROM checkpoint_files f
             JOIN checkpoints c ON c.id = f.checkpoint_id
             WHERE c.task_id = ?1 AND c.id >= ?2
             ORDER BY f.path, c.id",
        )?;
        let rows = stmt.query_map(params![task.0, from], |r| {
            Ok(PreImage {
                path: r.get(0)?,
                blob: r.get(1)?,
                mode: r.get(2)?,
            })
        })?;
        let mut out: Vec<PreImage> = Vec::new();
        for pre in rows {
            let pre = pre?;
            if out.last().map(|p| &p.path) != Some(&pre.path) {
                out.push(pre);
            }
        }
        Ok(out)
    }

    /// Records that a task's agent saw `path` with this content hash (BLAKE3).
    pub fn remember_file(&self, task: TaskId, path: &str, hash: &[u8; 32]) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO files_seen (task_id, path, hash) VALUES (?1, ?2, ?3)
                 ON CONFLICT(task_id, path) DO UPDATE SET hash = ?3",
            )?
            .execute(params![task.0, path, &hash[..]])?;
        Ok(())
    }

    /// Every file a task's agent saw, with the hash of what it saw.
    pub fn files_seen(&self, task: TaskId) -> Result<Vec<(String, [u8; 32])>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, hash FROM files_seen WHERE task_id = ?1")?;
        let rows = stmt.query_map([task.0], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (path, hash) = row?;
            if let Ok(hash) = <[u8; 32]>::try_from(hash) {
                out.push((path, hash));
            }
        }
        Ok(out)
    }
}
