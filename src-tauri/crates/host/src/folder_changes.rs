//! What a task working in the project folder changed, for review: each file its checkpoints
//! saved, as it was before the task first changed it, against the file as it is now. (A change
//! someone else made since to one of those files shows too; a file the task never touched does
//! not.) A task in a worktree of its own is reviewed against its base instead
//! ([`Host::task_changes`]).

use crate::{Host, HostError};
use codewright_git::FileChange;
use codewright_protocol::{ErrorKind, LineKind, TaskId};
use codewright_tools::Checkpoints;
use std::path::Path;

impl Host {
    /// The files the task changed in the project folder, by path inside it, with their hunks.
    pub fn folder_changes(&self, task: TaskId) -> Result<Vec<FileChange>, HostError> {
        let t = self.task(task)?;
        if t.worktree.is_some() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!(
                    "task {} works in a worktree of its own: its change is read against its base",
                    task.0
                ),
            ));
        }
        let project = self.project(t.project_id)?;
        let root = Path::new(&project.root_path);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let changed = Checkpoints::new(&self.inner.home, self.inner.store.clone())
            .task_change(task)
            .map_err(|e| HostError::new(ErrorKind::Checkpoint, e))?;
        let mut files: Vec<FileChange> = changed
            .into_iter()
            .map(|file| {
                let path = file
                    .path
                    .strip_prefix(&root)
                    .unwrap_or(&file.path)
                    .to_string_lossy()
                    .into_owned();
                let text = |bytes: &Option<Vec<u8>>| match bytes {
                    None => Some(String::new()),
                    Some(b) => String::from_utf8(b.clone()).ok(),
                };
                let (created, deleted) = (file.before.is_none(), file.now.is_none());
                match (text(&file.before), text(&file.now)) {
                    (Some(before), Some(now)) => {
                        let hunks = codewright_tools::hunks(&before, &now);
                        let count = |kind: LineKind| {
                            hunks
                                .iter()
                                .flat_map(|h| &h.lines)
                                .filter(|l| l.kind == kind)
                                .count() as u64
                        };
                        FileChange {
                            path,
                            old_path: None,
                            added: Some(count(LineKind::Added)),
                            removed: Some(count(LineKind::Removed)),
                            created,
                            deleted,
                            hunks,
                        }
                    }
                    // Not text: changed, without lines.
                    _ => FileChange {
                        path,
                        old_path: None,
                        added: None,
                        removed: None,
                        created,
                        deleted,
                        hunks: Vec::new(),
                    },
                }
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }
}

/// `files` as a unified diff (`a/` before the task, `b/` now).
pub fn patch_of(files: &[FileChange]) -> String {
    let mut out = String::new();
    for file in files {
        let (from, to) = (
            match file.created {
                true => "/dev/null".to_string(),
                false => format!("a/{}", file.path),
            },
            match file.deleted {
                true => "/dev/null".to_string(),
                false => format!("b/{}", file.path),
            },
        );
        out.push_str(&format!("--- {from}\n+++ {to}\n"));
        if file.added.is_none() {
            out.push_str(&format!("Binary file {} changed\n", file.path));
        }
        for hunk in &file.hunks {
            // (An empty side starts at the line before, as git writes it.)
            let start = |at: usize, lines: usize| if lines == 0 { at - 1 } else { at };
            out.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                start(hunk.old_start, hunk.old_lines),
                hunk.old_lines,
                start(hunk.new_start, hunk.new_lines),
                hunk.new_lines
            ));
            for line in &hunk.lines {
                let mark = match line.kind {
                    LineKind::Added => '+',
                    LineKind::Removed => '-',
                    LineKind::Context => ' ',
                };
                out.push_str(&format!("{mark}{}\n", line.text));
            }
        }
    }
    out
}
