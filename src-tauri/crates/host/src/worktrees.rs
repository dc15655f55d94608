//! Tasks in git worktrees of their own: made with the task, on a new branch from the base the
//! user picks, in the data folder's `worktrees/<project>/<task>`; the task's whole change read for
//! review; committed, merged into its base, discarded (its work kept under
//! `refs/codewright/archive/<task>`) and restored. The task window, the main window and the CLI
//! all call these.
//!
//! The invariants (ARCHITECTURE.md, "Never lose work"): a worktree is only ever removed after
//! its branch and its uncommitted files are kept under the archive ref; a merge that conflicts
//! changes neither side, and one cut short is put back from its plan; a worktree Codewright did not make is never touched; and nothing here
//! runs while a run holds the task.

use crate::{Host, HostError};
use codewright_git::{
    Changes, GitError, MergeMode, MergePlan, MergeRepair, Repo, Status, Worktree,
};
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

/// The checks of a task's pull request, as GitHub's command line reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestChecks {
    pub url: String,
    pub passed: u32,
    pub failed: u32,
    /// Queued or running.
    pub pending: u32,
    /// Skipped or cancelled.
    pub skipped: u32,
    /// The checks that failed, each with where to read why.
    pub failing: Vec<FailedCheck>,
}

/// A check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedCheck {
    pub name: String,
    pub link: String,
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

/// A git operation on a task's worktree under way: a mark in the data folder's `locks/`, removed
/// when it ends (however it ends, short of the process dying). One found by the task's next
/// holder means the operation was cut short, and the lock files git left are stale
/// ([`Host::repair_worktrees`]).
struct GitOp(PathBuf);

impl GitOp {
    fn mark(home: &Path, task: TaskId) -> PathBuf {
        home.join("locks").join(format!("task-{}.git", task.0))
    }

    /// `what`: the operation, as the mark says it ([`GitOp::MAKE`] is repaired differently).
    fn start(home: &Path, task: TaskId, what: &str) -> GitOp {
        let mark = GitOp::mark(home, task);
        if let Some(folder) = mark.parent() {
            let _ = std::fs::create_dir_all(folder);
        }
        let _ = std::fs::write(&mark, what);
        GitOp(mark)
    }

    /// Making the worktree: cut short, its checkout may be half written.
    const MAKE: &'static str = "make";
    /// Merging into the base, followed on the next line by the merge's plan: cut short, the
    /// base's checkout may be half written.
    const MERGE: &'static str = "merge";
}

impl Drop for GitOp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What repairing a merge cut short did, in words for the user.
fn merge_repaired(name: &str, plan: &MergePlan, repaired: Result<MergeRepair, GitError>) -> String {
    let base = &plan.base;
    let folder = plan
        .checkout
        .as_ref()
        .map(|c| format!(" and {}", c.display()))
        .unwrap_or_default();
    match repaired {
        Ok(MergeRepair::Made) => {
            format!("{name}: merging into {base} was cut short at its very end; it is made.")
        }
        Ok(MergeRepair::Undone { kept }) if kept.is_empty() => format!(
            "{name}: merging into {base} was cut short; {base}{folder} are as they were before it. Merge again when you are ready."
        ),
        Ok(MergeRepair::Undone { kept }) => format!(
            "{name}: merging into {base} was cut short; {base} is as it was before it, and these files changed since were left as they are: {}.",
            list(&kept)
        ),
        Ok(MergeRepair::Moved) => format!(
            "{name}: merging into {base} was cut short, and {base} (or the folder it was checked out in) has moved on since; nothing was changed."
        ),
        Err(e) => format!(
            "{name}: merging into {base} was cut short and could not be put back: {e}. Look at {base}{folder} with `git status`."
        ),
    }
}

/// A pull request as it is offered before it is opened: drafted from the task and its change.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestDraft {
    pub title: String,
    pub body: String,
    /// Where it would go: the branch, and the base it asks to merge into.
    pub branch: String,
    pub base: String,
}

/// What GitHub's command line needs to open a pull request, and what to do when it is missing.
fn gh_missing(branch: &str, why: &str) -> HostError {
    HostError::new(
        ErrorKind::Git,
        format!("{why}; or push the branch yourself (`git push -u origin {branch}`) and open the pull request on the site"),
    )
}

/// Runs GitHub's command line `gh` in `dir`; its output, or why it could not run.
fn gh(dir: &Path, args: &[&str]) -> Result<std::process::Output, std::io::Error> {
    std::process::Command::new("gh")
        .args(args)
        .current_dir(dir)
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
}

/// `codewright/<the title's words>`: lowercase letters, digits and dashes, at most 40.
fn branch_name(title: &str) -> String {
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
        true => "codewright/task".to_string(),
        false => format!("codewright/{slug}"),
    }
}

impl Host {
    /// Where a new worktree of a project is made: named after its branch, and when it was made
    /// (a folder is never used twice, whatever happened to the one before).
    fn worktree_path(&self, project: ProjectId, branch: &str) -> PathBuf {
        let name = branch
            .strip_prefix("codewright/")
            .unwrap_or(branch)
            .replace('/', "-");
        let made = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        self.inner
            .home
            .join("worktrees")
            .join(project.0.to_string())
            .join(format!("{name}-{made}"))
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
        let set_up = self.project_settings(project)?.worktree_set_up;
        let title = match (title, first) {
            (Some(title), _) => title.to_string(),
            (None, Some(first)) => Task::title_from(&first.text()),
            (None, None) => String::new(),
        };
        let branch = branch_name(&title);
        let planned = repo.plan_worktree(&self.worktree_path(project, &branch), &branch, base)?;
        let worktree = TaskWorktree {
            path: planned.path.to_string_lossy().into_owned(),
            subdir: subdir_of(&project_root, repo.root()),
            branch: planned.branch.clone(),
            base: planned.base.clone(),
            base_commit: planned.base_commit.clone(),
            state: WorktreeState::Active,
            pull_request: None,
            set_up: Some(set_up.trim().to_string()).filter(|c| !c.is_empty()),
        };
        // Recorded with the task before it is made: a crash while it is made is repaired from
        // the record at the next start (`repair_worktrees`), and no task ever works in the
        // project's folder instead.
        let task = self
            .inner
            .store()
            .add_task_in_worktree(project, &title, first, &worktree)?;
        // Held while it is made: a repair elsewhere leaves it alone (one that came first, in the
        // moment before, has made it already).
        let _held = self.inner.agent.hold(task.id).ok();
        let _op = GitOp::start(&self.inner.home, task.id, GitOp::MAKE);
        if let Err(e) = repo.make_worktree(&planned) {
            if planned.path.join(".git").exists()
                && repo.has_ref(&format!("refs/heads/{}", planned.branch))?
            {
                return Ok(task);
            }
            // The request is the user's to keep: the error goes back with it.
            let _ = self.inner.store().remove_task(task.id);
            return Err(e.into());
        }
        Ok(task)
    }

    /// The task's worktree and its repository; an error that says so when the task works in
    /// the project's folder, or when its worktree was discarded (`want` the state needed).
    pub(crate) fn worktree_of(
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
            return Err(match tree.state {
                WorktreeState::Discarded => discarded(task),
                WorktreeState::Active => HostError::new(
                    ErrorKind::BadInput,
                    format!("task {}'s worktree is there; nothing to restore", task.0),
                ),
            });
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
        let (status, changes) = repo.review(&git)?;
        Ok(TaskChanges {
            status,
            changes,
            worktree: tree,
        })
    }

    /// Commits everything not committed in the task's worktree, on its branch — or, for a task
    /// working in the project folder, the files it changed there and nothing else, on the
    /// folder's current branch; `message` (`None`: the task's title).
    pub fn commit_task(&self, task: TaskId, message: Option<&str>) -> Result<Committed, HostError> {
        let _held = self.hold(task, "the task is running; commit once it stops")?;
        if self.task(task)?.worktree.is_none() {
            return self.commit_folder_task(task, message);
        }
        let (t, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        ensure_there(&as_git(&tree))?;
        let message = message.map(str::to_string).unwrap_or(t.title);
        let _op = GitOp::start(&self.inner.home, task, "commit");
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
        let plan = repo.plan_merge(&git, mode)?;
        // The plan is kept in the mark until the merge ends: one cut short is put back from it.
        let plan_text = serde_json::to_string(&plan).unwrap_or_default();
        let _op = GitOp::start(
            &self.inner.home,
            task,
            &format!("{}\n{plan_text}", GitOp::MERGE),
        );
        Ok(repo.merge(&plan)?)
    }

    /// Removes the task's worktree and branch after keeping all of its work — commits and
    /// uncommitted files — under `refs/codewright/archive/<task>`; [`Host::restore_task`]
    /// brings it back.
    pub fn discard_task(&self, task: TaskId) -> Result<Discarded, HostError> {
        let _held = self.hold(
            task,
            "the task is running; stop it before discarding its work",
        )?;
        let (t, mut tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        let uncommitted = repo.uncommitted(&git.path)?;
        let archive_ref = TaskWorktree::archive_ref(task);
        // Kept first, then the task says discarded, then the folder goes: a crash at any point
        // leaves the work whole in the folder or in the ref, and the record says which
        // (`repair_worktrees` finishes what was cut short).
        let _op = GitOp::start(&self.inner.home, task, "discard");
        let commit = repo.keep(&git, &archive_ref)?;
        tree.state = WorktreeState::Discarded;
        self.inner.store().set_task_worktree(task, Some(&tree))?;
        // Its MCP servers work there: they end before it goes.
        self.close_servers_in(t.project_id, &tree.root());
        repo.remove_worktree(&git.path, &git.branch, &commit)?;
        Ok(Discarded {
            archive_ref,
            commit,
            uncommitted,
        })
    }

    /// Puts a file of the task's change back as it was at its base, or one hunk of it (`hunk`,
    /// as the review showed it: refused when the change has moved since, so what is reverted is
    /// what the user saw), as a restore that can be undone. For a task in the project folder: as
    /// it was before the task.
    pub fn revert_change(
        &self,
        task: TaskId,
        path: &str,
        hunk: Option<HunkRef>,
    ) -> Result<(), HostError> {
        let _held = self.hold(task, "the task is running; revert once it stops")?;
        if self.task(task)?.worktree.is_none() {
            return self.revert_folder_change(task, path, hunk);
        }
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
        // Either way what is there now is recorded first, as a restore of the task's: the
        // revert, like one in the project folder, can be undone (/undo, or its row among the
        // checkpoints) — the worktree's change may be committed nowhere yet, and this would be
        // its only copy.
        let root = git.path.canonicalize().unwrap_or_else(|_| git.path.clone());
        let checkpoints =
            codewright_tools::Checkpoints::new(&self.inner.home, self.inner.store.clone());
        // One hunk: the file less that hunk, read and written in its place without following a
        // link on the way (a task's process may have swapped a folder for one). (A file the task
        // removed is its one hunk: put back whole, below.)
        if let Some(hunk) = hunk.filter(|_| !file.deleted) {
            let at = root.join(&file.path);
            let refused = |why: String| {
                HostError::new(
                    ErrorKind::Conflict,
                    format!("{path} is not reverted: {why}"),
                )
            };
            let text = checkpoints
                .read(&root, &at)
                .map_err(|e| refused(e.to_string()))?
                .ok_or_else(moved)?;
            let text = String::from_utf8(text).map_err(|_| {
                refused("it is not UTF-8 text, so a hunk of it cannot be; revert it whole".into())
            })?;
            let kept = codewright_git::unapplied(&text, hunk)
                .map_err(|why| HostError::new(ErrorKind::Conflict, format!("{path} {why}")))?;
            // (A new file whose only hunk goes is gone again.)
            let gone = kept.is_empty() && file.created && file.old_path.is_none();
            checkpoints
                .put_back(task, &root, &at, (!gone).then_some(kept.as_bytes()), None)
                .map_err(|e| refused(e.to_string()))?;
            return Ok(());
        }
        // A file the task made: removed the same way (a link it made is refused below).
        let made = root.join(&file.path);
        let link = made
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if file.created && file.old_path.is_none() && !link {
            checkpoints
                .put_back(task, &root, &made, None, None)
                .map_err(|e| {
                    HostError::new(ErrorKind::Conflict, format!("{path} is not reverted: {e}"))
                })?;
            return Ok(());
        }
        // (A symbolic link is not copied — a checkpoint keeps regular files only — and its
        // revert is refused below, in words.)
        let paths: Vec<PathBuf> = std::iter::once(&file.path)
            .chain(file.old_path.as_ref())
            .map(|p| root.join(p))
            .filter(|p| {
                !p.symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
            })
            .collect();
        let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let copies = checkpoints.copies(&root, &paths).map_err(|e| {
            HostError::new(
                ErrorKind::Conflict,
                format!("{path} is not reverted: a copy to undo it from cannot be made ({e}); change it in the worktree by hand"),
            )
        })?;
        let undo = checkpoints
            .record_undo(task, &copies, &file.path)
            .map_err(HostError::from)?;
        let _op = GitOp::start(&self.inner.home, task, "revert");
        // A renamed file's new name is removed along its path without following a link (git
        // would follow one swapped in for a folder since it was checked).
        let mut removed = false;
        let reverted = repo.revert(&git, file, |new| {
            removed = checkpoints
                .remove(&root, &root.join(new))
                .map_err(|e| e.to_string())?;
            Ok(())
        });
        // A revert refused changed nothing, and leaves nothing to undo (it would be /undo's
        // newest); one cut short part way (a renamed file's new path gone, git then failing)
        // keeps its undo.
        if reverted.is_err() && (!removed || checkpoints.unchanged(&copies).unwrap_or(false)) {
            checkpoints
                .forget_undo(task, undo)
                .map_err(HostError::from)?;
        }
        Ok(reverted?)
    }

    /// Runs `job` on a thread of the blocking pool, off the async runtime's few threads (two on
    /// a two-core machine) and off a window's: git on a large repository — a worktree made, a
    /// review read, a merge — takes seconds, and every run's streaming shares those threads.
    pub async fn off_runtime<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Host) -> Result<T, HostError> + Send + 'static,
    ) -> Result<T, HostError> {
        let host = self.clone();
        tokio::task::spawn_blocking(move || job(&host))
            .await
            .map_err(|e| {
                HostError::new(
                    ErrorKind::Setup,
                    format!("the work stopped before it ended: {e}; look at the task again"),
                )
            })?
    }

    /// A commit message for what the task changed, written by the small model (else the main
    /// one) from the task's title and its diff.
    pub async fn draft_commit_message(&self, task: TaskId) -> Result<String, HostError> {
        let t = self.task(task)?;
        let worktree = t.worktree.is_some();
        let (files, mut patch) = self
            .off_runtime(move |host| match worktree {
                true => {
                    let review = host.task_changes(task)?;
                    Ok((review.changes.files, review.changes.patch))
                }
                false => host.folder_change_and_patch(task),
            })
            .await?;
        let title = t.title;
        if files.is_empty() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!("task {} has nothing left to commit", task.0),
            ));
        }
        if patch.len() > COMMIT_PROMPT_DIFF_CHARS {
            let mut end = COMMIT_PROMPT_DIFF_CHARS;
            while !patch.is_char_boundary(end) {
                end -= 1;
            }
            patch.truncate(end);
            patch.push_str("\n[… the rest of the diff is left out]\n");
        }
        let files: Vec<String> = files
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

    /// A pull request's title and body, drafted by the small model from the change (the first
    /// line of its commit message, and the rest), else the task's title.
    pub async fn draft_pull_request(&self, task: TaskId) -> Result<PullRequestDraft, HostError> {
        let t = self.task(task)?;
        let (_, tree, _) = self
            .off_runtime(move |host| host.worktree_of(task, WorktreeState::Active))
            .await?;
        let drafted = self.draft_commit_message(task).await.unwrap_or_default();
        let (title, body) = match drafted.split_once('\n') {
            Some((title, body)) => (title.trim().to_string(), body.trim().to_string()),
            None if !drafted.trim().is_empty() => (drafted.trim().to_string(), String::new()),
            None => (t.title.clone(), String::new()),
        };
        Ok(PullRequestDraft {
            title,
            body,
            branch: tree.branch,
            base: tree.base,
        })
    }

    /// Pushes the task's branch and opens a pull request into its base with GitHub's command
    /// line (`gh`, installed and signed in); its address, kept on the task. When `gh` is missing
    /// or signed out, or the branch has changes not committed, the error says what to do — and
    /// nothing is pushed.
    pub fn open_pull_request(
        &self,
        task: TaskId,
        title: &str,
        body: &str,
    ) -> Result<String, HostError> {
        let _held = self.hold(
            task,
            "the task is running; open the pull request once it stops",
        )?;
        let (_, mut tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        if title.trim().is_empty() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                "a pull request needs a title: write one",
            ));
        }
        let uncommitted = repo.uncommitted(&git.path)?;
        if !uncommitted.is_empty() {
            return Err(HostError::new(
                ErrorKind::Conflict,
                format!("task {} has changes that are not committed ({}): commit them first, so the pull request has them", task.0, list(&uncommitted)),
            ));
        }
        match gh(&git.path, &["--version"]) {
            Err(_) => return Err(gh_missing(&git.branch, "GitHub's command line `gh` is not installed: install it (cli.github.com) and sign in with `gh auth login`")),
            Ok(out) if !out.status.success() => return Err(gh_missing(&git.branch, "GitHub's command line `gh` does not run")),
            Ok(_) => {}
        }
        match gh(&git.path, &["auth", "status"]) {
            Ok(out) if out.status.success() => {}
            _ => {
                return Err(gh_missing(
                    &git.branch,
                    "`gh` is not signed in: run `gh auth login`",
                ))
            }
        }
        let remote = repo.push_remote()?;
        repo.push(&git, &remote)?;
        let opened = gh(
            &git.path,
            &[
                "pr",
                "create",
                "--title",
                title,
                "--body",
                body,
                "--base",
                &tree.base,
                "--head",
                &git.branch,
            ],
        )
        .map_err(|e| gh_missing(&git.branch, &format!("`gh` could not be run: {e}")))?;
        if !opened.status.success() {
            let said = String::from_utf8_lossy(&opened.stderr);
            return Err(HostError::new(
                ErrorKind::Git,
                format!(
                    "the branch {} is pushed, but `gh pr create` failed: {}",
                    git.branch,
                    said.trim()
                ),
            ));
        }
        let url = String::from_utf8_lossy(&opened.stdout)
            .lines()
            .rev()
            .find(|l| {
                l.trim_start().starts_with("https://") || l.trim_start().starts_with("http://")
            })
            .unwrap_or_default()
            .trim()
            .to_string();
        tree.pull_request = Some(url.clone());
        self.inner.store().set_task_worktree(task, Some(&tree))?;
        Ok(url)
    }

    /// The checks of the task's pull request now (`gh pr checks`). An error that says what to
    /// do when the task has no pull request, or `gh` is missing or cannot say.
    pub fn pull_request_checks(&self, task: TaskId) -> Result<PullRequestChecks, HostError> {
        let t = self.task(task)?;
        let Some(url) = t.worktree.as_ref().and_then(|w| w.pull_request.clone()) else {
            return Err(HostError::new(
                ErrorKind::BadInput,
                format!("task {} has no pull request; open one first (Pull request… in its Changes view, or `tasks pr`)", task.0),
            ));
        };
        let dir = PathBuf::from(self.project(t.project_id)?.root_path);
        let out = gh(&dir, &["pr", "checks", &url, "--json", "name,bucket,link"]).map_err(|_| {
            HostError::new(
                ErrorKind::Setup,
                "GitHub's command line `gh` is not installed: install it (cli.github.com) and sign in with `gh auth login` to see the pull request's checks",
            )
        })?;
        let said = String::from_utf8_lossy(&out.stderr);
        let mut checks = PullRequestChecks {
            url,
            ..PullRequestChecks::default()
        };
        // (`gh` exits with 8 while checks are pending and 1 when one failed, and says so.)
        let Ok(list) = serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout) else {
            if said.contains("no checks reported") {
                return Ok(checks);
            }
            return Err(HostError::new(
                ErrorKind::Git,
                format!(
                    "`gh pr checks` did not say what the checks are: {}",
                    Some(said.trim())
                        .filter(|s| !s.is_empty())
                        .unwrap_or("no answer")
                ),
            ));
        };
        for check in &list {
            let text = |key: &str| check[key].as_str().unwrap_or_default().to_string();
            match check["bucket"].as_str().unwrap_or_default() {
                "pass" => checks.passed += 1,
                "fail" => {
                    checks.failed += 1;
                    checks.failing.push(FailedCheck {
                        name: text("name"),
                        link: text("link"),
                    });
                }
                "pending" => checks.pending += 1,
                _ => checks.skipped += 1,
            }
        }
        Ok(checks)
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

    /// Makes the tasks' worktrees on disk what their records say, after a crash or a hand that
    /// removed a folder: an active task's folder that is gone is made again on its branch (its
    /// commits are all there; what was not committed went with a folder removed by hand); a
    /// discard or a restore cut short is finished as the record says (the work is whole in the
    /// archive ref until the record says restored). Held tasks are left alone. Returns what it
    /// found, in words for the user.
    pub fn repair_worktrees(&self) -> Vec<String> {
        let tasks = match self.inner.store().worktree_tasks() {
            Ok(tasks) => tasks,
            Err(_) => return Vec::new(),
        };
        let mut found = Vec::new();
        for task in tasks {
            let Some(tree) = task.worktree.clone() else {
                continue;
            };
            let path = PathBuf::from(&tree.path);
            let cut_short = GitOp::mark(&self.inner.home, task.id);
            if tree.state == WorktreeState::Active
                && path.join(".git").exists()
                && !cut_short.exists()
            {
                continue;
            }
            // Not while a run or an operation holds the task: it is working on it now.
            let Ok(_held) = self.inner.agent.hold(task.id) else {
                continue;
            };
            let Ok(project) = self.project(task.project_id) else {
                continue;
            };
            let Ok(repo) = Repo::discover(Path::new(&project.root_path)) else {
                continue;
            };
            let archive_ref = TaskWorktree::archive_ref(task.id);
            let name = format!("Task {} (\"{}\")", task.id.0, task.title);
            if let Ok(what) = std::fs::read_to_string(&cut_short) {
                // Its operation died holding git's locks; nothing else of ours works on it now.
                let refs = [format!("refs/heads/{}", tree.branch), archive_ref.clone()];
                let _ = repo.clear_stale_locks(&path, &refs);
                if what == GitOp::MAKE && tree.state == WorktreeState::Active {
                    // Its checkout may be half written; nothing of the task's is there yet.
                    found.push(match repo.remake(&path, &tree.branch, &tree.base_commit) {
                        Ok(()) => format!("{name}: making its worktree was cut short; it is made again."),
                        Err(e) => format!("{name}: making its worktree was cut short and it could not be made again: {e}"),
                    });
                    let _ = std::fs::remove_file(&cut_short);
                    continue;
                }
                if let Some(plan) = what
                    .strip_prefix(GitOp::MERGE)
                    .and_then(|plan| serde_json::from_str::<MergePlan>(plan.trim()).ok())
                {
                    // The mark was written just before the merge began (a time unknown clears
                    // no lock: none is known to be the merge's).
                    let began = std::fs::metadata(&cut_short)
                        .and_then(|m| m.modified())
                        .unwrap_or_else(|_| {
                            std::time::SystemTime::now() + std::time::Duration::from_secs(3600)
                        });
                    found.push(merge_repaired(
                        &name,
                        &plan,
                        repo.repair_merge(&plan, began),
                    ));
                }
                let _ = std::fs::remove_file(&cut_short);
            }
            let there = path.join(".git").exists();
            if tree.state == WorktreeState::Active && there {
                continue;
            }
            let said = match (tree.state, there) {
                (WorktreeState::Active, _) => match repo.reattach(&path, &tree.branch, &tree.base_commit) {
                    Ok(()) => format!("{name}: its worktree folder was gone; it is made again on branch {} with every commit (what was not committed went with the folder).", tree.branch),
                    Err(e) => format!("{name}: its worktree folder is gone and could not be made again: {e}"),
                },
                (WorktreeState::Discarded, false) if !path.exists() => continue,
                (WorktreeState::Discarded, _) => {
                    let finished = match repo.commit_of(&archive_ref) {
                        // Discarded, with the work kept: what is left of the folder goes.
                        Ok(kept) => repo.remove_worktree(&path, &tree.branch, &kept),
                        // A restore got as far as removing the ref: the worktree is back.
                        Err(_) if there => {
                            let mut back = tree.clone();
                            back.state = WorktreeState::Active;
                            match self.inner.store().set_task_worktree(task.id, Some(&back)) {
                                Ok(_) => continue,
                                Err(e) => Err(codewright_git::GitError::Refused(e.to_string())),
                            }
                        }
                        Err(e) => Err(e),
                    };
                    match finished {
                        Ok(()) => format!("{name}: discarding its worktree was cut short; it is finished, and the work is kept under {archive_ref} (Restore brings it back)."),
                        Err(e) => format!("{name}: discarding its worktree was cut short and could not be finished: {e}. The work is kept under {archive_ref}."),
                    }
                }
            };
            found.push(said);
        }
        found
    }

    /// Brings back a discarded task's worktree as it was: its branch, its commits and its
    /// uncommitted files.
    pub fn restore_task(&self, task: TaskId) -> Result<Task, HostError> {
        let _held = self.hold(task, "the task is running")?;
        let (_, mut tree, repo) = self.worktree_of(task, WorktreeState::Discarded)?;
        let archive_ref = TaskWorktree::archive_ref(task);
        // Brought back, then the task says so, then the ref goes: a crash before the record
        // leaves the ref whole (and the next start clears the half-made folder).
        let _op = GitOp::start(&self.inner.home, task, "restore");
        let back = repo.bring_back(
            &archive_ref,
            Path::new(&tree.path),
            &tree.branch,
            &tree.base,
        )?;
        tree.branch = back.branch;
        tree.state = WorktreeState::Active;
        let restored = self.inner.store().set_task_worktree(task, Some(&tree))?;
        repo.forget(&archive_ref)?;
        Ok(restored)
    }
}

pub(crate) fn as_git(tree: &TaskWorktree) -> Worktree {
    Worktree {
        path: PathBuf::from(&tree.path),
        branch: tree.branch.clone(),
        base: tree.base.clone(),
        base_commit: tree.base_commit.clone(),
    }
}

/// A worktree whose folder was removed by hand is said so, not guessed at.
pub(crate) fn ensure_there(tree: &Worktree) -> Result<(), HostError> {
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

/// What a task whose worktree was discarded answers what needs its folder (a message, a tool
/// run by hand, a restore of its files): it has none until the task is restored — never the
/// project's folder in its place.
pub(crate) fn discarded(task: TaskId) -> HostError {
    HostError::new(
        ErrorKind::BadInput,
        format!(
            "task {}'s worktree was discarded; restore it first (its work is kept under {})",
            task.0,
            TaskWorktree::archive_ref(task)
        ),
    )
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
            branch_name("Fix the add() bug!"),
            "codewright/fix-the-add-bug"
        );
        assert_eq!(branch_name("修复 bug"), "codewright/bug");
        assert_eq!(branch_name("修复"), "codewright/task");
        assert!(branch_name(&"long words ".repeat(20)).len() <= 52);
    }
}
