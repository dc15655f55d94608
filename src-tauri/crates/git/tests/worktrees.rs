//! Real repositories made by the tests, real git: a task's worktree, its change, its commit, its
//! merge, and its work discarded and restored — with nothing lost and no hook run.

use codewright_git::{GitError, MergeMode, MergeRepair, Repo};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository on `main` with one commit (`app.py`, `README.md`), a folder for worktrees, and
/// the identity commits are made with.
struct World {
    _dir: tempfile::TempDir,
    repo_dir: PathBuf,
    trees: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let repo_dir = dir.path().join("repo");
        std::fs::create_dir_all(&repo_dir).unwrap();
        git(&repo_dir, &["init", "-q", "-b", "main"]);
        std::fs::write(
            repo_dir.join("app.py"),
            "def add(a, b):\n    return a - b\n",
        )
        .unwrap();
        std::fs::write(repo_dir.join("README.md"), "# App\n").unwrap();
        git(&repo_dir, &["add", "-A"]);
        git(&repo_dir, &["commit", "-q", "-m", "first"]);
        // Commits made by the crate take the identity from the environment.
        for (key, value) in [
            ("GIT_AUTHOR_NAME", "Test"),
            ("GIT_AUTHOR_EMAIL", "test@example.com"),
            ("GIT_COMMITTER_NAME", "Test"),
            ("GIT_COMMITTER_EMAIL", "test@example.com"),
        ] {
            std::env::set_var(key, value);
        }
        let trees = dir.path().join("data/worktrees");
        World {
            _dir: dir,
            repo_dir,
            trees,
        }
    }

    fn repo(&self) -> Repo {
        Repo::discover(&self.repo_dir).unwrap()
    }
}

#[test]
fn a_task_works_on_its_own_branch_and_the_project_folder_is_untouched() {
    let w = World::new();
    let repo = w.repo();
    assert_eq!(repo.root(), w.repo_dir.canonicalize().unwrap());
    let one = repo
        .add_worktree(&w.trees.join("1/1"), "codewright/fix-add", None)
        .unwrap();
    let two = repo
        .add_worktree(&w.trees.join("1/2"), "codewright/fix-add", None)
        .unwrap();
    assert_eq!(one.base, "main");
    assert_eq!(
        two.branch, "codewright/fix-add-2",
        "a taken name gets a number"
    );

    // Both edit the same file at once.
    std::fs::write(
        one.path.join("app.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        two.path.join("app.py"),
        "def add(a, b):\n    return b + a\n",
    )
    .unwrap();
    std::fs::write(two.path.join("new.txt"), "new\n").unwrap();
    let first = repo.changes(&one).unwrap();
    assert_eq!(first.files.len(), 1, "{first:?}");
    assert_eq!(first.files[0].path, "app.py");
    assert_eq!(first.totals(), (1, 1));
    assert!(first.patch.contains("+    return a + b"), "{}", first.patch);
    let second = repo.changes(&two).unwrap();
    let paths: Vec<&str> = second.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["app.py", "new.txt"],
        "a new file is part of the change"
    );
    // Reading the change left the worktree's index alone: the new file is still untracked.
    assert!(git(&two.path, &["status", "--porcelain"]).ends_with("?? new.txt"));

    // Committed work is still the task's change.
    let commit = repo.commit_all(&one.path, "Fix add").unwrap().unwrap();
    assert_eq!(git(&one.path, &["rev-parse", "HEAD"]), commit);
    assert_eq!(repo.changes(&one).unwrap().files.len(), 1);
    assert_eq!(
        repo.commit_all(&one.path, "again").unwrap(),
        None,
        "nothing left"
    );

    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
}

#[test]
fn a_merge_fast_forwards_the_base_or_reports_a_conflict_and_changes_nothing() {
    let w = World::new();
    let repo = w.repo();
    let one = repo
        .add_worktree(&w.trees.join("1"), "codewright/one", None)
        .unwrap();
    let two = repo
        .add_worktree(&w.trees.join("2"), "codewright/two", None)
        .unwrap();
    std::fs::write(
        one.path.join("app.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    repo.commit_all(&one.path, "one").unwrap();
    std::fs::write(
        two.path.join("app.py"),
        "def add(a, b):\n    return b + a\n",
    )
    .unwrap();
    repo.commit_all(&two.path, "two").unwrap();

    // The base is checked out in the project folder: the merge happens there.
    let merged = repo
        .plan_merge(&one, MergeMode::Auto)
        .and_then(|plan| repo.merge(&plan))
        .unwrap();
    assert!(merged.fast_forward);
    assert_eq!(merged.commit, git(&one.path, &["rev-parse", "HEAD"]));
    assert!(std::fs::read_to_string(w.repo_dir.join("app.py"))
        .unwrap()
        .contains("a + b"));

    // The other task's change conflicts: reported, and both sides are as they were.
    let before = git(&w.repo_dir, &["rev-parse", "HEAD"]);
    let err = repo
        .plan_merge(&two, MergeMode::Auto)
        .and_then(|plan| repo.merge(&plan))
        .unwrap_err();
    match &err {
        GitError::Conflict { files, .. } => assert_eq!(files, &["app.py"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(err.kind(), codewright_protocol::ErrorKind::Conflict);
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
    assert!(!w.repo_dir.join(".git/MERGE_HEAD").exists());
    assert!(std::fs::read_to_string(two.path.join("app.py"))
        .unwrap()
        .contains("b + a"));
    let err = repo
        .plan_merge(&two, MergeMode::FastForward)
        .and_then(|plan| repo.merge(&plan))
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot be fast-forwarded"),
        "{err}"
    );
}

#[test]
fn a_merge_cut_short_in_the_checkout_is_put_back_and_a_finished_one_is_kept() {
    let w = World::new();
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/m", None)
        .unwrap();
    std::fs::write(
        task.path.join("app.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::create_dir_all(task.path.join("src/deep")).unwrap();
    std::fs::write(
        task.path.join("src/deep/new.py"),
        "print('new')\n".repeat(50),
    )
    .unwrap();
    std::fs::write(task.path.join("notes.txt"), "notes\n").unwrap();
    std::fs::remove_file(task.path.join("README.md")).unwrap();
    repo.commit_all(&task.path, "work").unwrap();
    // main moves on: the plan is a merge commit.
    std::fs::write(w.repo_dir.join("main.txt"), "main\n").unwrap();
    git(&w.repo_dir, &["add", "main.txt"]);
    git(&w.repo_dir, &["commit", "-qm", "main"]);
    let before = git(&w.repo_dir, &["rev-parse", "HEAD"]);
    let plan = repo.plan_merge(&task, MergeMode::Auto).unwrap();
    assert!(!plan.fast_forward);
    assert_eq!(plan.before, before);
    assert_eq!(
        git(&w.repo_dir, &["rev-parse", "HEAD"]),
        before,
        "planned only"
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");

    // Killed while git wrote the checkout: some files written, one cut off part way, one
    // unlinked, the index written for the merge and its lock left; a file the user edited since.
    // A lock left from before the merge began is someone else's; so is a lock git's merge
    // does not take.
    let old = w.repo_dir.join(".git/ORIG_HEAD.lock");
    std::fs::write(&old, "").unwrap();
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let began = SystemTime::now();
    std::fs::write(w.repo_dir.join(".git/config.lock"), "").unwrap();
    let read = |at: &str| git(&w.repo_dir, &["show", &format!("{}:{at}", plan.commit)]) + "\n";
    std::fs::write(w.repo_dir.join("app.py"), read("app.py")).unwrap();
    std::fs::create_dir_all(w.repo_dir.join("src/deep")).unwrap();
    std::fs::write(
        w.repo_dir.join("src/deep/new.py"),
        &read("src/deep/new.py")[..100],
    )
    .unwrap();
    std::fs::remove_file(w.repo_dir.join("README.md")).unwrap();
    git(&w.repo_dir, &["read-tree", &plan.commit]);
    std::fs::write(w.repo_dir.join(".git/index.lock"), "").unwrap();
    std::fs::write(w.repo_dir.join(".git/AUTO_MERGE.lock"), "").unwrap();
    std::fs::write(w.repo_dir.join(".git/refs/heads/main.lock"), "").unwrap();
    std::fs::write(w.repo_dir.join("notes.txt"), "mine, written after\n").unwrap();

    let repaired = repo.repair_merge(&plan, began).unwrap();
    assert_eq!(
        repaired,
        MergeRepair::Undone {
            kept: vec!["notes.txt".into()]
        }
    );
    assert!(old.exists() && w.repo_dir.join(".git/config.lock").exists());
    std::fs::remove_file(old).unwrap();
    std::fs::remove_file(w.repo_dir.join(".git/config.lock")).unwrap();
    assert!(!w.repo_dir.join(".git/index.lock").exists());
    assert!(!w.repo_dir.join(".git/AUTO_MERGE.lock").exists());
    assert!(!w.repo_dir.join(".git/refs/heads/main.lock").exists());
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), before);
    assert!(
        !w.repo_dir.join("src").exists(),
        "the new file and its folders go"
    );
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("README.md")).unwrap(),
        "# App\n"
    );
    assert_eq!(
        git(&w.repo_dir, &["status", "--porcelain"]),
        "?? notes.txt",
        "only the user's own file is left"
    );
    std::fs::remove_file(w.repo_dir.join("notes.txt")).unwrap();

    // Merged again from the same plan; a lock left at the very end goes, and the merge stays.
    let merged = repo.merge(&plan).unwrap();
    assert_eq!(merged.commit, plan.commit);
    let began = SystemTime::now();
    std::fs::write(w.repo_dir.join(".git/index.lock"), "").unwrap();
    assert_eq!(repo.repair_merge(&plan, began).unwrap(), MergeRepair::Made);
    assert!(!w.repo_dir.join(".git/index.lock").exists());
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), plan.commit);
    assert!(w.repo_dir.join("src/deep/new.py").exists());

    // The base moved by someone else since: nothing is touched.
    git(
        &w.repo_dir,
        &["commit", "-q", "--allow-empty", "-m", "later"],
    );
    assert_eq!(repo.repair_merge(&plan, began).unwrap(), MergeRepair::Moved);
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
}

#[test]
fn a_merge_cut_short_puts_back_a_mode_and_a_file_that_became_a_folder() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/f", None)
        .unwrap();
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // The task makes app.py executable (its content unchanged) and README.md a folder.
    set_mode(&task.path.join("app.py"), 0o755);
    std::fs::remove_file(task.path.join("README.md")).unwrap();
    std::fs::create_dir(task.path.join("README.md")).unwrap();
    std::fs::write(task.path.join("README.md/part.md"), "part\n".repeat(40)).unwrap();
    repo.commit_all(&task.path, "shape").unwrap();

    let plan = repo.plan_merge(&task, MergeMode::Auto).unwrap();
    assert!(plan.fast_forward);
    let before = git(&w.repo_dir, &["rev-parse", "HEAD"]);

    // Killed part way: the mode changed, README.md unlinked, its folder made and a file in it
    // half written.
    let began = SystemTime::now();
    set_mode(&w.repo_dir.join("app.py"), 0o755);
    std::fs::remove_file(w.repo_dir.join("README.md")).unwrap();
    std::fs::create_dir(w.repo_dir.join("README.md")).unwrap();
    std::fs::write(w.repo_dir.join("README.md/part.md"), "part\n".repeat(7)).unwrap();
    std::fs::write(w.repo_dir.join(".git/index.lock"), "").unwrap();

    let repaired = repo.repair_merge(&plan, began).unwrap();
    assert_eq!(repaired, MergeRepair::Undone { kept: Vec::new() });
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("README.md")).unwrap(),
        "# App\n"
    );
    let mode = std::fs::metadata(w.repo_dir.join("app.py"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "app.py is not executable again");
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");

    // A file of the user's where the merge would write one: refused before anything moves.
    let merged = repo.merge(&plan).unwrap();
    assert_eq!(merged.commit, plan.commit);
    std::fs::write(task.path.join("new.txt"), "the task's\n").unwrap();
    repo.commit_all(&task.path, "new").unwrap();
    std::fs::write(w.repo_dir.join("new.txt"), "the user's\n").unwrap();
    let err = repo.plan_merge(&task, MergeMode::Auto).unwrap_err();
    assert!(err.to_string().contains("new.txt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("new.txt")).unwrap(),
        "the user's\n"
    );
    std::fs::remove_file(w.repo_dir.join("new.txt")).unwrap();
    repo.plan_merge(&task, MergeMode::Auto)
        .and_then(|plan| repo.merge(&plan))
        .unwrap();

    // Merged already: nothing to merge, and no empty merge commit.
    let tip = git(&w.repo_dir, &["rev-parse", "HEAD"]);
    let err = repo.plan_merge(&task, MergeMode::MergeCommit).unwrap_err();
    assert!(err.to_string().contains("nothing to merge"), "{err}");
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), tip);

    // A folder that becomes a file again is no file of the user's in the merge's way.
    let back = repo
        .add_worktree(&w.trees.join("2"), "codewright/back", None)
        .unwrap();
    std::fs::remove_dir_all(back.path.join("README.md")).unwrap();
    std::fs::write(back.path.join("README.md"), "# App again\n").unwrap();
    repo.commit_all(&back.path, "back").unwrap();
    repo.plan_merge(&back, MergeMode::Auto)
        .and_then(|plan| repo.merge(&plan))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("README.md")).unwrap(),
        "# App again\n"
    );
}

#[test]
fn a_merge_that_fails_keeps_what_the_user_staged_and_a_checkout_without_modes_is_put_back() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/fix", None)
        .unwrap();
    let merged_app = "def add(a, b):\n    return a + b\n";
    std::fs::write(task.path.join("app.py"), merged_app).unwrap();
    repo.commit_all(&task.path, "fix").unwrap();
    let plan = repo.plan_merge(&task, MergeMode::Auto).unwrap();

    // After the plan, the user changes app.py and stages it: git refuses the fast-forward, and
    // what the user staged stays staged (the repair puts back only what it puts back).
    std::fs::write(w.repo_dir.join("app.py"), "the user's\n").unwrap();
    git(&w.repo_dir, &["add", "app.py"]);
    let err = repo.merge(&plan).unwrap_err();
    assert!(!err.to_string().is_empty());
    assert_eq!(
        git(&w.repo_dir, &["diff", "--cached", "--name-only"]),
        "app.py"
    );
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        "the user's\n"
    );
    git(&w.repo_dir, &["reset", "-q", "--hard"]);
    // …nor a removal the user staged (`git rm`): git refuses, and the file stays removed.
    git(&w.repo_dir, &["rm", "-q", "app.py"]);
    assert!(repo.merge(&plan).is_err());
    assert!(!w.repo_dir.join("app.py").exists());
    assert_eq!(
        git(&w.repo_dir, &["diff", "--cached", "--name-only"]),
        "app.py"
    );
    git(&w.repo_dir, &["reset", "-q", "--hard"]);

    // A checkout on a file system without modes (`core.fileMode` false, every file shows as
    // executable): a merged file found there is still known as the merge's, and put back.
    git(&w.repo_dir, &["config", "core.fileMode", "false"]);
    let began = SystemTime::now();
    std::fs::write(w.repo_dir.join("app.py"), merged_app).unwrap();
    std::fs::set_permissions(
        w.repo_dir.join("app.py"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let repaired = repo.repair_merge(&plan, began).unwrap();
    assert_eq!(repaired, MergeRepair::Undone { kept: Vec::new() });
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
}

#[test]
fn a_folder_commit_names_its_own_branch_and_can_be_a_branchs_first() {
    let w = World::new();
    let repo = w.repo();
    // A project folder that is itself a linked worktree: its branch, not the main checkout's.
    let linked = w.trees.join("linked");
    git(
        &w.repo_dir,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    assert_eq!(repo.branch_in(&linked).unwrap().as_deref(), Some("side"));
    assert_eq!(repo.current_branch().unwrap().as_deref(), Some("main"));
    std::fs::write(linked.join("app.py"), "side\n").unwrap();
    repo.commit_files(&linked, &["app.py".to_string()], "on side")
        .unwrap()
        .expect("a commit");
    assert_eq!(
        git(&linked, &["log", "-1", "--format=%s", "side"]),
        "on side"
    );
    assert_eq!(
        git(&w.repo_dir, &["log", "-1", "--format=%s", "main"]),
        "first"
    );

    // A repository with no commit yet: the task's files are its first.
    let fresh = w.trees.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "-q", "-b", "trunk"]);
    std::fs::write(fresh.join("a.txt"), "a\n").unwrap();
    std::fs::write(fresh.join("mine.txt"), "the user's\n").unwrap();
    let fresh_repo = Repo::discover(&fresh).unwrap();
    let files = ["a.txt".to_string(), "never.txt".to_string()];
    let commit = fresh_repo
        .commit_files(&fresh, &files, "first of trunk")
        .unwrap()
        .expect("a commit");
    assert_eq!(git(&fresh, &["rev-parse", "trunk"]), commit);
    assert_eq!(git(&fresh, &["ls-tree", "--name-only", "HEAD"]), "a.txt");
    assert_eq!(git(&fresh, &["status", "--porcelain"]), "?? mine.txt");
    // Nothing but files that never were: no commit.
    let empty = w.trees.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    let empty_repo = Repo::discover(&empty).unwrap();
    assert_eq!(
        empty_repo
            .commit_files(&empty, &["never.txt".to_string()], "x")
            .unwrap(),
        None
    );
}

#[test]
fn a_folder_tasks_files_are_committed_and_nothing_else() {
    let w = World::new();
    let repo = w.repo();
    let dir = &w.repo_dir;
    std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "more"]);
    // The user's own work: one change staged, one not.
    std::fs::write(dir.join("README.md"), "# App, staged\n").unwrap();
    git(dir, &["add", "README.md"]);
    std::fs::write(dir.join(".gitignore"), "*.log\n*.tmp\n").unwrap();
    // The task's: a change, a new file in a new folder, a removal, an ignored file.
    std::fs::write(dir.join("app.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/new.txt"), "new\n").unwrap();
    std::fs::remove_file(dir.join("gone.txt")).unwrap();
    std::fs::write(dir.join("run.log"), "log\n").unwrap();
    let files: Vec<String> = ["app.py", "notes/new.txt", "gone.txt", "run.log"]
        .map(String::from)
        .to_vec();
    let before = git(dir, &["rev-parse", "HEAD"]);

    let err = repo.commit_files(dir, &files, "  ").unwrap_err();
    assert!(err.to_string().contains("message"), "{err}");
    // Another git holding the folder's index: nothing is committed (the index takes the files
    // before the branch moves, so no commit is ever left that the index would undo).
    let lock = dir.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let err = repo
        .commit_files(dir, &files, "The task's work")
        .unwrap_err();
    assert!(err.to_string().contains("nothing was committed"), "{err}");
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(git(dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(dir, &["diff", "--cached", "--name-only"]), "README.md");
    // The user had staged a version of one of the task's files, and the branch is held by
    // another git (its ref locked) as the commit moves it: nothing is committed, and the index
    // is as it was — the user's version staged still, the task's new file not in it.
    let task_version = std::fs::read(dir.join("app.py")).unwrap();
    std::fs::write(dir.join("app.py"), "staged by the user\n").unwrap();
    git(dir, &["add", "app.py"]);
    std::fs::write(dir.join("app.py"), &task_version).unwrap();
    let ref_lock = dir.join(".git/refs/heads/main.lock");
    std::fs::write(&ref_lock, "").unwrap();
    let err = repo
        .commit_files(dir, &files, "The task's work")
        .unwrap_err();
    assert!(err.to_string().contains("nothing was committed"), "{err}");
    std::fs::remove_file(&ref_lock).unwrap();
    assert_eq!(git(dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(dir, &["show", ":app.py"]), "staged by the user");
    assert_eq!(
        git(dir, &["diff", "--cached", "--name-only"]),
        "README.md\napp.py"
    );
    assert_eq!(
        git(dir, &["ls-files", "notes"]),
        "",
        "the task's new file was left staged"
    );
    let commit = repo
        .commit_files(dir, &files, "The task's work")
        .unwrap()
        .expect("a commit");
    assert_eq!(git(dir, &["rev-parse", "HEAD"]), commit);
    assert_eq!(git(dir, &["rev-parse", "HEAD^"]), before);
    assert_eq!(
        git(dir, &["symbolic-ref", "--short", "HEAD"]),
        "main",
        "on the branch"
    );
    let changed = git(
        dir,
        &["diff-tree", "--no-commit-id", "--name-status", "-r", "HEAD"],
    );
    assert_eq!(
        changed, "M\tapp.py\nD\tgone.txt\nA\tnotes/new.txt",
        "{changed}"
    );
    // The user's work is as it was: staged still staged, the other not.
    assert_eq!(git(dir, &["diff", "--cached", "--name-only"]), "README.md");
    assert_eq!(git(dir, &["diff", "--name-only"]), ".gitignore");
    assert_eq!(
        git(dir, &["ls-files", "--others", "--exclude-standard"]),
        "",
        "nothing of the task's left out but the ignored log"
    );
    // Committed already: nothing more; git says so of each file but the ignored one.
    assert_eq!(repo.commit_files(dir, &files, "again").unwrap(), None);
    let left = repo.not_committed(dir, &files, None).unwrap();
    assert_eq!(left.open, Vec::<String>::new());
    assert_eq!(left.ignored, ["run.log"]);
    // (gone.txt's removal is committed, but a file gone from both is not known to have been…)
    assert_eq!(left.committed, ["app.py", "notes/new.txt"]);
    // … unless a commit made since the work began removed it.
    let began = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 60;
    let left = repo.not_committed(dir, &files, Some(began)).unwrap();
    assert_eq!(left.committed, ["app.py", "notes/new.txt", "gone.txt"]);
    let later = repo.not_committed(dir, &files, Some(began + 3600)).unwrap();
    assert_eq!(later.committed, ["app.py", "notes/new.txt"]);
    // Changed again, and read from a folder below the repository's top.
    std::fs::write(dir.join("notes/new.txt"), "newer\n").unwrap();
    std::fs::write(dir.join("notes/draft.txt"), "draft\n").unwrap();
    let below = repo
        .not_committed(
            &dir.join("notes"),
            &["new.txt", "draft.txt", "none.txt"].map(String::from),
            Some(began),
        )
        .unwrap();
    assert_eq!(below.open, ["new.txt", "draft.txt"]);
    assert!(below.committed.is_empty() && below.ignored.is_empty());
    assert_eq!(
        repo.not_committed(dir, &[], Some(began)).unwrap(),
        Default::default()
    );
    std::fs::remove_file(dir.join("notes/draft.txt")).unwrap();
    git(dir, &["checkout", "-q", "--", "notes/new.txt"]);
    // A removal committed, read from below the top: its name is found under the folder.
    std::fs::write(dir.join("notes/old.txt"), "old\n").unwrap();
    git(dir, &["add", "notes/old.txt"]);
    git(dir, &["commit", "-q", "-m", "old"]);
    git(dir, &["rm", "-q", "notes/old.txt"]);
    git(dir, &["commit", "-q", "-m", "no old"]);
    let below = repo
        .not_committed(&dir.join("notes"), &["old.txt".to_string()], Some(began))
        .unwrap();
    assert_eq!(below.committed, ["old.txt"]);
    git(dir, &["reset", "-q", "--hard", "HEAD~2"]);

    // A folder whose HEAD is detached is refused.
    git(dir, &["checkout", "-q", "--detach"]);
    std::fs::write(dir.join("app.py"), "changed\n").unwrap();
    let err = repo.commit_files(dir, &files, "x").unwrap_err();
    assert!(err.to_string().contains("not on a branch"), "{err}");
}

#[test]
fn a_folder_commit_that_fails_below_the_repositorys_top_puts_the_index_back() {
    let w = World::new();
    let repo = w.repo();
    let dir = &w.repo_dir;
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/g.txt"), "one\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "sub"]);
    let before = git(dir, &["rev-parse", "HEAD"]);
    // The user staged a version of g.txt; the task changed it again and made a new file.
    std::fs::write(dir.join("sub/g.txt"), "staged by the user\n").unwrap();
    git(dir, &["add", "sub/g.txt"]);
    std::fs::write(dir.join("sub/g.txt"), "the task's\n").unwrap();
    std::fs::write(dir.join("sub/new.txt"), "new\n").unwrap();
    let files = ["g.txt", "new.txt"].map(String::from);
    let lock = dir.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    repo.commit_files(&dir.join("sub"), &files, "The task's work")
        .unwrap_err();
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(git(dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(dir, &["show", ":sub/g.txt"]), "staged by the user");
    assert_eq!(
        git(dir, &["ls-files", "--cached"]),
        "README.md\napp.py\nsub/g.txt",
        "the index holds what it held, where it held it"
    );
    // And committed once the branch is free.
    repo.commit_files(&dir.join("sub"), &files, "The task's work")
        .unwrap()
        .expect("a commit");
    assert_eq!(
        git(dir, &["show", "--name-only", "--format=", "HEAD"]),
        "sub/g.txt\nsub/new.txt"
    );
}

#[test]
fn a_base_checked_out_nowhere_is_merged_without_a_checkout() {
    let w = World::new();
    git(&w.repo_dir, &["branch", "release"]);
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/t", Some("release"))
        .unwrap();
    std::fs::write(task.path.join("notes.txt"), "notes\n").unwrap();
    repo.commit_all(&task.path, "notes").unwrap();
    // release moves on meanwhile (a commit on main merged into it by hand).
    std::fs::write(w.repo_dir.join("README.md"), "# App\n\nMore.\n").unwrap();
    git(&w.repo_dir, &["commit", "-qam", "readme"]);
    let main_tip = git(&w.repo_dir, &["rev-parse", "HEAD"]);
    git(
        &w.repo_dir,
        &["update-ref", "refs/heads/release", &main_tip],
    );

    let merged = repo
        .plan_merge(&task, MergeMode::Auto)
        .and_then(|plan| repo.merge(&plan))
        .unwrap();
    assert!(!merged.fast_forward);
    let files = git(&w.repo_dir, &["ls-tree", "--name-only", "release"]);
    assert!(
        files.contains("notes.txt") && files.contains("README.md"),
        "{files}"
    );
    assert_eq!(
        git(&w.repo_dir, &["rev-parse", "HEAD"]),
        main_tip,
        "main did not move"
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
}

#[test]
fn discarded_work_is_kept_whole_and_restored_as_it_was() {
    let w = World::new();
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("7"), "codewright/seven", None)
        .unwrap();
    std::fs::write(task.path.join("app.py"), "committed\n").unwrap();
    repo.commit_all(&task.path, "committed part").unwrap();
    std::fs::write(task.path.join("app.py"), "committed\nand not\n").unwrap();
    std::fs::write(task.path.join("brand new.txt"), "new\n").unwrap();
    std::fs::remove_file(task.path.join("README.md")).unwrap();

    let archive = "refs/codewright/archive/7";
    let kept = repo.keep(&task, archive).unwrap();
    repo.remove_worktree(&task.path, &task.branch, &kept)
        .unwrap();
    assert!(!task.path.exists());
    assert!(!git(&w.repo_dir, &["branch", "--list"]).contains("seven"));
    assert_eq!(git(&w.repo_dir, &["fsck", "--no-progress"]), "");

    let back = repo
        .bring_back(archive, &task.path, &task.branch, "main")
        .unwrap();
    repo.forget(archive).unwrap();
    assert_eq!(back.branch, "codewright/seven");
    assert_eq!(
        std::fs::read_to_string(back.path.join("app.py")).unwrap(),
        "committed\nand not\n"
    );
    assert!(back.path.join("brand new.txt").exists());
    assert!(!back.path.join("README.md").exists());
    assert_eq!(
        git(&back.path, &["log", "-1", "--format=%s"]),
        "committed part"
    );
    let status = git(&back.path, &["status", "--porcelain"]);
    assert!(
        status.contains("app.py") && status.contains("?? \"brand new.txt\""),
        "{status}"
    );
    assert!(
        git(&w.repo_dir, &["for-each-ref", "refs/codewright"]).is_empty(),
        "the archive ref is gone once restored"
    );
}

#[test]
fn no_hook_or_filter_of_the_repository_runs() {
    let w = World::new();
    let hooks = w.repo_dir.join(".git/hooks");
    let ran = w.repo_dir.join("../hook-ran");
    for hook in [
        "post-checkout",
        "pre-commit",
        "post-commit",
        "commit-msg",
        "post-merge",
    ] {
        let path = hooks.join(hook);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho {hook} >> '{}'\n", ran.display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    // A filter the repository's configuration names runs on every `git add`.
    git(
        &w.repo_dir,
        &[
            "config",
            "filter.evil.clean",
            &format!("sh -c 'echo filter >> \"{}\"; cat'", ran.display()),
        ],
    );
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/h", None)
        .unwrap();
    std::fs::write(task.path.join(".gitattributes"), "* filter=evil\n").unwrap();
    std::fs::write(task.path.join("x.txt"), "x\n").unwrap();
    repo.changes(&task).unwrap();
    repo.commit_all(&task.path, "x").unwrap();
    repo.plan_merge(&task, MergeMode::MergeCommit)
        .and_then(|plan| repo.merge(&plan))
        .unwrap();
    assert!(
        !ran.exists(),
        "a hook ran: {:?}",
        std::fs::read_to_string(&ran)
    );
}

#[test]
fn bad_input_says_what_to_do() {
    let w = World::new();
    let plain = w.repo_dir.parent().unwrap().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = Repo::discover(&plain).unwrap_err();
    assert!(matches!(err, GitError::NotARepository(_)), "{err:?}");
    let repo = w.repo();
    let err = repo
        .add_worktree(&w.trees.join("1"), "codewright/x", Some("no-such-branch"))
        .unwrap_err();
    assert!(err.to_string().contains("no-such-branch"), "{err}");
    let err = repo
        .add_worktree(
            &w.trees.join("1"),
            "codewright/x",
            Some("--upload-pack=evil"),
        )
        .unwrap_err();
    assert!(matches!(err, GitError::UnknownRef(_)), "{err:?}");
    assert!(!w.trees.join("1").exists(), "nothing was made");

    let empty = w.repo_dir.parent().unwrap().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    let err = Repo::discover(&empty)
        .unwrap()
        .add_worktree(&w.trees.join("2"), "codewright/x", None)
        .unwrap_err();
    assert!(matches!(err, GitError::NoCommit), "{err:?}");
}

#[test]
fn a_file_or_one_hunk_of_it_is_put_back_as_it_was() {
    let w = World::new();
    let repo = w.repo();
    let long: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    std::fs::write(w.repo_dir.join("long.txt"), &long).unwrap();
    git(&w.repo_dir, &["add", "-A"]);
    git(&w.repo_dir, &["commit", "-q", "-m", "long"]);
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/r", None)
        .unwrap();
    let edited = long
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line twenty-five\n");
    std::fs::write(task.path.join("long.txt"), &edited).unwrap();
    std::fs::write(task.path.join("new.txt"), "new\n").unwrap();
    std::fs::remove_file(task.path.join("README.md")).unwrap();

    let changes = repo.changes(&task).unwrap();
    let file = |name: &str| {
        changes
            .files
            .iter()
            .find(|f| f.path == name)
            .unwrap()
            .clone()
    };
    let long_file = file("long.txt");
    assert_eq!(long_file.hunks.len(), 2, "{long_file:?}");
    assert!(file("new.txt").created && file("README.md").deleted);

    // The second hunk only: the first stays.
    let text = std::fs::read_to_string(task.path.join("long.txt")).unwrap();
    let less = codewright_git::unapplied(&text, &long_file.hunks[1]).unwrap();
    assert_eq!(less, long.replace("line 2\n", "line two\n"));
    // The same hunk again: it is no longer there, and that is said.
    let err = codewright_git::unapplied(&less, &long_file.hunks[1]).unwrap_err();
    assert!(err.contains("has changed since"), "{err}");

    let never = |_: &str| -> Result<(), String> { panic!("nothing renamed") };
    for name in ["long.txt", "README.md"] {
        repo.revert(&task, &file(name), never).unwrap();
    }
    // A new file is the caller's to remove (along its path, without following a link).
    let err = repo.revert(&task, &file("new.txt"), never).unwrap_err();
    assert!(
        err.to_string().contains("new in the task's change"),
        "{err}"
    );
    std::fs::remove_file(task.path.join("new.txt")).unwrap();
    assert!(repo.changes(&task).unwrap().files.is_empty());
    assert!(!task.path.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(task.path.join("long.txt")).unwrap(),
        long
    );

    // A path from outside the worktree is refused.
    let mut outside = file("long.txt");
    outside.path = "../escape.txt".into();
    assert!(repo.revert(&task, &outside, never).is_err());
}

#[test]
fn ignored_files_the_worktreeinclude_lists_are_copied_and_nothing_else() {
    let w = World::new();
    std::fs::write(w.repo_dir.join(".gitignore"), ".env\nlocal/\nbuild/\n").unwrap();
    // (Saved with a byte-order mark, as some editors do.)
    std::fs::write(
        w.repo_dir.join(".worktreeinclude"),
        "\u{feff}.env\nlocal/*.json\n",
    )
    .unwrap();
    git(&w.repo_dir, &["add", "-A"]);
    git(&w.repo_dir, &["commit", "-q", "-m", "ignore"]);
    // A branch that tracks `.env` as a link to a file outside.
    let outside = tempfile::tempdir().unwrap();
    let theirs = outside.path().join("bashrc");
    std::fs::write(&theirs, "mine\n").unwrap();
    git(&w.repo_dir, &["checkout", "-q", "-b", "linked"]);
    std::os::unix::fs::symlink(&theirs, w.repo_dir.join(".env")).unwrap();
    git(&w.repo_dir, &["add", "-f", ".env"]);
    git(&w.repo_dir, &["commit", "-q", "-m", "link"]);
    git(&w.repo_dir, &["checkout", "-q", "-"]);
    std::fs::write(w.repo_dir.join(".env"), "KEY=1\n").unwrap();
    std::fs::create_dir_all(w.repo_dir.join("local")).unwrap();
    std::fs::write(w.repo_dir.join("local/settings.json"), "{}\n").unwrap();
    std::fs::write(w.repo_dir.join("local/notes.txt"), "not listed\n").unwrap();
    std::fs::create_dir_all(w.repo_dir.join("build")).unwrap();
    std::fs::write(w.repo_dir.join("build/out.o"), "binary\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/hostname", w.repo_dir.join("local/link.json")).unwrap();

    let task = w
        .repo()
        .add_worktree(&w.trees.join("1"), "codewright/inc", None)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(task.path.join(".env")).unwrap(),
        "KEY=1\n"
    );
    assert!(task.path.join("local/settings.json").exists());
    assert!(!task.path.join("local/notes.txt").exists(), "not listed");
    assert!(!task.path.join("build/out.o").exists(), "not listed");
    assert!(
        !task.path.join("local/link.json").exists(),
        "a link is never followed"
    );
    // Copied, not part of the task's change: git ignores them there too.
    assert!(w.repo().changes(&task).unwrap().files.is_empty());

    // A worktree of the branch with the link: the main checkout's `.env` is not written
    // through it (the path is the branch's own).
    let linked = w
        .repo()
        .add_worktree(&w.trees.join("2"), "codewright/linked", Some("linked"))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "mine\n");
    assert!(linked
        .path
        .join(".env")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(linked.path.join("local/settings.json").exists());
}

#[test]
fn where_a_branch_stands_counts_its_change_its_commits_and_what_would_conflict() {
    use codewright_git::Standing;
    let w = World::new();
    let repo = w.repo();
    let tree = repo
        .add_worktree(&w.trees.join("1/1"), "codewright/fix", None)
        .unwrap();
    assert_eq!(repo.standing(&tree).unwrap(), Standing::default());

    // A change not committed, and a new file.
    std::fs::write(
        tree.path.join("app.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(tree.path.join("notes.txt"), "one\ntwo\n").unwrap();
    let standing = repo.standing(&tree).unwrap();
    assert_eq!(
        (
            standing.files,
            standing.added,
            standing.removed,
            standing.uncommitted
        ),
        (2, 3, 1, 2),
        "{standing:?}"
    );
    assert_eq!((standing.ahead, standing.behind), (0, 0));

    // Committed: the same change, none of it uncommitted, one commit ahead.
    git(&tree.path, &["add", "-A"]);
    git(&tree.path, &["commit", "-q", "-m", "fix"]);
    let standing = repo.standing(&tree).unwrap();
    assert_eq!(
        (standing.files, standing.uncommitted, standing.ahead),
        (2, 0, 1)
    );
    assert!(standing.conflicts.is_empty());

    // The base moves on, changing the same line: one behind, and a merge would conflict there.
    std::fs::write(
        w.repo_dir.join("app.py"),
        "def add(a, b):\n    return b + a\n",
    )
    .unwrap();
    git(&w.repo_dir, &["commit", "-q", "-am", "the other way"]);
    let standing = repo.standing(&tree).unwrap();
    assert_eq!((standing.ahead, standing.behind), (1, 1), "{standing:?}");
    assert_eq!(standing.conflicts, vec!["app.py".to_string()]);
    // Measured from where the branch left: the base's own change is not the task's.
    assert_eq!(
        (standing.files, standing.added, standing.removed),
        (2, 3, 1)
    );
    // Nothing was changed by looking: the worktree's index and the base are as they were.
    assert_eq!(git(&tree.path, &["status", "--porcelain"]), "");
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
}

#[test]
fn a_merge_cut_short_in_a_sparse_checkout_leaves_what_it_does_not_check_out_away() {
    let w = World::new();
    let repo = w.repo();
    // The user's checkout holds app.py only; README.md is in the index, not on disk.
    git(
        &w.repo_dir,
        &["sparse-checkout", "set", "--no-cone", "/app.py"],
    );
    assert!(!w.repo_dir.join("README.md").exists());
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/docs", None)
        .unwrap();
    // (A new worktree takes the checkout's sparse patterns; the task's holds every file.)
    git(&task.path, &["sparse-checkout", "disable"]);
    std::fs::write(task.path.join("README.md"), "# App, told\n").unwrap();
    std::fs::write(task.path.join("app.py"), "print('told')\n").unwrap();
    repo.commit_all(&task.path, "docs").unwrap();
    let plan = repo.plan_merge(&task, MergeMode::Auto).unwrap();
    assert_eq!(
        git(
            &w.repo_dir,
            &["diff", "--name-only", &plan.before, &plan.commit]
        ),
        "README.md\napp.py",
        "the merge changes both"
    );
    let before = git(&w.repo_dir, &["rev-parse", "HEAD"]);
    let original = std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap();

    // Killed part way: app.py half written, README.md (not checked out) untouched.
    let began = SystemTime::now();
    std::fs::write(w.repo_dir.join("app.py"), "print('to").unwrap();
    std::fs::write(w.repo_dir.join(".git/index.lock"), "").unwrap();
    let repaired = repo.repair_merge(&plan, began).unwrap();
    assert_eq!(repaired, MergeRepair::Undone { kept: Vec::new() });
    assert_eq!(git(&w.repo_dir, &["rev-parse", "HEAD"]), before);
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        original
    );
    assert!(
        !w.repo_dir.join("README.md").exists(),
        "the repair checked out a file the sparse checkout leaves out"
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");

    // Killed later: the index already had the merged README.md (left out still).
    let merged_blob = git(
        &w.repo_dir,
        &["rev-parse", &format!("{}:README.md", plan.commit)],
    );
    git(
        &w.repo_dir,
        &[
            "update-index",
            "--cacheinfo",
            &format!("100644,{merged_blob},README.md"),
        ],
    );
    git(
        &w.repo_dir,
        &["update-index", "--skip-worktree", "README.md"],
    );
    let began = SystemTime::now();
    std::fs::write(w.repo_dir.join(".git/index.lock"), "").unwrap();
    let repaired = repo.repair_merge(&plan, began).unwrap();
    assert_eq!(repaired, MergeRepair::Undone { kept: Vec::new() });
    assert!(
        !w.repo_dir.join("README.md").exists(),
        "the repair checked out a file the sparse checkout leaves out"
    );
    assert_eq!(
        git(&w.repo_dir, &["ls-files", "-t", "README.md"]),
        "S README.md"
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
    assert_eq!(git(&w.repo_dir, &["diff", "--cached", "--name-only"]), "");

    // And merged whole, the sparse checkout stays sparse.
    repo.merge(&plan).unwrap();
    assert!(!w.repo_dir.join("README.md").exists());
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        "print('told')\n"
    );
}

#[test]
fn a_file_changed_long_after_a_merge_was_cut_short_is_the_users() {
    let w = World::new();
    let repo = w.repo();
    let task = repo
        .add_worktree(&w.trees.join("1"), "codewright/new", None)
        .unwrap();
    std::fs::write(task.path.join("new.txt"), "the task's\n").unwrap();
    let merged_app = "print('the task')\n";
    std::fs::write(task.path.join("app.py"), merged_app).unwrap();
    repo.commit_all(&task.path, "new").unwrap();
    let plan = repo.plan_merge(&task, MergeMode::Auto).unwrap();
    let original = std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap();

    // What a merge cut short leaves — new.txt made and not yet written, app.py half written —
    // but changed an hour after the merge began: the repair runs at the next start, and these
    // are the user's since.
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::write(w.repo_dir.join("new.txt"), "").unwrap();
    std::fs::write(w.repo_dir.join("app.py"), &merged_app[..8]).unwrap();
    let repaired = repo.repair_merge(&plan, an_hour_ago).unwrap();
    let MergeRepair::Undone { mut kept } = repaired else {
        panic!("{repaired:?}")
    };
    kept.sort();
    assert_eq!(kept, ["app.py", "new.txt"]);
    assert_eq!(std::fs::read(w.repo_dir.join("new.txt")).unwrap(), b"");
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        &merged_app[..8]
    );

    // The same, changed in the merge's time: git's, put back.
    let repaired = repo.repair_merge(&plan, SystemTime::now()).unwrap();
    assert_eq!(repaired, MergeRepair::Undone { kept: Vec::new() });
    assert!(!w.repo_dir.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.repo_dir.join("app.py")).unwrap(),
        original
    );
    assert_eq!(git(&w.repo_dir, &["status", "--porcelain"]), "");
}
