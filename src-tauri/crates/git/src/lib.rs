//! Git for tasks, through the `git` program: a task's own worktree on its own branch, the whole
//! change it made against its base (committed or not, new files included), a commit of it, a
//! merge into the base, and work that is discarded kept under an archive ref, from which it is
//! restored as it was.
//!
//! **Nothing a repository chose runs.** A repository is code as much as data: every git command
//! here is a [`safe::Repository::command`] — no hook, no fsmonitor, no filter, diff driver or
//! text conversion the repository configured, no pager, no prompt. A hostile clone's hooks and
//! filters do not run when a task's worktree is made, read, committed or merged.
//!
//! **No work is lost.** Nothing here deletes a change that is not kept elsewhere first: a
//! worktree is removed only by [`Repo::remove_worktree`], after its branch and its uncommitted files are
//! kept as one commit under `refs/codewright/archive/…`; a merge is worked out in the object
//! store before anything moves (a conflict changes nothing) and one cut short is put back from
//! its plan; reading a task's change never touches the index (it is
//! built in a temporary one).

use serde::Serialize;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod changes;
mod include;
mod merge;
pub mod safe;
pub use changes::{unapplied, Changes, FileChange};
pub use merge::{MergeMode, MergePlan, MergeRepair, Merged};

/// What went wrong, in words for the screen it appears on.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git is not installed (or not on PATH); install it to give tasks their own worktrees")]
    NotInstalled,
    #[error("{} is not in a git repository: a task there works in the folder itself", .0.display())]
    NotARepository(PathBuf),
    #[error("the repository has no commit yet: commit once, then start the task again")]
    NoCommit,
    #[error("there is no branch or commit {0} in the repository")]
    UnknownRef(String),
    #[error("merging {branch} into {base} conflicts in {}; nothing was changed", .files.join(", "))]
    Conflict {
        branch: String,
        base: String,
        files: Vec<String>,
    },
    /// The operation would overwrite or lose something; `0` says what and what to do.
    #[error("{0}")]
    Refused(String),
    #[error("git {command} failed: {stderr}")]
    Failed { command: String, stderr: String },
}

impl GitError {
    /// The kind a front end tells its user by.
    pub fn kind(&self) -> codewright_protocol::ErrorKind {
        use codewright_protocol::ErrorKind;
        match self {
            GitError::NotInstalled | GitError::Failed { .. } => ErrorKind::Git,
            GitError::NotARepository(_) | GitError::NoCommit => ErrorKind::BadInput,
            GitError::UnknownRef(_) => ErrorKind::NotFound,
            GitError::Conflict { .. } | GitError::Refused(_) => ErrorKind::Conflict,
        }
    }
}

pub type Result<T> = std::result::Result<T, GitError>;

/// A task's worktree: where it is, its branch, and what it was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// The worktree's top folder.
    pub path: PathBuf,
    pub branch: String,
    /// What it was made from, as the user named it (a branch, usually).
    pub base: String,
    /// The commit `base` was then.
    pub base_commit: String,
}

/// Where a worktree's branch stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Commits on the branch that its base does not have.
    pub ahead: u64,
    /// Commits on the base since the branch left it.
    pub behind: u64,
    /// Files changed and not committed (new ones included).
    pub uncommitted: Vec<String>,
}

/// Where a worktree's branch stands, in numbers: what a task's row shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Standing {
    /// Files changed against the fork point, committed or not.
    pub files: u64,
    pub added: u64,
    pub removed: u64,
    /// Commits on the branch that its base does not have.
    pub ahead: u64,
    /// Commits on the base since the branch left it.
    pub behind: u64,
    /// Files changed and not committed (new ones included).
    pub uncommitted: u64,
    /// The files that would conflict if the branch's commits were merged into the base now.
    pub conflicts: Vec<String>,
}

/// Where files of a checkout stand against its branch's last commit ([`Repo::not_committed`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotCommitted {
    /// Changed, staged, new or gone: what a commit of them would take.
    pub open: Vec<String>,
    /// Ignored by git: no commit takes them.
    pub ignored: Vec<String>,
    /// As the last commit has them.
    pub committed: Vec<String>,
}

/// A git repository, by the top folder of its main checkout.
#[derive(Debug, Clone)]
pub struct Repo {
    root: PathBuf,
}

impl Repo {
    /// The repository `dir` is in (`dir` itself or a folder inside it).
    pub fn discover(dir: &Path) -> Result<Repo> {
        let out = git_output(
            dir,
            ["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        if !out.status.success() {
            return Err(GitError::NotARepository(dir.to_path_buf()));
        }
        // The main checkout is the folder of the common git dir (`…/.git`), for a linked
        // worktree as for the main one.
        let common = PathBuf::from(stdout_line(&out));
        let root = match common.file_name() {
            Some(name) if name == ".git" => common.parent().map(Path::to_path_buf),
            _ => None,
        }
        .ok_or_else(|| {
            GitError::Refused(format!(
                "{} is a bare repository: a task needs a checkout to work in",
                common.display()
            ))
        })?;
        Ok(Repo { root })
    }

    /// The main checkout's top folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The branch checked out in the main checkout; `None` when its HEAD is detached.
    pub fn current_branch(&self) -> Result<Option<String>> {
        self.branch_in(&self.root)
    }

    /// The branch checked out in `checkout` (this repository's main checkout, a worktree of it
    /// or a folder inside one); `None` when its HEAD is detached.
    pub fn branch_in(&self, checkout: &Path) -> Result<Option<String>> {
        let out = git_output(checkout, ["symbolic-ref", "--short", "-q", "HEAD"])?;
        Ok(out.status.success().then(|| stdout_line(&out)))
    }

    /// The commit `rev` names.
    pub fn commit_of(&self, rev: &str) -> Result<String> {
        if rev.starts_with('-') {
            return Err(GitError::UnknownRef(rev.into()));
        }
        let out = git_output(
            &self.root,
            ["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")],
        )?;
        if out.status.success() {
            return Ok(stdout_line(&out));
        }
        let head = git_output(&self.root, ["rev-parse", "--verify", "-q", "HEAD"])?;
        if !head.status.success() {
            return Err(GitError::NoCommit);
        }
        Err(GitError::UnknownRef(rev.into()))
    }

    /// Makes a worktree at `path` on a new branch named after `branch` (a number is added when
    /// the name is taken) from `base` (a branch or commit; `None`: the current branch, else HEAD).
    pub fn add_worktree(&self, path: &Path, branch: &str, base: Option<&str>) -> Result<Worktree> {
        let planned = self.plan_worktree(path, branch, base)?;
        self.make_worktree(&planned)?;
        Ok(planned)
    }

    /// What [`Repo::add_worktree`] would make, checked, and nothing made yet: the base resolved,
    /// a free branch name, a path that does not exist. (A caller records it first, so a crash
    /// while it is made is repaired from the record, [`Repo::reattach`].)
    pub fn plan_worktree(&self, path: &Path, branch: &str, base: Option<&str>) -> Result<Worktree> {
        let base = match base {
            Some(base) => base.to_string(),
            None => self.current_branch()?.unwrap_or_else(|| "HEAD".into()),
        };
        let base_commit = self.commit_of(&base)?;
        let branch = self.free_branch(branch)?;
        if path.exists() {
            return Err(GitError::Refused(format!(
                "{} already exists; Codewright does not write over a folder it did not make",
                path.display()
            )));
        }
        Ok(Worktree {
            path: path.to_path_buf(),
            branch,
            base,
            base_commit,
        })
    }

    /// Makes the worktree `planned` describes, on its new branch.
    pub fn make_worktree(&self, planned: &Worktree) -> Result<()> {
        if let Some(parent) = planned.path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| GitError::Failed {
                command: "worktree add".into(),
                stderr: format!("cannot make {}: {e}", parent.display()),
            })?;
        }
        self.run([
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("-b"),
            OsStr::new(&planned.branch),
            planned.path.as_os_str(),
            OsStr::new(&planned.base_commit),
        ])?;
        // What a build needs that git does not hold (`.env`, local config), as listed.
        include::copy(&self.root, &planned.path)?;
        Ok(())
    }

    /// `wanted` if no branch has that name, else `wanted-2`, `wanted-3`, …
    fn free_branch(&self, wanted: &str) -> Result<String> {
        let out = git_output(&self.root, ["check-ref-format", "--branch", wanted])?;
        if !out.status.success() {
            return Err(GitError::Refused(format!(
                "{wanted} cannot be a branch name"
            )));
        }
        for n in 1.. {
            let name = match n {
                1 => wanted.to_string(),
                n => format!("{wanted}-{n}"),
            };
            let exists = git_output(
                &self.root,
                ["show-ref", "--verify", "-q", &format!("refs/heads/{name}")],
            )?;
            if !exists.status.success() {
                return Ok(name);
            }
        }
        unreachable!("some number is free")
    }

    /// The commit the task's change is measured from: where its branch left the base (the base
    /// may have moved on since), else the commit it was made from.
    pub fn fork_point(&self, worktree: &Worktree) -> Result<String> {
        let out = git_output(&worktree.path, ["merge-base", &worktree.base, "HEAD"])?;
        Ok(match out.status.success() {
            true => stdout_line(&out),
            false => worktree.base_commit.clone(),
        })
    }

    /// Everything the task changed in `worktree` against its fork point: committed and not,
    /// new files included (those git ignores left out). The worktree's index is not touched.
    pub fn changes(&self, worktree: &Worktree) -> Result<Changes> {
        let from = self.fork_point(worktree)?;
        changes::of(&worktree.path, &from)
    }

    /// Puts `file` (a path in the change, as [`Changes`] names it) back as it was at the fork
    /// point: changed back, brought back when deleted, a renamed file brought back under its old
    /// name — its new name (a path in the worktree) removed first by `remove_new`, once every
    /// check has passed: the caller removes it along its path without following a link that a
    /// task's process may swap in meanwhile (the host's checkpoints do: `Checkpoints::remove`).
    /// A file the change made is refused: the caller removes it. (One hunk of it:
    /// [`unapplied`].)
    pub fn revert(
        &self,
        worktree: &Worktree,
        file: &FileChange,
        remove_new: impl FnOnce(&str) -> std::result::Result<(), String>,
    ) -> Result<()> {
        let before = file.old_path.as_deref().unwrap_or(&file.path);
        inside(&worktree.path, before)?;
        if file.created {
            return Err(GitError::Refused(format!(
                "{} is new in the task's change: remove it rather than revert it",
                file.path
            )));
        }
        let from = self.fork_point(worktree)?;
        if file.old_path.is_some() {
            inside(&worktree.path, &file.path)?;
            remove_new(&file.path).map_err(GitError::Refused)?;
        }
        run_in(
            &worktree.path,
            [
                "restore",
                &format!("--source={from}"),
                "--worktree",
                "--",
                &format!(":(literal){before}"),
            ],
        )?;
        Ok(())
    }

    /// Commits everything in `worktree` that is not committed yet (new files too); `None` when
    /// there is nothing to commit. Returns the new commit.
    pub fn commit_all(&self, worktree: &Path, message: &str) -> Result<Option<String>> {
        if message.trim().is_empty() {
            return Err(GitError::Refused(
                "a commit needs a message: write one".into(),
            ));
        }
        run_in(worktree, ["add", "-A"])?;
        let staged = git_output(worktree, ["diff", "--cached", "--quiet"])?;
        if staged.status.success() {
            return Ok(None);
        }
        let out = git_output(worktree, ["commit", "-q", "--no-verify", "-m", message])?;
        if !out.status.success() {
            return Err(commit_failed("commit", &out));
        }
        Ok(Some(self.commit_in(worktree)?))
    }

    /// Commits `files` (paths inside `folder`, each as it is now there — a file gone is
    /// committed as removed) and nothing else on the branch checked out in `folder`: the commit
    /// is made from HEAD in a temporary index, so another file the user changed or staged stays
    /// as it was, staged or not; the folder's own index then takes those files as committed.
    /// `None`: they are as HEAD has them already.
    pub fn commit_files(
        &self,
        folder: &Path,
        files: &[String],
        message: &str,
    ) -> Result<Option<String>> {
        if message.trim().is_empty() {
            return Err(GitError::Refused(
                "a commit needs a message: write one".into(),
            ));
        }
        let head = git_output(folder, ["symbolic-ref", "-q", "HEAD"])?;
        if !head.status.success() {
            return Err(GitError::Refused(format!(
                "{} is not on a branch (its HEAD is detached): check a branch out, then commit",
                folder.display()
            )));
        }
        // (`None`: a branch with no commit yet; the commit is its first.)
        let before = git_output(folder, ["rev-parse", "--verify", "-q", "HEAD"])?;
        let before = before.status.success().then(|| stdout_line(&before));
        let paths: Vec<String> = files.iter().map(|f| literal_path(f)).collect();
        // A file the repository ignores is not the commit's (`git add` would refuse it).
        let ignored = ls_files(
            folder,
            &["--others", "--ignored", "--exclude-standard"],
            &paths,
        )?;
        let taken: Vec<&String> = files.iter().filter(|f| !ignored.contains(f)).collect();
        if taken.is_empty() {
            return Ok(None);
        }
        let index = TempIndex::new()?;
        let env = [("GIT_INDEX_FILE", index.path())];
        match &before {
            Some(before) => drop(run_with(folder, ["read-tree", before], &env)?),
            None => drop(run_with(folder, ["read-tree", "--empty"], &env)?),
        }
        // Each file as it is now: added, changed, or — gone — removed (one gone and never
        // committed is nothing).
        for some in taken.chunks(500) {
            let mut args = vec![
                "update-index".to_string(),
                "--add".into(),
                "--remove".into(),
                "--".into(),
            ];
            args.extend(some.iter().map(|f| f.to_string()));
            run_with(folder, args, &env)?;
        }
        let tree = stdout_line(&run_with(folder, ["write-tree"], &env)?);
        let unchanged = match &before {
            Some(before) => {
                tree == stdout_line(&run_in(
                    folder,
                    ["rev-parse", &format!("{before}^{{tree}}")],
                )?)
            }
            None => run_with(folder, ["ls-files"], &env)?.stdout.is_empty(),
        };
        if unchanged {
            return Ok(None);
        }
        let mut args = vec!["commit-tree", &tree];
        if let Some(before) = &before {
            args.extend(["-p", before]);
        }
        args.extend(["-m", message]);
        let out = git_output(folder, args)?;
        if !out.status.success() {
            return Err(commit_failed("commit-tree", &out));
        }
        let commit = stdout_line(&out);
        // What the folder's index holds of those files now, put back as it was if the commit
        // is cut short (what the user had staged of them stays staged).
        let staged = Staged::read(folder, &paths)?;
        // The folder's index takes the files as committed (else `git status` would show the
        // commit undone, staged) before the branch moves: cut short in between, the folder
        // holds the work staged, not committed — never a commit that the index would undo.
        // Another git holding the index a moment is waited for.
        let index_takes = |at: Option<&str>| -> Result<()> {
            for some in paths.chunks(500) {
                let mut args = vec!["reset".to_string(), "-q".into()];
                args.extend(at.map(str::to_string));
                args.push("--".into());
                args.extend(some.iter().cloned());
                let mut tries = 0;
                while let Err(e) = run_in(folder, &args) {
                    tries += 1;
                    if tries == 5 {
                        return Err(e);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            }
            Ok(())
        };
        let put_back = || match staged.put_back(folder, files) {
            Ok(()) => Ok(()),
            // (Conflicted entries cannot be put back: the files go back as HEAD has them.)
            Err(_) => index_takes(None),
        };
        if let Err(e) = index_takes(Some(&commit)) {
            let _ = put_back();
            return Err(GitError::Refused(format!(
                "nothing was committed: git's index of {} is in use ({e}); when no other git works there, commit again",
                folder.display()
            )));
        }
        // Only if HEAD is still where it was read (its branch moves with it; an empty old value:
        // only if the branch has no commit yet).
        let moved = run_in(
            folder,
            [
                "update-ref",
                "-m",
                "commit (Codewright)",
                "HEAD",
                &commit,
                before.as_deref().unwrap_or(""),
            ],
        );
        if let Err(e) = moved {
            let _ = put_back();
            return Err(GitError::Refused(format!(
                "nothing was committed: the branch of {} moved or is held by another git ({e}); look at `git status` there, then commit again",
                folder.display()
            )));
        }
        Ok(Some(commit))
    }

    fn commit_in(&self, worktree: &Path) -> Result<String> {
        Ok(stdout_line(&run_in(worktree, ["rev-parse", "HEAD"])?))
    }

    /// Everything the task changed, and where its branch stands (ahead, behind, what is not
    /// committed), in one pass over the folder.
    pub fn review(&self, worktree: &Worktree) -> Result<(Status, Changes)> {
        let changes = self.changes(worktree)?;
        let status = self.standing_of(worktree, changes.uncommitted.clone())?;
        Ok((status, changes))
    }

    fn standing_of(&self, worktree: &Worktree, uncommitted: Vec<String>) -> Result<Status> {
        let counts = git_output(
            &worktree.path,
            [
                "rev-list",
                "--left-right",
                "--count",
                &format!("{}...HEAD", worktree.base),
            ],
        )?;
        let text = stdout_line(&counts);
        let mut numbers = text.split_whitespace().map(|n| n.parse().unwrap_or(0));
        let (behind, ahead) = match counts.status.success() {
            true => (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0)),
            false => (0, 0),
        };
        Ok(Status {
            ahead,
            behind,
            uncommitted,
        })
    }

    /// Where the worktree's branch stands, in numbers, in one pass over the folder (and, when
    /// both the branch and its base have moved on, a merge worked out in the object store).
    pub fn standing(&self, worktree: &Worktree) -> Result<Standing> {
        let from = self.fork_point(worktree)?;
        let counts = changes::counts(&worktree.path, &from)?;
        let status = self.standing_of(worktree, Vec::new())?;
        // A git too old to work a merge out without a checkout shows none.
        let conflicts = match status.ahead > 0 && status.behind > 0 {
            true => self.conflicts(worktree).unwrap_or_default(),
            false => Vec::new(),
        };
        Ok(Standing {
            files: counts.files,
            added: counts.added,
            removed: counts.removed,
            ahead: status.ahead,
            behind: status.behind,
            uncommitted: counts.uncommitted,
            conflicts,
        })
    }

    /// Where a branch moving shows: the folder of the repository's branches (watch it whole), and
    /// its git folder, where `packed-refs` is (watch it alone).
    pub fn ref_folders(&self) -> [PathBuf; 2] {
        let git = self.root.join(".git");
        [git.join("refs").join("heads"), git]
    }

    /// The remote a branch is pushed to: `origin`, else the only one; an error that says how to
    /// add one when there is none.
    pub fn push_remote(&self) -> Result<String> {
        let out = self.run(["remote"])?;
        let remotes: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        match remotes.iter().find(|r| *r == "origin").or(remotes.first()) {
            Some(remote) => Ok(remote.clone()),
            None => Err(GitError::Refused(
                "the repository has no remote to push to: add one (`git remote add origin URL`)"
                    .into(),
            )),
        }
    }

    /// Pushes the worktree's branch to `remote`, and makes it the branch's upstream. Nothing is
    /// asked on a terminal: a remote that needs a password the user's git cannot give is an
    /// error with git's words.
    pub fn push(&self, worktree: &Worktree, remote: &str) -> Result<()> {
        run_in(
            &worktree.path,
            [
                "push",
                "--quiet",
                "--set-upstream",
                remote,
                &worktree.branch,
            ],
        )
        .map(drop)
    }

    /// Uncommitted changes in `dir` (new files included), as `git status` names them.
    pub fn uncommitted(&self, dir: &Path) -> Result<Vec<String>> {
        let out = run_in(
            dir,
            ["status", "--porcelain", "-z", "--untracked-files=all"],
        )?;
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|entry| entry.len() > 3)
            .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
            .collect())
    }

    /// Where each of `paths` (files of the checkout folder `dir`, relative to it, `/`-separated)
    /// stands against its branch's last commit: not as it has them (changed, staged, new or
    /// gone), ignored by git, or committed as they are. `since` (Unix seconds) is when the work
    /// on them began: a file gone from the folder and the index is committed when a commit made
    /// since then removed it (with `None`, or removed by none, it is not known to have been
    /// committed, and is neither).
    pub fn not_committed(
        &self,
        dir: &Path,
        paths: &[String],
        since: Option<i64>,
    ) -> Result<NotCommitted> {
        let mut found = NotCommitted::default();
        if paths.is_empty() {
            return Ok(found);
        }
        // (`status` names paths from the repository's top; the folder may be below it.)
        let prefix = prefix_in(dir)?;
        let mut open = std::collections::HashSet::new();
        let mut ignored = std::collections::HashSet::new();
        for some in paths.chunks(500) {
            let mut args: Vec<&OsStr> = [
                "--literal-pathspecs",
                "status",
                "--porcelain",
                "-z",
                "--no-renames",
                "--untracked-files=all",
                "--ignored=traditional",
                "--",
            ]
            .iter()
            .map(OsStr::new)
            .collect();
            args.extend(some.iter().map(OsStr::new));
            let out = run_in(dir, args)?;
            for entry in out.stdout.split(|b| *b == 0).filter(|e| e.len() > 3) {
                let path = String::from_utf8_lossy(&entry[3..]);
                if let Some(path) = path.strip_prefix(prefix.as_str()) {
                    match &entry[..2] {
                        b"!!" => ignored.insert(path.to_string()),
                        _ => open.insert(path.to_string()),
                    };
                }
            }
        }
        // Neither, and in the index: as the last commit has it (a file gone from both is not
        // known to have been committed, and is neither).
        let literal: Vec<String> = paths.iter().map(|p| literal_path(p)).collect();
        let tracked: std::collections::HashSet<String> = ls_files(dir, &["--cached"], &literal)?
            .into_iter()
            .collect();
        let gone: Vec<&String> = paths
            .iter()
            .filter(|p| !open.contains(*p) && !ignored.contains(*p) && !tracked.contains(*p))
            .collect();
        // (A branch with no commit yet has removed nothing.)
        let removed = match since {
            Some(since) if !gone.is_empty() => {
                removed_since(dir, &prefix, since, &gone).unwrap_or_default()
            }
            _ => Default::default(),
        };
        for path in paths {
            if open.contains(path) {
                found.open.push(path.clone());
            } else if ignored.contains(path) {
                found.ignored.push(path.clone());
            } else if tracked.contains(path) || removed.contains(path) {
                found.committed.push(path.clone());
            }
        }
        Ok(found)
    }

    /// The folder where `branch` is checked out, if any.
    fn checkout_of(&self, branch: &str) -> Result<Option<PathBuf>> {
        let out = self.run(["worktree", "list", "--porcelain", "-z"])?;
        let wanted = format!("branch refs/heads/{branch}");
        let mut path = None;
        for field in out.stdout.split(|b| *b == 0) {
            let field = String::from_utf8_lossy(field);
            if let Some(p) = field.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            } else if field == wanted {
                return Ok(path);
            }
        }
        Ok(None)
    }

    /// Keeps everything in `worktree` — its branch's commits and its uncommitted files, new ones
    /// included — as one commit under `archive_ref`, and changes nothing else. Returns the commit.
    pub fn keep(&self, worktree: &Worktree, archive_ref: &str) -> Result<String> {
        let kept = snapshot(
            &worktree.path,
            "Codewright: the task's work as it was discarded",
        )?;
        self.run(["update-ref", archive_ref, &kept])?;
        Ok(kept)
    }

    /// Whether `name` (a full ref name) exists.
    pub fn has_ref(&self, name: &str) -> Result<bool> {
        Ok(
            git_output(&self.root, ["show-ref", "--verify", "-q", name])?
                .status
                .success(),
        )
    }

    /// Removes the worktree at `path` whose work is kept in the commit `kept` ([`Repo::keep`]),
    /// and `branch` — as far as either is still there (a removal cut short is finished). The
    /// branch goes only while every commit on it is in `kept`'s history and no other worktree
    /// has it checked out: a branch of the same name made since is never touched.
    pub fn remove_worktree(&self, path: &Path, branch: &str, kept: &str) -> Result<()> {
        self.clear(path)?;
        let full = format!("refs/heads/{branch}");
        if self.has_ref(&full)?
            && git_output(&self.root, ["merge-base", "--is-ancestor", &full, kept])?
                .status
                .success()
        {
            // (git refuses a branch checked out elsewhere: then it stays.)
            let _ = git_output(&self.root, ["branch", "-D", "-q", branch])?;
        }
        Ok(())
    }

    /// Removes the lock files a git operation on the worktree at `path` left when it was killed:
    /// those in its own admin folder (its index, its HEAD; a `locked` mark still saying
    /// "initializing"), and those of `refs` (full names: its branch, its archive ref). Only for
    /// an operation known to have been cut short, while nothing else can be working on it.
    /// The repository's `packed-refs.lock` may be its too (a ref transaction takes it): it is
    /// removed when it is still there after a moment (a live git's lasts milliseconds).
    pub fn clear_stale_locks(&self, path: &Path, refs: &[String]) -> Result<Vec<PathBuf>> {
        let common = self.root.join(".git");
        let mut removed = Vec::new();
        let mut remove = |file: PathBuf| {
            if file.symlink_metadata().is_ok_and(|m| m.is_file())
                && std::fs::remove_file(&file).is_ok()
            {
                removed.push(file);
            }
        };
        let ours = path.join(".git");
        for admin in std::fs::read_dir(common.join("worktrees"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let admin = admin.path();
            let points_here = std::fs::read_to_string(admin.join("gitdir"))
                .is_ok_and(|gitdir| Path::new(gitdir.trim()) == ours);
            if !points_here {
                continue;
            }
            for entry in std::fs::read_dir(&admin).into_iter().flatten().flatten() {
                if entry.path().extension().is_some_and(|e| e == "lock") {
                    remove(entry.path());
                }
            }
            if std::fs::read_to_string(admin.join("locked"))
                .is_ok_and(|why| why.trim() == "initializing")
            {
                remove(admin.join("locked"));
            }
        }
        for name in refs {
            if name.starts_with("refs/") && !name.contains("..") {
                remove(common.join(format!("{name}.lock")));
            }
        }
        let packed = common.join("packed-refs.lock");
        if packed.exists() {
            std::thread::sleep(std::time::Duration::from_millis(500));
            remove(packed);
        }
        Ok(removed)
    }

    /// Removes what is at `path` — a worktree registered there, or what an operation cut short
    /// left — and git's record of it. Only for a path Codewright made for one task.
    fn clear(&self, path: &Path) -> Result<()> {
        if path.join(".git").exists() {
            // (Twice forced: a worktree whose making was cut short is still marked locked. One
            // whose `.git` was not fully written is refused: its folder goes below all the same.)
            let _ = git_output(
                &self.root,
                [
                    OsStr::new("worktree"),
                    OsStr::new("remove"),
                    OsStr::new("--force"),
                    OsStr::new("--force"),
                    path.as_os_str(),
                ],
            )?;
        }
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|e| GitError::Failed {
                command: "worktree remove".into(),
                stderr: format!("cannot remove {}: {e}", path.display()),
            })?;
        }
        self.prune()
    }

    /// A worktree at `path` on `branch` (a number added when the name is taken) at the branch's
    /// last commit, with the uncommitted files as they were, from `archive_ref`; the ref stays.
    /// What an earlier attempt left at `path` is removed first (the archive holds all of it).
    pub fn bring_back(
        &self,
        archive_ref: &str,
        path: &Path,
        branch: &str,
        base: &str,
    ) -> Result<Worktree> {
        let kept = self.commit_of(archive_ref)?;
        let tip = self.commit_of(&format!("{kept}^"))?;
        self.clear(path)?;
        let mut restored = self.add_worktree(path, branch, Some(&tip))?;
        run_in(
            path,
            [
                "restore",
                &format!("--source={kept}"),
                "--worktree",
                "--",
                ".",
            ],
        )?;
        restored.base = base.to_string();
        restored.base_commit = self.commit_of(base).unwrap_or(tip);
        Ok(restored)
    }

    /// Removes an archive ref once what it kept is back.
    pub fn forget(&self, archive_ref: &str) -> Result<()> {
        self.run(["update-ref", "-d", archive_ref]).map(drop)
    }

    /// Makes the worktree at `path` again from scratch after its making was cut short (its
    /// checkout may be half written): what is there goes, and it is made on `branch` again.
    pub fn remake(&self, path: &Path, branch: &str, base_commit: &str) -> Result<()> {
        self.clear(path)?;
        self.reattach(path, branch, base_commit)
    }

    /// Makes the worktree at `path` again on `branch` after its folder was removed by hand or
    /// its making was cut short: git's record is pruned, what is left at `path` (no worktree any
    /// more) removed, and the branch checked out there — made from `base_commit` if it never was.
    pub fn reattach(&self, path: &Path, branch: &str, base_commit: &str) -> Result<()> {
        self.prune()?;
        if path.exists() && !path.join(".git").exists() {
            self.clear(path)?;
        }
        let planned = Worktree {
            path: path.to_path_buf(),
            branch: branch.to_string(),
            base: base_commit.to_string(),
            base_commit: base_commit.to_string(),
        };
        if self.has_ref(&format!("refs/heads/{branch}"))? {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            self.run([
                OsStr::new("worktree"),
                OsStr::new("add"),
                path.as_os_str(),
                OsStr::new(branch),
            ])
            .map(drop)
        } else {
            self.make_worktree(&planned)
        }
    }

    /// Forgets worktrees whose folders are gone (`git worktree prune`).
    pub fn prune(&self) -> Result<()> {
        self.run(["worktree", "prune"]).map(drop)
    }

    fn run<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_in(&self.root, args)
    }
}

/// `path` (from git, `/`-separated, inside the worktree) as a file of the worktree; refused when
/// it would leave it, or is reached through a link.
fn inside(worktree: &Path, path: &str) -> Result<PathBuf> {
    let refused = || GitError::Refused(format!("{path} is not a file of the task's worktree"));
    let relative = Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(refused());
    }
    let mut at = worktree.to_path_buf();
    for part in relative.components() {
        at.push(part);
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(refused());
        }
    }
    Ok(at)
}

/// Why a commit (`command`) failed: git not knowing who the user is, in words that say how to
/// tell it, else git's own.
fn commit_failed(command: &str, out: &Output) -> GitError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("user.email") || stderr.contains("Author identity unknown") {
        return GitError::Refused(
            "git does not know who you are: set it with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`, then commit again".into(),
        );
    }
    failed(command, out)
}

/// `git ls-files -z FLAGS -- PATHS` in `dir`, in chunks (a command line has a limit); `paths`
/// are pathspecs ([`literal_path`]).
pub(crate) fn ls_files(dir: &Path, flags: &[&str], paths: &[String]) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for some in paths.chunks(500) {
        let mut args: Vec<String> = vec!["ls-files".into(), "-z".into()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.push("--".into());
        args.extend(some.iter().cloned());
        let out = run_in(dir, args)?;
        found.extend(
            out.stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        );
    }
    Ok(found)
}

/// What a folder's index holds of some files (`ls-files -s`), to put back as it was.
struct Staged {
    /// Where the folder is in the repository (`rev-parse --show-prefix`: empty at its top).
    prefix: String,
    /// Mode, object and path (from the repository's top, as the index names it) of each
    /// file's entry.
    entries: Vec<(String, String, String)>,
    /// Some file was conflicted (its stages are not kept).
    conflicted: bool,
}

impl Staged {
    fn read(folder: &Path, pathspecs: &[String]) -> Result<Staged> {
        let mut staged = Staged {
            prefix: prefix_in(folder)?,
            entries: Vec::new(),
            conflicted: false,
        };
        for line in ls_files(folder, &["-s", "--full-name"], pathspecs)? {
            let Some((meta, path)) = line.split_once('\t') else {
                continue;
            };
            match meta.split(' ').collect::<Vec<_>>()[..] {
                [mode, object, "0"] => {
                    staged
                        .entries
                        .push((mode.into(), object.into(), path.into()))
                }
                _ => staged.conflicted = true,
            }
        }
        Ok(staged)
    }

    /// Puts the entries of `files` (relative to `folder`) back as they were read: those the
    /// index held as they were, the others out of it again.
    fn put_back(&self, folder: &Path, files: &[String]) -> Result<()> {
        if self.conflicted {
            return Err(GitError::Refused("a file was conflicted".into()));
        }
        let held: std::collections::HashSet<&str> =
            self.entries.iter().map(|(_, _, p)| p.as_str()).collect();
        // (`--force-remove` takes paths from the folder git runs in; `--cacheinfo` the index's
        // own, from the repository's top.)
        let gone: Vec<&String> = files
            .iter()
            .filter(|f| !held.contains(format!("{}{f}", self.prefix).as_str()))
            .collect();
        for some in gone.chunks(500) {
            let mut args = vec!["update-index", "--force-remove", "--"];
            args.extend(some.iter().map(|f| f.as_str()));
            run_in(folder, args)?;
        }
        for some in self.entries.chunks(200) {
            let mut args = vec!["update-index".to_string(), "--add".into()];
            for (mode, object, path) in some {
                args.push("--cacheinfo".into());
                args.push(format!("{mode},{object},{path}"));
            }
            run_in(folder, args)?;
        }
        Ok(())
    }
}

/// Where the folder `dir` is in its repository (`sub/dir/`; empty at its top): what git puts
/// before a path that it names from the repository's top.
fn prefix_in(dir: &Path) -> Result<String> {
    Ok(stdout_line(&run_in(dir, ["rev-parse", "--show-prefix"])?))
}

/// Those of `paths` (relative to the checkout folder `dir`, which is `prefix` below the
/// repository's top) that a commit of its branch made since `since` (Unix seconds) removed.
fn removed_since(
    dir: &Path,
    prefix: &str,
    since: i64,
    paths: &[&String],
) -> Result<std::collections::HashSet<String>> {
    let mut removed = std::collections::HashSet::new();
    let since = format!("--since=@{since}");
    for some in paths.chunks(500) {
        let mut args: Vec<String> = [
            "log",
            since.as_str(),
            // (Whatever the user's config says: names from the top, no signatures, a removal
            // never paired with an addition as a rename.)
            "--no-relative",
            "--no-show-signature",
            "--no-renames",
            "--diff-filter=D",
            "--name-only",
            "--format=",
            "-z",
            "--",
        ]
        .map(String::from)
        .to_vec();
        args.extend(some.iter().map(|p| literal_path(p)));
        let out = run_in(dir, args)?;
        for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let name = String::from_utf8_lossy(name);
            if let Some(path) = name.strip_prefix(prefix) {
                removed.insert(path.to_string());
            }
        }
    }
    Ok(removed)
}

/// `path` (relative to the folder git runs in) as a pathspec that means only itself.
pub(crate) fn literal_path(path: &str) -> String {
    format!(":(literal){path}")
}

/// One commit (parent: HEAD) holding the folder's files as they are now, made in a temporary
/// index so the folder's own index and files stay as they are.
fn snapshot(dir: &Path, message: &str) -> Result<String> {
    let index = TempIndex::of(dir)?;
    let env = [("GIT_INDEX_FILE", index.path())];
    run_with(dir, ["add", "-A"], &env)?;
    let tree = stdout_line(&run_with(dir, ["write-tree"], &env)?);
    let commit = run_with(
        dir,
        ["commit-tree", &tree, "-p", "HEAD", "-m", message],
        &env,
    )?;
    Ok(stdout_line(&commit))
}

/// A temporary index file, in a folder of its own only this user can enter (the shared temporary
/// folder is anyone's: a name made there and written later could be a link by then), removed
/// when dropped.
pub(crate) struct TempIndex {
    _dir: tempfile::TempDir,
    index: PathBuf,
}

/// A temporary index's folder is named `codewright-index-p<pid>-…`: one a killed process left
/// behind is known by its process being gone.
const INDEX_PREFIX: &str = "codewright-index-p";

/// How old a temporary index of a process that is gone must be to be removed (an index in use
/// by a process of another PID namespace sharing the folder is never that old).
const STALE_INDEX: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes from `dir` the temporary indexes (and git's locks of them) of processes that ended
/// without removing them (killed), an hour or more ago. Only where a process's liveness can be
/// read (`/proc`).
fn sweep_stale_indexes(dir: &Path) {
    let proc = Path::new("/proc");
    if !cfg!(target_os = "linux") || !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(INDEX_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        let old = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|at| at.elapsed().is_ok_and(|age| age >= STALE_INDEX))
        };
        if let Some(pid) = pid {
            if pid != std::process::id() && !proc.join(pid.to_string()).exists() && old() {
                // (A folder now; a file, and its lock, as earlier versions left them.)
                let _ = match entry.file_type().is_ok_and(|t| t.is_dir()) {
                    true => std::fs::remove_dir_all(entry.path()),
                    false => std::fs::remove_file(entry.path()),
                };
            }
        }
    }
}

impl TempIndex {
    pub(crate) fn new() -> Result<TempIndex> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep_stale_indexes(&std::env::temp_dir()));
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{INDEX_PREFIX}{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| GitError::Failed {
                command: "read-tree".into(),
                stderr: format!("cannot make a temporary index: {e}"),
            })?;
        // (git makes the index itself: an empty file is not an index.)
        let index = dir.path().join("index");
        Ok(TempIndex { _dir: dir, index })
    }

    /// A temporary index that starts as a copy of `dir`'s own (whose file times let `git add`
    /// hash only what changed: on 100,000 files, a fresh index from HEAD hashes them all), else
    /// as HEAD's tree.
    pub(crate) fn of(dir: &Path) -> Result<TempIndex> {
        let index = TempIndex::new()?;
        let own = run_in(
            dir,
            ["rev-parse", "--path-format=absolute", "--git-path", "index"],
        )?;
        let own = PathBuf::from(stdout_line(&own));
        // The copy keeps the index's own time: git trusts an entry's file times only when the
        // file is older than its index, and a copy made now would hide a file changed in the
        // same second as the index was written ("racy git").
        let copied = std::fs::copy(&own, index.path()).and_then(|_| {
            let written = std::fs::metadata(&own)?.modified()?;
            std::fs::File::options()
                .write(true)
                .open(index.path())?
                .set_modified(written)
        });
        if copied.is_err() {
            run_with(
                dir,
                ["read-tree", "HEAD"],
                &[("GIT_INDEX_FILE", index.path())],
            )?;
        }
        Ok(index)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.index
    }
}

/// Runs git in `dir`; a failure is an error carrying git's words.
pub(crate) fn run_in<I, S>(dir: &Path, args: I) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_with(dir, args, &[])
}

pub(crate) fn run_with<I, S>(dir: &Path, args: I, env: &[(&str, &Path)]) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = command(dir, &args, env)?;
    if !out.status.success() {
        let name = args
            .first()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Err(failed(&name, &out));
    }
    Ok(out)
}

/// Runs git in `dir` and returns what it did, success or not.
fn git_output<I, S>(dir: &Path, args: I) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    command(dir, &args, &[])
}

/// Every git command: in `dir`, with nothing the repository configured that runs code (its
/// configuration is read for each command: a worktree can have its own).
fn command(dir: &Path, args: &[std::ffi::OsString], env: &[(&str, &Path)]) -> Result<Output> {
    let repository = safe::Repository::open(dir).map_err(|refused| match refused {
        safe::Refused::TooOld(version) => GitError::Refused(format!(
            "{version} is too old to be run safely on a repository: install git 2.31 or newer"
        )),
        safe::Refused::Unreadable(_) if which_git().is_none() => GitError::NotInstalled,
        safe::Refused::Unreadable(why) => GitError::Failed {
            command: "config".into(),
            stderr: why,
        },
    })?;
    let mut git = repository.command();
    // No housekeeping left running after the command (an automatic gc or maintenance, started
    // in the background by a commit, holds the repository's locks past it): the user's own git
    // does it.
    git.args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    for (key, value) in env {
        git.env(key, value);
    }
    git.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => GitError::NotInstalled,
        _ => GitError::Failed {
            command: args
                .first()
                .map(|a| a.to_string_lossy().into_owned())
                .unwrap_or_default(),
            stderr: e.to_string(),
        },
    })
}

/// Whether a `git` can be started at all.
fn which_git() -> Option<()> {
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()
        .map(drop)
}

fn failed(command: &str, out: &Output) -> GitError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr.trim();
    GitError::Failed {
        command: command.into(),
        stderr: if stderr.is_empty() {
            format!("exit status {}", out.status)
        } else {
            stderr.lines().take(6).collect::<Vec<_>>().join(" ")
        },
    }
}

fn stdout_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[cfg(test)]
mod temp_index_tests {
    use super::*;

    #[test]
    fn a_temporary_index_is_in_a_folder_only_its_user_can_enter() {
        use std::os::unix::fs::PermissionsExt;
        let index = TempIndex::new().unwrap();
        let folder = index.path().parent().unwrap();
        let mode = std::fs::metadata(folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(folder.starts_with(std::env::temp_dir()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn indexes_left_by_killed_processes_are_swept_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let mut gone = Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let names = [
            format!("{INDEX_PREFIX}{dead}-a1b2c3"),
            format!("{INDEX_PREFIX}{dead}-a1b2c3.lock"),
            format!("{INDEX_PREFIX}{}-d4e5f6", std::process::id()),
            format!("{INDEX_PREFIX}1-g7h8i9"), // init never ends
            "codewright-index-123456".to_string(),
            "other-file".to_string(),
            format!("{INDEX_PREFIX}{dead}-j1k2l3"), // a dead process's, but written just now
        ];
        let long_ago = std::time::SystemTime::now() - 2 * STALE_INDEX;
        for (n, name) in names.iter().enumerate() {
            let file = std::fs::File::create(dir.path().join(name)).unwrap();
            if n + 1 < names.len() {
                file.set_modified(long_ago).unwrap();
            }
        }
        // A dead process's folder, as indexes are kept now.
        let folder = dir.path().join(format!("{INDEX_PREFIX}{dead}-m4n5o6"));
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("index"), "DIRC").unwrap();
        std::fs::File::open(&folder)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        sweep_stale_indexes(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut kept = names[2..].to_vec();
        kept.sort();
        assert_eq!(left, kept);
    }
}
