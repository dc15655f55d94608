//! What a task working in the project folder changed, for review: each file its checkpoints
//! saved, as it was before the task first changed it, against the file as it is now. (A change
//! someone else made since to one of those files shows too; a file the task never touched does
//! not.) A file or a hunk of it is put back as it was before the task, as a restore of the
//! task's that can itself be undone. Each file says whether its change is committed yet
//! ([`FolderReview`]); a commit takes those that are not. A task in a worktree of its own is
//! reviewed against its base instead ([`Host::task_changes`]).

use crate::worktrees::HunkRef;
use crate::{Host, HostError};
use codewright_git::FileChange;
use codewright_protocol::{ErrorKind, LineKind, TaskId};
use codewright_tools::Checkpoints;
use serde::Serialize;
use std::path::Path;

/// What a task working in the project folder changed, and how much of it is committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderReview {
    pub files: Vec<FileChange>,
    /// Those of `files` inside the folder that are not as the folder's branch's last commit has
    /// them — what a commit would take; `None` when the folder is in no git repository. (The
    /// others are committed, or ignored by git.)
    pub uncommitted: Option<Vec<String>>,
    /// Those of `files` that git ignores: no commit takes them.
    pub ignored: Vec<String>,
    /// Those of `files` as the folder's branch's last commit has them.
    pub committed: Vec<String>,
}

impl Host {
    /// [`Host::folder_changes`], with which of the files are not committed yet.
    pub fn folder_review(&self, task: TaskId) -> Result<FolderReview, HostError> {
        let files = self.folder_changes(task)?;
        let t = self.task(task)?;
        let project = self.project(t.project_id)?;
        let root = Path::new(&project.root_path);
        let inside: Vec<String> = files
            .iter()
            .map(|f| f.path.clone())
            .filter(|p| !Path::new(p).is_absolute())
            .collect();
        // (Not a repository, or git failing: the change is shown all the same, without marks.)
        // (A deletion committed since the task began is committed too.)
        let since = t.created_at / 1000;
        let found = codewright_git::Repo::discover(root)
            .and_then(|repo| repo.not_committed(root, &inside, Some(since)));
        Ok(match found {
            Ok(found) => FolderReview {
                files,
                uncommitted: Some(found.open),
                ignored: found.ignored,
                committed: found.committed,
            },
            Err(_) => FolderReview {
                files,
                uncommitted: None,
                ignored: Vec::new(),
                committed: Vec::new(),
            },
        })
    }
}

impl Host {
    /// The files the task changed in the project folder, by path inside it, with their hunks
    /// (a file it changed outside the folder, with the user's approval, by its whole path).
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
            .map_err(HostError::from)?;
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

impl Host {
    /// Puts a file the task changed in the project folder (or one hunk of it, as the review
    /// showed it) back as it was before the task; refused when it changed since it was read.
    pub(crate) fn revert_folder_change(
        &self,
        task: TaskId,
        path: &str,
        hunk: Option<HunkRef>,
    ) -> Result<(), HostError> {
        if Path::new(path).is_absolute() {
            // (Listed by its whole path: the task changed it outside the project folder.)
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!("{path} is outside the project folder, where Revert does not write: undo the task's turn that changed it instead"),
            ));
        }
        let project = self.project(self.task(task)?.project_id)?;
        let root = Path::new(&project.root_path);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let checkpoints = Checkpoints::new(&self.inner.home, self.inner.store.clone());
        let moved = || {
            HostError::new(
                ErrorKind::Conflict,
                format!("{path} has changed since the review was read; look at it again"),
            )
        };
        let file = checkpoints
            .task_change(task)
            .map_err(HostError::from)?
            .into_iter()
            .find(|f| {
                f.path
                    .strip_prefix(&root)
                    .is_ok_and(|p| p == Path::new(path))
            })
            .ok_or_else(moved)?;
        // A file put back whole gets its mode from before too; one hunk of it keeps its mode now
        // (when it is gone, the one it had before).
        let mode = match (&hunk, &file.now) {
            (Some(_), Some(_)) => None,
            _ => file.before_mode,
        };
        let content = match hunk {
            None => file.before.clone(),
            Some(wanted) => {
                let text = |bytes: &Option<Vec<u8>>| match bytes {
                    None => Some(String::new()),
                    Some(b) => String::from_utf8(b.clone()).ok(),
                };
                let (Some(before), Some(now)) = (text(&file.before), text(&file.now)) else {
                    return Err(moved());
                };
                let hunks = codewright_tools::hunks(&before, &now);
                hunks
                    .get(wanted.index)
                    .filter(|h| h.old_start == wanted.old_start && h.new_start == wanted.new_start)
                    .ok_or_else(moved)?;
                // The file now, less that one hunk: every other hunk of the change applied.
                let others: Vec<usize> = (0..hunks.len()).filter(|i| *i != wanted.index).collect();
                let kept = codewright_tools::apply_hunks(&before, &now, &others);
                // (A new file whose only hunk goes is gone again.)
                (!kept.is_empty() || file.before.is_some()).then(|| kept.into_bytes())
            }
        };
        checkpoints
            .put_back(task, &root, &file.path, content.as_deref(), mode)
            .map(drop)
            .map_err(HostError::from)
    }
}

impl Host {
    /// What a commit of the task's folder change would take — its files not committed yet (all
    /// of them outside a git repository) — and the same as a unified diff.
    pub(crate) fn folder_change_and_patch(
        &self,
        task: TaskId,
    ) -> Result<(Vec<FileChange>, String), HostError> {
        let review = self.folder_review(task)?;
        let files: Vec<FileChange> = match &review.uncommitted {
            None => review.files,
            Some(open) => review
                .files
                .into_iter()
                .filter(|f| open.contains(&f.path))
                .collect(),
        };
        let patch = patch_of(&files);
        Ok((files, patch))
    }

    /// Commits the files the task changed in the project folder — those inside it not committed
    /// yet, as they are now — and nothing else, on the folder's current branch (caller holds
    /// the task).
    pub(crate) fn commit_folder_task(
        &self,
        task: TaskId,
        message: Option<&str>,
    ) -> Result<crate::worktrees::Committed, HostError> {
        let t = self.task(task)?;
        let project = self.project(t.project_id)?;
        let root = Path::new(&project.root_path);
        let repo = codewright_git::Repo::discover(root)?;
        let review = self.folder_review(task)?;
        if review
            .files
            .iter()
            .all(|f| Path::new(&f.path).is_absolute())
        {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!(
                    "task {} has changed no file in the project folder: there is nothing to commit",
                    task.0
                ),
            ));
        }
        let branch = repo.branch_in(root)?.unwrap_or_else(|| "HEAD".into());
        let files = review.uncommitted.unwrap_or_default();
        if files.is_empty() {
            // All of it is committed already.
            return Ok(crate::worktrees::Committed {
                commit: None,
                branch,
            });
        }
        let message = message.map(str::to_string).unwrap_or(t.title);
        let commit = repo.commit_files(root, &files, &message)?;
        Ok(crate::worktrees::Committed { commit, branch })
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
