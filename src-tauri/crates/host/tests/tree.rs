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
