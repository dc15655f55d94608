//! A task's branch merged into its base, in two steps so that a crash between any two instants
//! loses nothing: [`Repo::plan_merge`] works the merge out in the object store only (the commit
//! the base will point at; a conflict is found here, before anything moves), and
//! [`Repo::merge`] moves the base there — where the base is checked out, as a fast-forward of
//! that checkout, else by moving its ref. A merge cut short (the process killed while git wrote
//! the checkout) is repaired by [`Repo::repair_merge`] from the plan, which the caller keeps
//! until the merge ends.

use crate::{failed, git_output, run_in, stdout_line, GitError, Repo, Result, Worktree};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How a task's branch goes into its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MergeMode {
    /// A fast-forward when the base has not moved, else a merge commit.
    #[default]
    Auto,
    /// Only a fast-forward; refused when the base has moved.
    FastForward,
    /// Always a merge commit.
    MergeCommit,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Merged {
    pub base: String,
    /// The base's commit now.
    pub commit: String,
    pub fast_forward: bool,
}

/// A merge worked out and not made yet: nothing a user sees has changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergePlan {
    /// The base branch (its short name).
    pub base: String,
    /// The base's commit when the merge was worked out.
    pub before: String,
    /// The commit the base is to point at: the task's tip (a fast-forward) or a merge commit.
    pub commit: String,
    pub fast_forward: bool,
    /// Where the base is checked out, if anywhere.
    pub checkout: Option<PathBuf>,
}

/// What [`Repo::repair_merge`] found of a merge cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeRepair {
    /// The base had reached the merge: it was made.
    Made,
    /// The base is where it was before the merge, and so is its checkout; `kept` are files of
    /// the checkout changed since the merge began by someone else, left as they were found.
    Undone { kept: Vec<String> },
    /// The base has moved elsewhere since, or its checkout is on another branch now: nothing
    /// was changed.
    Moved,
}

impl Repo {
    /// Works out the merge of the worktree's branch into its base (which must be a branch): the
    /// commit the base will point at, made in the object store only. Refused, with nothing
    /// changed, when it conflicts, when `mode` cannot be had, or when the base's checkout has
    /// uncommitted changes to tracked files.
    pub fn plan_merge(&self, worktree: &Worktree, mode: MergeMode) -> Result<MergePlan> {
        let base = worktree.base.as_str();
        let exists = git_output(
            self.root(),
            ["show-ref", "--verify", "-q", &format!("refs/heads/{base}")],
        )?;
        if !exists.status.success() {
            return Err(GitError::Refused(format!(
                "the task was made from {base}, which is not a branch (now): merge its branch {} by hand",
                worktree.branch
            )));
        }
        let before = self.commit_of(base)?;
        let tip = self.commit_in(&worktree.path)?;
        let can_ff = git_output(self.root(), ["merge-base", "--is-ancestor", &before, &tip])?
            .status
            .success();
        if mode == MergeMode::FastForward && !can_ff {
            return Err(GitError::Refused(format!(
                "{base} has moved on since the task began, so it cannot be fast-forwarded: merge with a merge commit instead"
            )));
        }
        let merged_already =
            git_output(self.root(), ["merge-base", "--is-ancestor", &tip, &before])?
                .status
                .success();
        if merged_already {
            return Err(GitError::Refused(format!(
                "everything on {} is in {base} already: there is nothing to merge",
                worktree.branch
            )));
        }
        let checkout = self.checkout_of(base)?;
        let fast_forward = can_ff && mode != MergeMode::MergeCommit;
        let commit = match fast_forward {
            true => tip,
            false => self.merge_commit(worktree, &before, &tip)?,
        };
        if let Some(checkout) = &checkout {
            let tracked_changes =
                run_in(checkout, ["status", "--porcelain", "--untracked-files=no"])?;
            if !tracked_changes.stdout.is_empty() {
                return Err(GitError::Refused(format!(
                    "{} (where {base} is checked out) has changes that are not committed: commit or stash them, then merge",
                    checkout.display()
                )));
            }
            // A file of the user's that git would write over (git refuses those too, but later):
            // found here, the merge's repair can take whatever it finds there as git's.
            let added: Vec<String> = tree_changes(checkout, &before, &commit)?
                .into_iter()
                .filter(|change| change.before == ABSENT)
                .map(|change| crate::literal_path(&change.path))
                .collect();
            let in_the_way = crate::ls_files(checkout, &["--others"], &added)?;
            if !in_the_way.is_empty() {
                return Err(GitError::Refused(format!(
                    "the merge brings {} into {}, where files of that name are not committed: move them away, then merge",
                    in_the_way.join(", "),
                    checkout.display()
                )));
            }
        }
        Ok(MergePlan {
            base: base.into(),
            before,
            commit,
            fast_forward,
            checkout,
        })
    }

    /// The merge commit of `tip` into `before`, made in the object store only; a conflict is an
    /// error naming the files.
    fn merge_commit(&self, worktree: &Worktree, before: &str, tip: &str) -> Result<String> {
        let tree = self.merge_tree(worktree, before, tip)?;
        let message = format!("Merge branch '{}' into {}", worktree.branch, worktree.base);
        Ok(stdout_line(&self.run([
            "commit-tree",
            &tree,
            "-p",
            before,
            "-p",
            tip,
            "-m",
            &message,
        ])?))
    }

    /// The tree of `tip` merged into `before`, written to the object store only; a conflict is
    /// an error naming the files.
    fn merge_tree(&self, worktree: &Worktree, before: &str, tip: &str) -> Result<String> {
        let out = git_output(
            self.root(),
            ["merge-tree", "--write-tree", "--name-only", before, tip],
        )?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        let tree = lines.next().unwrap_or_default().to_string();
        if !out.status.success() {
            let files: Vec<String> = lines
                .take_while(|l| !l.is_empty())
                .map(String::from)
                .collect();
            if files.is_empty() || out.status.code() != Some(1) {
                // (A git before 2.38 has no `--write-tree`.)
                return Err(failed("merge-tree", &out));
            }
            return Err(GitError::Conflict {
                branch: worktree.branch.clone(),
                base: worktree.base.clone(),
                files,
            });
        }
        Ok(tree)
    }

    /// Makes a planned merge: the base moves to the plan's commit — its checkout fast-forwarded
    /// when it has one — only if it is still where the plan found it.
    ///
    /// A merge that fails part way is put back as [`Repo::repair_merge`] does, before the error
    /// is returned.
    pub fn merge(&self, plan: &MergePlan) -> Result<Merged> {
        let base_ref = format!("refs/heads/{}", plan.base);
        match &plan.checkout {
            Some(checkout) => {
                let moved = || {
                    GitError::Refused(format!(
                        "{} moved while the merge was worked out: merge again",
                        plan.base
                    ))
                };
                if self.commit_of(&plan.base)? != plan.before {
                    return Err(moved());
                }
                if !checked_out_on(checkout, &base_ref)? {
                    return Err(GitError::Refused(format!(
                        "{} is not on {} any more: merge again",
                        checkout.display(),
                        plan.base
                    )));
                }
                let out = git_output(
                    checkout,
                    ["merge", "-q", "--ff-only", "--no-verify", &plan.commit],
                )?;
                if !out.status.success() {
                    // (git has ended: any lock file there now is someone else's.)
                    let error = failed("merge", &out);
                    return Err(match self.repair(plan, None) {
                        Ok(MergeRepair::Made) => return self.merged(plan),
                        Ok(_) => error,
                        Err(repair) => GitError::Refused(format!(
                            "{error}; and putting {} back failed too ({repair}): look at it with `git status`",
                            checkout.display()
                        )),
                    });
                }
            }
            // Moves only if the base is still where it was read.
            None => drop(self.run(["update-ref", &base_ref, &plan.commit, &plan.before])?),
        }
        self.merged(plan)
    }

    fn merged(&self, plan: &MergePlan) -> Result<Merged> {
        Ok(Merged {
            base: plan.base.clone(),
            commit: self.commit_of(&plan.base)?,
            fast_forward: plan.fast_forward,
        })
    }

    /// Repairs a merge that was cut short, from its plan: the lock files it left go, and where
    /// the base had not reached the merge, its checkout is put back as it was — each file git
    /// had written (or half written) for the merge gets its content from before, and any other
    /// change found is left as it is and named. Only for a merge known to have been cut short,
    /// begun at `began` (a lock file older than that is someone else's, and stays).
    pub fn repair_merge(&self, plan: &MergePlan, began: SystemTime) -> Result<MergeRepair> {
        self.repair(plan, Some(began))
    }

    /// [`Repo::repair_merge`]; the lock files made since `locks_since` cleared, none without.
    fn repair(&self, plan: &MergePlan, locks_since: Option<SystemTime>) -> Result<MergeRepair> {
        let base_ref = format!("refs/heads/{}", plan.base);
        let now = self.commit_of(&plan.base)?;
        let checkout = plan.checkout.as_deref().filter(|c| c.is_dir());
        // A checkout switched to another branch since is someone else's now: left as it is,
        // locks and all.
        let on_base = match checkout {
            Some(checkout) => checked_out_on(checkout, &base_ref)?,
            None => false,
        };
        let mut locks = Vec::new();
        if now == plan.before || now == plan.commit {
            let common = self.root().join(".git");
            locks.push(common.join(format!("{base_ref}.lock")));
        }
        if let (Some(checkout), true) = (checkout, on_base) {
            let admin = PathBuf::from(stdout_line(&run_in(
                checkout,
                ["rev-parse", "--absolute-git-dir"],
            )?));
            locks.extend(MERGE_LOCKS.iter().map(|name| admin.join(name)));
        }
        if let Some(began) = locks_since {
            clear_locks(locks, began);
        }
        if now == plan.commit {
            return Ok(MergeRepair::Made);
        }
        if now != plan.before {
            return Ok(MergeRepair::Moved);
        }
        let Some(checkout) = checkout else {
            return Ok(MergeRepair::Undone { kept: Vec::new() });
        };
        if !on_base {
            return Ok(MergeRepair::Moved);
        }
        let mut kept = Vec::new();
        let mut touched = Vec::new();
        let mut put_back = Vec::new();
        // On a file system that keeps no modes (`core.fileMode` false) git ignores the bit, and
        // so does the comparison.
        let modes = file_modes(checkout)?;
        // What the merge wrote is undone before what it removed is put back: a file that became
        // a folder (or one that took a folder's place) goes before the other comes back.
        let mut changes = tree_changes(checkout, &plan.before, &plan.commit)?;
        changes.sort_by_key(|change| change.after == ABSENT);
        // Files a sparse checkout leaves out (`S`, skip-worktree, in its index): git writes none
        // of them, and neither may the put-back (a `git checkout` of one writes it, even when
        // the merge had only got as far as its index entry; the index is reset below).
        let paths: Vec<String> = changes
            .iter()
            .map(|c| crate::literal_path(&c.path))
            .collect();
        let left_out: std::collections::HashSet<String> =
            crate::ls_files(checkout, &["-t"], &paths)?
                .into_iter()
                .filter_map(|l| l.strip_prefix("S ").map(str::to_string))
                .collect();
        for change in changes {
            touched.push(crate::literal_path(&change.path));
            let before = Side::of(checkout, &plan.before, &change.before, &change.path, modes)?;
            let merged = Side::of(checkout, &plan.commit, &change.after, &change.path, modes)?;
            let written_by_merge = match Side::in_folder(checkout, &change.path, modes) {
                Some(there) if there == before => continue,
                Some(Side::Absent) if left_out.contains(&change.path) => continue,
                // (Unlinked by git, not written yet — after a merge that failed, whose index
                // git put back itself, only if the index still has it: one the user removed
                // from the index, `git rm`, is the user's.)
                Some(Side::Absent) => {
                    locks_since.is_some()
                        || !crate::ls_files(
                            checkout,
                            &["--cached"],
                            &[crate::literal_path(&change.path)],
                        )?
                        .is_empty()
                }
                // After a crash, only while it was last changed in the merge's time: a file
                // changed since is the user's, whatever it holds (an empty one, say).
                Some(there) => {
                    there.written_toward(&merged)
                        && locks_since.is_none_or(|began| {
                            changed_at(checkout, &change.path)
                                .is_some_and(|at| in_merge_time(at, began, FILE_GRACE))
                        })
                }
                None => false,
            };
            if !written_by_merge {
                kept.push(change.path);
                continue;
            }
            put_back.push(crate::literal_path(&change.path));
            match before {
                Side::Absent => remove_file_and_empty_folders(checkout, &change.path),
                _ => drop(run_in(
                    checkout,
                    [
                        "checkout",
                        &plan.before,
                        "--",
                        &crate::literal_path(&change.path),
                    ],
                )?),
            }
        }
        // The index too, as it was for those files: all the merge's after a crash (it may have
        // written the index for them), only those put back after a merge that failed (git put
        // its index back itself; what the user staged since the plan stays staged).
        let reset = match locks_since {
            Some(_) => touched,
            None => put_back,
        };
        for some in reset.chunks(500) {
            let mut args = vec![
                "reset".to_string(),
                "-q".into(),
                plan.before.clone(),
                "--".into(),
            ];
            args.extend(some.iter().cloned());
            run_in(checkout, args)?;
        }
        Ok(MergeRepair::Undone { kept })
    }

    /// The files that would conflict if the worktree's branch were merged into its base now
    /// (worked out in the object store only; nothing changes).
    pub fn conflicts(&self, worktree: &Worktree) -> Result<Vec<String>> {
        let tip = self.commit_in(&worktree.path)?;
        let base = self.commit_of(&worktree.base)?;
        match self.merge_tree(worktree, &base, &tip) {
            Ok(_) => Ok(Vec::new()),
            Err(GitError::Conflict { files, .. }) => Ok(files),
            Err(e) => Err(e),
        }
    }
}

/// How long after a merge began what it left (a lock file, a file written) may have been made.
const MERGE_TIME: Duration = Duration::from_secs(600);

/// The lock files a fast-forward of a checkout takes, in its git admin folder (`AUTO_MERGE`: the
/// ref git's merge machinery writes as it goes — left by the worktree drill's kill -9 once).
const MERGE_LOCKS: [&str; 4] = [
    "index.lock",
    "HEAD.lock",
    "ORIG_HEAD.lock",
    "AUTO_MERGE.lock",
];

/// Whether the checkout has `branch` (a full ref name) checked out.
fn checked_out_on(checkout: &Path, branch: &str) -> Result<bool> {
    let head = git_output(checkout, ["symbolic-ref", "-q", "HEAD"])?;
    Ok(stdout_line(&head) == branch)
}

/// Removes those of `locks` made since `began` and still there after a moment (a live git's
/// last milliseconds; these are known to be left by an operation that was killed).
fn clear_locks(mut locks: Vec<PathBuf>, began: SystemTime) {
    let made_since = |lock: &PathBuf| {
        lock.symlink_metadata().is_ok_and(|m| {
            m.is_file()
                && m.modified()
                    .is_ok_and(|at| in_merge_time(at, began, Duration::from_secs(1)))
        })
    };
    locks.retain(made_since);
    if locks.is_empty() {
        return;
    }
    std::thread::sleep(Duration::from_millis(500));
    for lock in locks {
        let _ = std::fs::remove_file(lock);
    }
}

/// Whether something changed at `at` may be the work of a merge begun at `began`: not before it
/// (less `grace`: a file system keeps times coarser than the clock), nor long after (a user's
/// `git commit` in its editor, or an edit, made before this repair ran at the next start).
fn in_merge_time(at: SystemTime, began: SystemTime, grace: Duration) -> bool {
    at >= began - grace && at <= began + MERGE_TIME
}

/// A file's grace: FAT keeps times in two seconds, and the checkout's clock (a network file
/// system's) may not be the mark's. (A lock's is a second: one made earlier is someone else's.)
const FILE_GRACE: Duration = Duration::from_secs(3);

/// When the file at `path` in `checkout` was last changed — its content, its mode or the file
/// itself (its status change time, which no one sets by hand); `None` when it cannot be read or
/// its folder is reached through a link.
fn changed_at(checkout: &Path, path: &str) -> Option<SystemTime> {
    let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
    let meta = crate::inside(checkout, folder)
        .ok()?
        .join(name)
        .symlink_metadata()
        .ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
        let secs = u64::try_from(meta.ctime()).ok()?;
        Some(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
    }
    #[cfg(not(unix))]
    meta.modified().ok()
}

/// A tree entry's mode for "not there".
const ABSENT: &str = "000000";

/// One file that differs between two commits, and its mode on each side (`000000`: not there).
struct TreeChange {
    path: String,
    before: String,
    after: String,
}

/// The files that differ between commits `from` and `to` (no rename detection: each path as it is).
fn tree_changes(dir: &Path, from: &str, to: &str) -> Result<Vec<TreeChange>> {
    let out = run_in(dir, ["diff-tree", "-r", "-z", "--no-renames", from, to])?;
    let mut fields = out.stdout.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let mut parts = meta.trim_start_matches(':').split(' ');
        let (Some(old_mode), Some(new_mode)) = (parts.next(), parts.next()) else {
            continue;
        };
        changes.push(TreeChange {
            path: String::from_utf8_lossy(path).into_owned(),
            before: old_mode.into(),
            after: new_mode.into(),
        });
    }
    Ok(changes)
}

/// What a path of a checkout holds, or would hold when checked out from a commit.
#[derive(Debug, PartialEq, Eq)]
enum Side {
    Absent,
    /// Its content, and whether it is executable.
    File(Vec<u8>, bool),
    Link(Vec<u8>),
    /// A folder, a submodule or something else that is not one file.
    Other,
}

impl Side {
    /// `None` for a path whose folder is reached through a link (never followed out of the
    /// checkout).
    fn in_folder(checkout: &Path, path: &str, modes: bool) -> Option<Side> {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let at = crate::inside(checkout, folder).ok()?.join(name);
        Some(match at.symlink_metadata() {
            Err(_) => Side::Absent,
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&at)
                .map(|target| Side::Link(target.into_os_string().into_encoded_bytes()))
                .unwrap_or(Side::Other),
            // (Read along its path: a folder swapped for a link since is not followed.)
            Ok(m) if m.is_file() => checkout
                .canonicalize()
                .ok()
                .and_then(|real| codewright_nofollow::read(&real.join(path)).ok().flatten())
                .map(|(content, _)| Side::File(content, modes && executable(&m)))
                .unwrap_or(Side::Other),
            Ok(_) => Side::Other,
        })
    }

    /// The file as a checkout of `commit` writes it (line endings converted as the checkout
    /// would).
    fn of(checkout: &Path, commit: &str, mode: &str, path: &str, modes: bool) -> Result<Side> {
        let object = format!("{commit}:{path}");
        Ok(match mode {
            ABSENT => Side::Absent,
            "120000" => Side::Link(run_in(checkout, ["cat-file", "blob", &object])?.stdout),
            "100644" | "100755" => Side::File(
                run_in(checkout, ["cat-file", "--filters", &object])?.stdout,
                modes && mode == "100755" && cfg!(unix),
            ),
            _ => Side::Other,
        })
    }

    /// Whether this is `target` as git writes it, whole or cut off part way.
    fn written_toward(&self, target: &Side) -> bool {
        match (self, target) {
            (Side::File(some, x), Side::File(all, y)) => x == y && all.starts_with(some),
            (Side::Other, _) | (_, Side::Other) => false,
            (here, there) => here == there,
        }
    }
}

/// Whether git keeps files' executable bit in `checkout` (`core.fileMode`, true unless set).
fn file_modes(checkout: &Path) -> Result<bool> {
    let out = git_output(checkout, ["config", "--bool", "core.fileMode"])?;
    Ok(stdout_line(&out) != "false")
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    false
}

/// Removes a file the merge had written (along its path, never through a link), and the folders
/// it left empty.
fn remove_file_and_empty_folders(checkout: &Path, path: &str) {
    let Ok(checkout) = checkout.canonicalize() else {
        return;
    };
    let checkout = checkout.as_path();
    let at = checkout.join(path);
    if !matches!(codewright_nofollow::remove(&at), Ok(true)) {
        return;
    }
    let mut folder = at.parent();
    while let Some(dir) = folder.filter(|d| *d != checkout && d.starts_with(checkout)) {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
        folder = dir.parent();
    }
}
