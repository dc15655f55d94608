//! The project tree against a real git repository: folders listed one at a time without what
//! .gitignore ignores, git marks (also for a project that is a folder inside its repository, and
//! deleted files), and a watcher that reports a changed folder.

use codewright_host::tree::{self, GitMark, GitStatus, TreeWatcher};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git is installed (scripts/setup)")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn marks(folder: &tree::Folder) -> Vec<(String, Option<GitMark>, bool)> {
    folder
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.git, e.changed_inside))
        .collect()
}

#[test]
fn folders_carry_their_git_marks_and_leave_out_what_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write(&repo.join("app/src/main.rs"), "fn main() {}\n");
    write(&repo.join("app/src/gone.rs"), "\n");
    write(&repo.join("app/README.md"), "hi\n");
    write(&repo.join("app/.gitignore"), "target/\n");
    git(repo, &["init", "-q"]);
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "one"]);
    // The project is the folder `app` of the repository.
    let root = repo.join("app");
    write(&root.join("src/main.rs"), "fn main() { println!(); }\n");
    std::fs::remove_file(root.join("src/gone.rs")).unwrap();
    write(&root.join("src/new.rs"), "\n");
    write(&root.join("notes/a.md"), "\n");
    write(&root.join("target/debug/big"), "\n");
    write(&root.join("staged.txt"), "\n");
    git(&root, &["add", "staged.txt"]);

    let status = GitStatus::read(&root).expect("a repository");
    let top = tree::list_folder(&root, "", Some(&status)).unwrap();
    assert_eq!(
        marks(&top),
        vec![
            ("notes".into(), Some(GitMark::Untracked), false),
            ("src".into(), None, true),
            (".gitignore".into(), None, false),
            ("README.md".into(), None, false),
            ("staged.txt".into(), Some(GitMark::Added), false),
        ],
        "target/ is ignored; folders first"
    );
    let src = tree::list_folder(&root, "src", Some(&status)).unwrap();
    assert_eq!(
        marks(&src),
        vec![
            ("gone.rs".into(), Some(GitMark::Deleted), false),
            ("main.rs".into(), Some(GitMark::Modified), false),
            ("new.rs".into(), Some(GitMark::Untracked), false),
        ]
    );
    assert_eq!(src.entries[1].path, "src/main.rs");
    let notes = tree::list_folder(&root, "notes", Some(&status)).unwrap();
    assert_eq!(
        notes.entries[0].git,
        Some(GitMark::Untracked),
        "inside an untracked folder"
    );
    for outside in ["..", "../app", "/etc", "src/../.."] {
        assert!(
            tree::list_folder(&root, outside, None).is_err(),
            "{outside}"
        );
    }
    // Not a repository: no marks, no error.
    let plain = tempfile::tempdir().unwrap();
    assert!(GitStatus::read(plain.path()).is_none());
}

#[test]
fn a_watched_folder_reports_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("other")).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut watcher = TreeWatcher::new(&root, move |folders| {
        let _ = tx.send(folders);
    })
    .unwrap();
    // Batches of changed folders until one holds `folder`; all of them.
    let until = |folder: &str| {
        let mut seen = Vec::new();
        while !seen.iter().any(|f: &String| f == folder) {
            let batch: Vec<String> = rx
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no change to {folder:?} reported; saw {seen:?}"));
            seen.extend(batch);
        }
        seen
    };
    watcher.watch_only(&["".into(), "src".into()]);
    write(&root.join("src/lib.rs"), "\n");
    until("src");
    // A folder no longer open in the tree is not watched.
    watcher.watch_only(&["".into()]);
    write(&root.join("src/more.rs"), "\n");
    write(&root.join("other/x"), "\n");
    write(&root.join("top.txt"), "\n");
    let seen = until("");
    assert!(
        !seen.iter().any(|f| f == "other" || f == "src/more.rs"),
        "{seen:?}"
    );
}

/// A commit in a linked worktree (whose `.git` is a file naming git's folder for it elsewhere)
/// changes every mark: it is reported though no open folder changed.
#[test]
fn a_commit_in_a_linked_worktree_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write(&repo.join("a.txt"), "one\n");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    let linked = dir.path().join("linked");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    write(&linked.join("b.txt"), "two\n");
    git(&linked, &["add", "b.txt"]);
    let root = linked.canonicalize().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut watcher = TreeWatcher::new(&root, move |folders| {
        let _ = tx.send(folders);
    })
    .unwrap();
    watcher.watch_only(&[]);
    git(&linked, &["commit", "-qm", "two"]);
    let batch = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the commit was not reported");
    assert!(batch.iter().any(|f| f.is_empty()), "{batch:?}");
}

/// A repository that arrives with its `.git` folder (an archive), or whose config a model wrote:
/// an fsmonitor hook, a clean filter on a file git must rehash, a post-index-change hook, an
/// included config naming a filter with a subsection in capitals, a pager. Codewright's own
/// `git status` runs none of them, and still reads the status. (The same repository does run
/// them under a plain `git status`: the traps are armed.)
#[test]
fn codewright_s_own_git_runs_no_program_the_repository_configured() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let marker = |name: &str| dir.path().join(format!("ran-{name}"));
    write(&repo.join("a.txt"), "one\n");
    write(&repo.join(".gitattributes"), "*.txt filter=Evil\n");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    let touch = |name: &str| format!("touch {}; cat", marker(name).display());
    write(
        &repo.join("evil.cfg"),
        &format!(
            "[filter \"Evil\"]\n\tclean = {}\n\tsmudge = cat\n",
            touch("filter")
        ),
    );
    git(&repo, &["config", "include.path", "../evil.cfg"]);
    git(&repo, &["config", "core.fsmonitor", &touch("fsmonitor")]);
    git(&repo, &["config", "core.pager", &touch("pager")]);
    write(
        &repo.join(".git/hooks/post-index-change"),
        &format!("#!/bin/sh\n{}\n", touch("hook")),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.join(".git/hooks/post-index-change"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let names = ["filter", "fsmonitor", "hook", "pager"];
    // The file changed with the same size and time stamp as the index has: git must rehash it
    // (through its clean filter) to know.
    let racy = || {
        let a = repo.join("a.txt");
        let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
        std::fs::write(&a, "two\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    };
    racy();

    let status = GitStatus::read(&repo).expect("a repository");
    for name in names {
        assert!(!marker(name).exists(), "Codewright's git ran the {name}");
    }
    let top = tree::list_folder(&repo, "", Some(&status)).unwrap();
    assert!(top.entries.iter().any(|e| e.name == "a.txt"));

    // Armed: a plain `git status` (as the user's terminal runs it) runs the fsmonitor, the
    // filter and the hook.
    let plain = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .arg("status")
        .output()
        .unwrap();
    assert!(plain.status.success());
    for name in ["filter", "fsmonitor"] {
        assert!(marker(name).exists(), "the {name} trap is not armed");
    }
}

/// A repository config that includes a named pipe: git would wait on it forever. Codewright's
/// git gives up after its timeout and shows no marks, and the Files tab goes on.
#[test]
fn a_config_that_would_hold_git_forever_is_given_up_on() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write(&repo.join("a.txt"), "one\n");
    git(&repo, &["init", "-q"]);
    let fifo = repo.join(".git/pipe.cfg");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o644) }, 0);
    std::fs::OpenOptions::new()
        .append(true)
        .open(repo.join(".git/config"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"[include]\n\tpath = pipe.cfg\n"))
        .unwrap();
    let started = std::time::Instant::now();
    assert!(GitStatus::read(&repo).is_none());
    assert!(started.elapsed() < codewright_git::safe::TIMEOUT * 3);
    assert!(tree::list_folder(&repo, "", None).is_ok());
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}
