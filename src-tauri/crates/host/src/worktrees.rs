//! Tasks in git worktrees of their own: made with the task, on a new branch from the base the
//! user picks, in the data folder's `worktrees/<project>/<task>`; the task's whole change read for
//! review; committed, merged into its base, discarded (its work kept under
//! `refs/codewright/archive/<task>`) and restored. The task window, the main window and the CLI
//! all call these.
//!
//! The invariants (ARCHITECTURE.md, "Never lose work"): a worktree is only ever removed after
//! its branch and its uncommitted files are kept under the archive ref; a merge that conflicts
//! changes neither side; a worktree Codewright did not make is never touched; and nothing here
//! runs while a run holds the task.

use crate::{Host, HostError};
use codewright_git::{Changes, GitError, MergeMode, Repo, Status, Worktree};
use codewright_protocol::{
    ErrorKind, Message, ProjectId, Task, TaskId, TaskWorktree, WorktreeState,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use codewright_git::{FileChange, MergeMode as Merge, Merged};

impl From<GitError> for HostError {
    fn from(e: GitError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

/// A task's whole change, for review.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskChanges {
    pub worktree: TaskWorktree,
    pub status: Status,
    pub changes: Changes,
}

/// What a commit did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Committed {
    /// The new commit; `None` when there was nothing to commit.
    pub commit: Option<String>,
    pub branch: String,
}

/// What discarding a task's worktree kept.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discarded {
    /// Where the work is kept: its branch's commits and its uncommitted files.
    pub archive_ref: String,
    pub commit: String,
    /// The files that were not committed (kept in the archive all the same).
    pub uncommitted: Vec<String>,
}

/// A hunk as the review showed it: which one of the file's, and where it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HunkRef {
    pub index: usize,
    pub old_start: usize,
    pub new_start: usize,
}

/// A comment the user wrote on lines of the task's change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewComment {
    pub path: String,
    /// The first line it is on (in the file as it is now), 1-based.
    pub line: usize,
    /// The lines it is on, as they read.
    pub quote: String,
    pub comment: String,
}

/// The message that sends review comments to the agent: each with its file, line and the code
/// it is on.
pub fn review_message(comments: &[ReviewComment]) -> String {
    let mut out = String::from(
        "I reviewed your change. Address each of these comments, then say briefly what you did:\n",
    );
    for (n, c) in comments.iter().enumerate() {
        out.push_str(&format!("\n{}. {}:{}\n", n + 1, c.path, c.line));
        for line in c.quote.lines().take(20) {
            out.push_str(&format!("   > {line}\n"));
        }
        for line in c.comment.trim().lines() {
            out.push_str(&format!("   {line}\n"));
        }
    }
    out
}

/// What the small model is asked for a commit message.
const COMMIT_PROMPT: &str = "Write the git commit message for the change below. The first line \
is a summary of at most 72 characters in the imperative mood (\"Add …\", \"Fix …\"); if more \
needs saying, a blank line and a few short lines follow. Reply with the message only: no quotes, \
no code fences, no preamble.";

/// The diff sent for a commit message is cut here (a small model's window is small).
const COMMIT_PROMPT_DIFF_CHARS: usize = 12_000;

/// The commit message in a model's reply: fences and quotes taken off, the summary line kept to
/// 72 characters.
fn commit_message_of(reply: &str) -> String {
    let text = reply.trim();
    let text = text
        .strip_prefix("```")
        .map(|rest| rest.split_once('\n').map_or("", |(_, body)| body))
        .unwrap_or(text);
    let text = text.trim_end().strip_suffix("```").unwrap_or(text).trim();
    let text = text.trim_matches('"').trim();
    let mut lines = text.lines();
    let summary: String = lines.next().unwrap_or_default().chars().take(72).collect();
    let rest: Vec<&str> = lines.collect();
    match rest.is_empty() {
        true => summary,
        false => format!("{summary}\n{}", rest.join("\n"))
            .trim_end()
            .to_string(),
    }
}

/// `codewright/<the title's words>`: lowercase letters, digits and dashes, at most 40.
fn branch_name(title: &str, task: TaskId) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_matches('-');
    match slug.is_empty() {
        true => format!("codewright/task-{}", task.0),
        false => format!("codewright/{slug}"),
    }
}

impl Host {
    /// Where a project's task worktrees are made.
    fn worktree_path(&self, project: ProjectId, task: TaskId) -> PathBuf {
        self.inner
            .home
            .join("worktrees")
            .join(project.0.to_string())
            .join(task.0.to_string())
    }

    /// A new task that works in a git worktree of its own, on a new branch from `base` (a
    /// branch or commit; `None`: the project's current branch), with `first` as its first
    /// message (else none yet: `title` names it). A folder that is not in a git repository (or
    /// a base that does not exist) is an error, and no task is made.
    pub fn add_task_in_worktree(
        &self,
        project: ProjectId,
        title: Option<&str>,
        first: Option<&Message>,
        base: Option<&str>,
    ) -> Result<Task, HostError> {
        let project_root = PathBuf::from(self.project(project)?.root_path);
        let repo = Repo::discover(&project_root)?;
        if let Some(base) = base {
            repo.commit_of(base)?;
        } else {
            repo.commit_of("HEAD")?;
        }
        let subdir = subdir_of(&project_root, repo.root());
        let task = match first {
            Some(first) => self.add_task_with(project, title, first)?,
            None => self.add_task(project, title.unwrap_or_default())?,
        };
        let made = repo.add_worktree(
            &self.worktree_path(project, task.id),
            &branch_name(&task.title, task.id),
            base,
        );
        let made = match made {
            Ok(made) => made,
            Err(e) => {
                // The request is the user's to keep: the error goes back with it, and no task
                // is left that would work in the project's folder instead.
                let _ = self.inner.store().remove_task(task.id);
                return Err(e.into());
            }
        };
        let worktree = TaskWorktree {
            path: made.path.to_string_lossy().into_owned(),
            subdir,
            branch: made.branch,
            base: made.base,
            base_commit: made.base_commit,
            state: WorktreeState::Active,
        };
        Ok(self
            .inner
            .store()
            .set_task_worktree(task.id, Some(&worktree))?)
    }

    /// The task's worktree and its repository; an error that says so when the task works in
    /// the project's folder, or when its worktree was discarded (`want` the state needed).
    fn worktree_of(
        &self,
        task: TaskId,
        want: WorktreeState,
    ) -> Result<(Task, TaskWorktree, Repo), HostError> {
        let t = self.task(task)?;
        let Some(tree) = t.worktree.clone() else {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!(
                    "task {} works in the project's folder, not in a worktree of its own",
                    task.0
                ),
            ));
        };
        if tree.state != want {
            return Err(HostError::new(
                ErrorKind::BadInput,
                match tree.state {
                    WorktreeState::Discarded => format!(
                        "task {}'s worktree was discarded; restore it first (its work is kept under {})",
                        task.0,
                        TaskWorktree::archive_ref(task)
                    ),
                    WorktreeState::Active => {
                        format!("task {}'s worktree is there; nothing to restore", task.0)
                    }
                },
            ));
        }
        let project = self.project(t.project_id)?;
        let repo = Repo::discover(Path::new(&project.root_path))?;
        Ok((t, tree, repo))
    }

    /// Everything the task changed against where its branch left its base (committed or not,
    /// new files included), and where its branch stands.
    pub fn task_changes(&self, task: TaskId) -> Result<TaskChanges, HostError> {
        let (_, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        Ok(TaskChanges {
            status: repo.status(&git)?,
            changes: repo.changes(&git)?,
            worktree: tree,
        })
    }

    /// Commits everything not committed in the task's worktree, on its branch; `message`
    /// (`None`: the task's title).
    pub fn commit_task(&self, task: TaskId, message: Option<&str>) -> Result<Committed, HostError> {
        let _held = self.hold(task, "the task is running; commit once it stops")?;
        let (t, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        ensure_there(&as_git(&tree))?;
        let message = message.map(str::to_string).unwrap_or(t.title);
        Ok(Committed {
            commit: repo.commit_all(Path::new(&tree.path), &message)?,
            branch: tree.branch,
        })
    }

    /// Merges the task's branch into its base. Uncommitted files in the worktree are not part
    /// of it: commit them first. A conflict is an error naming the files, and nothing changes.
    pub fn merge_task(&self, task: TaskId, mode: MergeMode) -> Result<Merged, HostError> {
        let _held = self.hold(task, "the task is running; merge once it stops")?;
        let (_, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        let uncommitted = repo.uncommitted(&git.path)?;
        if !uncommitted.is_empty() {
            return Err(HostError::new(
                ErrorKind::Conflict,
                format!(
                    "task {} has changes that are not committed ({}): commit them first, so the merge takes them",
                    task.0,
                    list(&uncommitted)
                ),
            ));
        }
        Ok(repo.merge(&git, mode)?)
    }

    /// Removes the task's worktree and branch after keeping all of its work — commits and
    /// uncommitted files — under `refs/codewright/archive/<task>`; [`Host::restore_task`]
    /// brings it back.
    pub fn discard_task(&self, task: TaskId) -> Result<Discarded, HostError> {
        let _held = self.hold(
            task,
            "the task is running; stop it before discarding its work",
        )?;
        let (_, mut tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        let uncommitted = repo.uncommitted(&git.path)?;
        let archive_ref = TaskWorktree::archive_ref(task);
        let commit = repo.archive(&git, &archive_ref)?;
        tree.state = WorktreeState::Discarded;
        self.inner.store().set_task_worktree(task, Some(&tree))?;
        Ok(Discarded {
            archive_ref,
            commit,
            uncommitted,
        })
    }

    /// Puts a file of the task's change back as it was at its base, or one hunk of it (`hunk`,
    /// as the review showed it: refused when the change has moved since, so what is reverted is
    /// what the user saw).
    pub fn revert_change(
        &self,
        task: TaskId,
        path: &str,
        hunk: Option<HunkRef>,
    ) -> Result<(), HostError> {
        let _held = self.hold(task, "the task is running; revert once it stops")?;
        let (_, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        let changes = repo.changes(&git)?;
        let moved = || {
            HostError::new(
                ErrorKind::Conflict,
                format!("{path} has changed since the review was read; look at it again"),
            )
        };
        let file = changes
            .files
            .iter()
            .find(|f| f.path == path)
            .ok_or_else(moved)?;
        let hunk = match hunk {
            None => None,
            Some(wanted) => Some(
                file.hunks
                    .get(wanted.index)
                    .filter(|h| h.old_start == wanted.old_start && h.new_start == wanted.new_start)
                    .ok_or_else(moved)?,
            ),
        };
        Ok(repo.revert(&git, file, hunk)?)
    }

    /// A commit message for what the task changed, written by the small model (else the main
    /// one) from the task's title and its diff.
    pub async fn draft_commit_message(&self, task: TaskId) -> Result<String, HostError> {
        let review = self.task_changes(task)?;
        let title = self.task(task)?.title;
        if review.changes.files.is_empty() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!("task {} has changed nothing to commit", task.0),
            ));
        }
        let mut patch = review.changes.patch.clone();
        if patch.len() > COMMIT_PROMPT_DIFF_CHARS {
            let mut end = COMMIT_PROMPT_DIFF_CHARS;
            while !patch.is_char_boundary(end) {
                end -= 1;
            }
            patch.truncate(end);
            patch.push_str("\n[… the rest of the diff is left out]\n");
        }
        let files: Vec<String> = review
            .changes
            .files
            .iter()
            .map(|f| {
                format!(
                    "{} (+{} −{})",
                    f.path,
                    f.added.unwrap_or(0),
                    f.removed.unwrap_or(0)
                )
            })
            .collect();
        let prompt = format!(
            "{COMMIT_PROMPT}\n\nThe task: {title}\nFiles: {}\n\n{patch}",
            files.join(", ")
        );
        let model = self
            .model_for(codewright_llm::ModelRole::Small)?
            .map(|(model, _)| model);
        let never = tokio_util::sync::CancellationToken::new();
        let answer = self
            .chat(model.as_deref(), None, &prompt, &never, &mut |_| {})
            .await
            .map_err(|unanswered| unanswered.error)?;
        let message = commit_message_of(&answer.message.text());
        match message.is_empty() {
            true => Err(HostError::new(
                ErrorKind::Provider,
                "the model wrote no commit message; write one",
            )),
            false => Ok(message),
        }
    }

    /// Asks the agent to bring the base into its branch and resolve the conflicts that keep its
    /// branch from merging (a message in the task, which runs in its worktree).
    pub async fn resolve_conflicts(&self, task: TaskId) -> Result<crate::Sent, HostError> {
        let (_, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        let files = repo.conflicts(&git)?;
        if files.is_empty() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!(
                    "the branch {} merges into {} without a conflict now",
                    tree.branch, tree.base
                ),
            ));
        }
        let message = format!(
            "Your branch {branch} conflicts with {base} in: {files}. Bring {base} into your branch with `git merge {base}`, resolve each conflict so that both sides' changes still do what they were for, run the tests, and commit the merge.",
            branch = tree.branch,
            base = tree.base,
            files = files.join(", ")
        );
        self.send(
            task,
            Some(Message::user(message)),
            crate::RunOptions::default(),
        )
        .await
    }

    /// Sends the user's comments on the task's change to the agent, as one message.
    pub async fn send_review(
        &self,
        task: TaskId,
        comments: &[ReviewComment],
    ) -> Result<crate::Sent, HostError> {
        if comments.iter().all(|c| c.comment.trim().is_empty()) {
            return Err(HostError::new(
                ErrorKind::BadInput,
                "there is no comment to send; write one on the lines it is about",
            ));
        }
        let comments: Vec<ReviewComment> = comments
            .iter()
            .filter(|c| !c.comment.trim().is_empty())
            .cloned()
            .collect();
        self.send(
            task,
            Some(Message::user(review_message(&comments))),
            crate::RunOptions::default(),
        )
        .await
    }

    /// Repairs what happened to the tasks' worktrees while Codewright was not looking: a folder
    /// removed by hand is made again on the task's branch (its commits are all there; what was
    /// not committed went with the folder). Returns what it found, in words for the user.
    pub fn repair_worktrees(&self) -> Vec<String> {
        let tasks = match self.inner.store().worktree_tasks() {
            Ok(tasks) => tasks,
            Err(_) => return Vec::new(),
        };
        let mut found = Vec::new();
        for task in tasks {
            let Some(tree) = task
                .worktree
                .as_ref()
                .filter(|t| t.state == WorktreeState::Active)
            else {
                continue;
            };
            if Path::new(&tree.path).join(".git").exists() {
                continue;
            }
            let Ok(project) = self.project(task.project_id) else {
                continue;
            };
            let said = match Repo::discover(Path::new(&project.root_path))
                .and_then(|repo| repo.reattach(Path::new(&tree.path), &tree.branch))
            {
                Ok(()) => format!(
                    "Task {} (\"{}\"): its worktree folder was gone; it is made again on branch {} with every commit (what was not committed went with the folder).",
                    task.id.0, task.title, tree.branch
                ),
                Err(e) => format!(
                    "Task {} (\"{}\"): its worktree folder is gone and could not be made again: {e}",
                    task.id.0, task.title
                ),
            };
            found.push(said);
        }
        found
    }

    /// Brings back a discarded task's worktree as it was: its branch, its commits and its
    /// uncommitted files.
    pub fn restore_task(&self, task: TaskId) -> Result<Task, HostError> {
        let _held = self.hold(task, "the task is running")?;
        let (t, mut tree, repo) = self.worktree_of(task, WorktreeState::Discarded)?;
        let back = repo.restore(
            &TaskWorktree::archive_ref(task),
            &self.worktree_path(t.project_id, task),
            &tree.branch,
            &tree.base,
        )?;
        tree.path = back.path.to_string_lossy().into_owned();
        tree.branch = back.branch;
        tree.state = WorktreeState::Active;
        Ok(self.inner.store().set_task_worktree(task, Some(&tree))?)
    }
}

fn as_git(tree: &TaskWorktree) -> Worktree {
    Worktree {
        path: PathBuf::from(&tree.path),
        branch: tree.branch.clone(),
        base: tree.base.clone(),
        base_commit: tree.base_commit.clone(),
    }
}

/// A worktree whose folder was removed by hand is said so, not guessed at.
fn ensure_there(tree: &Worktree) -> Result<(), HostError> {
    if tree.path.join(".git").exists() {
        return Ok(());
    }
    Err(HostError::new(
        ErrorKind::BadPath,
        format!(
            "the task's worktree {} is gone (removed by hand?); its commits are still on branch {}",
            tree.path.display(),
            tree.branch
        ),
    ))
}

/// Where `project_root` is inside the repository at `repo_root`, `/`-separated.
fn subdir_of(project_root: &Path, repo_root: &Path) -> String {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canonical(project_root)
        .strip_prefix(canonical(repo_root))
        .map(|inside| {
            inside
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default()
}

/// Up to five names, and how many more.
fn list(names: &[String]) -> String {
    let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    match names.len() {
        n if n > 5 => format!("{shown} and {} more", n - 5),
        _ => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_becomes_a_commit_message() {
        assert_eq!(commit_message_of("```\nAdd notes\n```"), "Add notes");
        assert_eq!(commit_message_of("\"Fix add\""), "Fix add");
        assert_eq!(
            commit_message_of("Fix add\n\nIt subtracted.\n"),
            "Fix add\n\nIt subtracted."
        );
        assert_eq!(commit_message_of(&"x".repeat(100)).len(), 72);
    }

    #[test]
    fn review_comments_name_file_line_and_code() {
        let text = review_message(&[ReviewComment {
            path: "app.py".into(),
            line: 2,
            quote: "    return a - b".into(),
            comment: "This subtracts.".into(),
        }]);
        assert!(
            text.contains("1. app.py:2\n   >     return a - b\n   This subtracts.\n"),
            "{text}"
        );
    }

    #[test]
    fn branch_names_come_from_the_title() {
        assert_eq!(
            branch_name("Fix the add() bug!", TaskId(3)),
            "codewright/fix-the-add-bug"
        );
        assert_eq!(branch_name("修复 bug", TaskId(4)), "codewright/bug");
        assert_eq!(branch_name("修复", TaskId(5)), "codewright/task-5");
        assert!(branch_name(&"long words ".repeat(20), TaskId(6)).len() <= 52);
    }
}
