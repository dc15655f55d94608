//! A task in a git worktree of its own, through the host (the one door every front end uses):
//! its run writes in the worktree and nowhere else, its change is reviewed, committed, merged,
//! discarded and restored — real git, a model in process.

use codewright_agent::AgentConfig;
use codewright_host::{Host, RunOptions};
use codewright_llm::fake::FakeModel;
use codewright_protocol::{
    AgentEvent, ErrorKind, Message, PermissionMode, ProjectId, RunOutcome, TaskId, WorktreeState,
};
use codewright_store::{ProviderRow, Store};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

struct World {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    host: Host,
    project: ProjectId,
    store: Arc<Mutex<Store>>,
    fake: FakeModel,
}

/// A project that is a git repository on `main`, a host on a fresh data folder whose model is a
/// fake in process.
fn world() -> World {
    for (key, value) in [
        ("GIT_AUTHOR_NAME", "Test"),
        ("GIT_AUTHOR_EMAIL", "test@example.com"),
        ("GIT_COMMITTER_NAME", "Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.com"),
        ("CODEWRIGHT_WORKTREE_TEST_KEY", "k"),
    ] {
        std::env::set_var(key, value);
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("shop");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("app.py"), "print('hello')\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let home = dir.path().join("data");
    let store = Store::open_in(&home).unwrap();
    let project = store.add_project(&repo, None).unwrap().id;
    store
        .save_provider(&ProviderRow {
            name: "local".into(),
            protocol: "openai".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key_env: Some("CODEWRIGHT_WORKTREE_TEST_KEY".into()),
            first_byte_timeout_ms: None,
            idle_timeout_ms: None,
        })
        .unwrap();
    store
        .set_setting("model.main", Some(&json!("m@local")))
        .unwrap();
    let store = Arc::new(Mutex::new(store));
    let fake = FakeModel::new();
    let config = AgentConfig {
        user_home: Some(dir.path().join("user")),
        fake_model: Some(fake.clone()),
        ..AgentConfig::default()
    };
    let host = Host::new(store.clone(), home.clone(), config);
    World {
        _dir: dir,
        repo,
        home,
        host,
        project,
        store,
        fake,
    }
}

impl World {
    /// Runs the task once: the model writes `file` with `text`, then says it is done.
    async fn run_writing(&self, task: TaskId, file: &str, text: &str) {
        self.run_asked(task, None, file, text).await
    }

    /// [`World::run_writing`], sending `message` first.
    async fn run_asked(&self, task: TaskId, message: Option<Message>, file: &str, text: &str) {
        let arguments = json!({"path": file, "content": text});
        self.run_calling(task, message, "write_file", &arguments)
            .await;
    }

    /// Runs the task once (sending `message` first, if any), in yolo mode: the model calls
    /// `tool` with `arguments`, then says it is done. Returns the tools its first request
    /// offered and what the call answered.
    async fn run_calling(
        &self,
        task: TaskId,
        message: Option<Message>,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> (serde_json::Value, String) {
        let mut events = self.host.subscribe(Some(task));
        self.host
            .send(
                task,
                message,
                RunOptions {
                    mode: Some(PermissionMode::Yolo),
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        let first = self.fake.next_request().await;
        let offered = first.body["tools"].clone();
        first.tool_call(0, "call_1", tool, arguments);
        first.finish("tool_calls");
        let second = self.fake.next_request().await;
        let answered = second.last_text();
        second.text("Done.");
        second.finish("stop");
        loop {
            let event = events.recv().await.expect("the run's events ended");
            if let AgentEvent::RunFinished { outcome, .. } = event {
                assert_eq!(outcome, RunOutcome::Done);
                return (offered, answered);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_its_worktree_writes_there_and_its_work_is_reviewed_committed_and_merged() {
    let w = world();
    let task = w
        .host
        .add_task_in_worktree(w.project, None, Some(&Message::user("Add the notes")), None)
        .unwrap();
    let tree = task.worktree.clone().expect("the task has a worktree");
    assert_eq!(tree.branch, "codewright/add-the-notes");
    assert_eq!(tree.base, "main");
    assert!(Path::new(&tree.path).starts_with(w.home.join("worktrees")));
    assert_eq!(
        w.host.task_root(task.id).unwrap(),
        PathBuf::from(&tree.path)
    );

    w.run_writing(task.id, "notes.md", "# Notes\n").await;
    assert!(Path::new(&tree.path).join("notes.md").exists());
    assert!(
        !w.repo.join("notes.md").exists(),
        "the run wrote in the project folder"
    );

    let review = w.host.task_changes(task.id).unwrap();
    let files: Vec<&str> = review
        .changes
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(files, ["notes.md"]);
    assert_eq!(review.status.uncommitted, ["notes.md"]);
    let err = w.host.merge_task(task.id, Default::default()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    assert!(err.message.contains("commit them first"), "{err:?}");

    let committed = w.host.commit_task(task.id, None).unwrap();
    assert!(committed.commit.is_some());
    assert_eq!(
        git(Path::new(&tree.path), &["log", "-1", "--format=%s"]),
        "Add the notes"
    );
    let merged = w.host.merge_task(task.id, Default::default()).unwrap();
    assert!(merged.fast_forward);
    assert_eq!(
        std::fs::read_to_string(w.repo.join("notes.md")).unwrap(),
        "# Notes\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_the_project_folder_is_reviewed_by_what_its_checkpoints_saved() {
    let w = world();
    let task = w.host.add_task(w.project, "Greet").unwrap();
    assert!(w.host.folder_changes(task.id).unwrap().is_empty());
    use std::os::unix::fs::PermissionsExt;
    let app = w.repo.join("app.py");
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The model reads app.py (a file is written only once read), then changes it.
    let mut events = w.host.subscribe(Some(task.id));
    w.host
        .send(
            task.id,
            Some(Message::user("Greet the world")),
            RunOptions {
                mode: Some(PermissionMode::Yolo),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    let calls = [
        ("read_file", json!({"path": "app.py"})),
        (
            "write_file",
            json!({"path": "app.py", "content": "print('hello, world')\n"}),
        ),
    ];
    for (n, (tool, arguments)) in calls.iter().enumerate() {
        let request = w.fake.next_request().await;
        request.tool_call(0, &format!("call_{n}"), tool, arguments);
        request.finish("tool_calls");
    }
    let last = w.fake.next_request().await;
    last.text("Done.");
    last.finish("stop");
    while !matches!(events.recv().await.unwrap(), AgentEvent::RunFinished { .. }) {}
    assert_eq!(
        std::fs::read_to_string(w.repo.join("app.py")).unwrap(),
        "print('hello, world')\n"
    );
    w.run_asked(
        task.id,
        Some(Message::user("And a note")),
        "notes/today.md",
        "greeted\n",
    )
    .await;
    // Changed by someone else: not the task's.
    std::fs::write(w.repo.join("other.txt"), "mine\n").unwrap();

    let files = w.host.folder_changes(task.id).unwrap();
    let listed: Vec<(&str, Option<u64>, Option<u64>, bool)> = files
        .iter()
        .map(|f| (f.path.as_str(), f.added, f.removed, f.created))
        .collect();
    assert_eq!(
        listed,
        [
            ("app.py", Some(1), Some(1), false),
            ("notes/today.md", Some(1), Some(0), true)
        ]
    );
    let patch = codewright_host::folder_changes::patch_of(&files);
    assert!(
        patch.contains("--- a/app.py\n+++ b/app.py\n@@ -1,1 +1,1 @@\n-print('hello')\n+print('hello, world')\n"),
        "{patch}"
    );
    assert!(
        patch.contains("--- /dev/null\n+++ b/notes/today.md\n@@ -0,0 +1,1 @@\n+greeted\n"),
        "{patch}"
    );

    let review = w.host.folder_review(task.id).unwrap();
    assert_eq!(
        review.uncommitted.unwrap(),
        ["app.py", "notes/today.md"],
        "neither is committed yet"
    );

    // Committed from the review: the task's two files and nothing else, on the folder's branch.
    let done = w
        .host
        .commit_task(task.id, Some("Greet the world"))
        .unwrap();
    assert_eq!(done.branch, "main");
    assert_eq!(git(&w.repo, &["rev-parse", "HEAD"]), done.commit.unwrap());
    assert_eq!(
        git(&w.repo, &["show", "--name-only", "--format=", "HEAD"]),
        "app.py\nnotes/today.md"
    );
    assert_eq!(git(&w.repo, &["status", "--porcelain"]), "?? other.txt");
    let again = w.host.commit_task(task.id, None).unwrap();
    assert_eq!(again.commit, None, "nothing more to commit");
    // The review still shows what the task changed, each file now committed.
    let review = w.host.folder_review(task.id).unwrap();
    assert_eq!(review.files.len(), 2);
    assert_eq!(review.uncommitted.unwrap(), Vec::<String>::new());
    assert_eq!(review.committed, ["app.py", "notes/today.md"]);
    let err = w.host.draft_commit_message(task.id).await.unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::BadInput,
        "nothing left to draft from: {err:?}"
    );

    // Reverted from the review: a new file goes; a hunk as it was shown, and a stale one refused.
    w.host
        .revert_change(task.id, "notes/today.md", None)
        .unwrap();
    assert!(!w.repo.join("notes/today.md").exists());
    let stale = codewright_host::worktrees::HunkRef {
        index: 0,
        old_start: 5,
        new_start: 5,
    };
    let err = w
        .host
        .revert_change(task.id, "app.py", Some(stale))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    let shown = codewright_host::worktrees::HunkRef {
        index: 0,
        old_start: 1,
        new_start: 1,
    };
    w.host
        .revert_change(task.id, "app.py", Some(shown))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(w.repo.join("app.py")).unwrap(),
        "print('hello')\n"
    );
    assert!(w.host.folder_changes(task.id).unwrap().is_empty());
    // Each revert is a restore of the task's, naming the file it put back: undone like one.
    let undo = w
        .host
        .checkpoints(task.id)
        .unwrap()
        .into_iter()
        .filter(|c| c.kind == codewright_protocol::CheckpointKind::Restore)
        .max_by_key(|c| c.id)
        .expect("the revert recorded as a restore");
    assert_eq!(undo.reverted.as_deref(), Some("app.py"));
    let undo = undo.id;
    w.host
        .restore_files(task.id, codewright_host::by_hand::Restore::Checkpoint(undo))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(w.repo.join("app.py")).unwrap(),
        "print('hello, world')\n"
    );

    // Removed since: put back whole, with the mode it had before the task.
    std::fs::remove_file(&app).unwrap();
    w.host.revert_change(task.id, "app.py", None).unwrap();
    assert_eq!(std::fs::read_to_string(&app).unwrap(), "print('hello')\n");
    let mode = std::fs::metadata(&app).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(w.host.folder_changes(task.id).unwrap().is_empty());

    // Removed, and the removal committed since the task began: committed, nothing to commit.
    git(&w.repo, &["rm", "-qf", "app.py"]);
    git(&w.repo, &["commit", "-q", "-m", "No app"]);
    let review = w.host.folder_review(task.id).unwrap();
    assert_eq!(review.files.len(), 1);
    assert_eq!(review.uncommitted.unwrap(), Vec::<String>::new());
    assert_eq!(review.committed, ["app.py"]);
    git(&w.repo, &["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(&app, "print('hello')\n").unwrap();

    // A file outside the project folder is never written by a revert, and says so.
    let err = w
        .host
        .revert_change(task.id, "/etc/hostname", None)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadInput, "{err:?}");
    assert!(
        err.message.contains("outside the project folder"),
        "{err:?}"
    );

    // A task in a worktree is read against its base instead.
    let other = w
        .host
        .add_task_in_worktree(w.project, Some("Elsewhere"), None, None)
        .unwrap();
    let err = w.host.folder_changes(other.id).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discarded_work_comes_back_and_a_running_task_is_not_touched() {
    let w = world();
    let task = w
        .host
        .add_task_in_worktree(
            w.project,
            Some("Draft"),
            Some(&Message::user("Draft it")),
            None,
        )
        .unwrap();
    let tree = task.worktree.clone().unwrap();
    std::fs::write(Path::new(&tree.path).join("draft.txt"), "half done\n").unwrap();

    // While a run holds the task, its worktree is not discarded.
    let held = codewright_agent::Agent::new(
        Arc::new(Mutex::new(Store::open_in(&w.home).unwrap())),
        w.home.clone(),
        AgentConfig::default(),
    )
    .hold(task.id)
    .unwrap();
    let err = w.host.discard_task(task.id).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Busy);
    assert!(Path::new(&tree.path).join("draft.txt").exists());
    drop(held);

    let discarded = w.host.discard_task(task.id).unwrap();
    assert_eq!(discarded.uncommitted, ["draft.txt"]);
    assert!(!Path::new(&tree.path).exists());
    let stored = w.store.lock().unwrap().task(task.id).unwrap();
    assert_eq!(stored.worktree.unwrap().state, WorktreeState::Discarded);
    // A discarded task works nowhere until restored: it is said, not guessed — a message is
    // refused before it is stored (never run in the project's folder instead).
    let err = w.host.task_changes(task.id).unwrap_err();
    assert!(err.message.contains("restore it first"), "{err:?}");
    let before = w.store.lock().unwrap().history(task.id).unwrap().len();
    let err = w
        .host
        .send(
            task.id,
            Some(Message::user("Carry on")),
            RunOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("restore it first"), "{err:?}");
    assert_eq!(
        w.store.lock().unwrap().history(task.id).unwrap().len(),
        before
    );

    let restored = w.host.restore_task(task.id).unwrap();
    let back = restored.worktree.unwrap();
    assert_eq!(back.state, WorktreeState::Active);
    assert_eq!(
        std::fs::read_to_string(Path::new(&back.path).join("draft.txt")).unwrap(),
        "half done\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_is_no_repository_makes_no_task() {
    let w = world();
    let plain = w.repo.parent().unwrap().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let project = w.host.add_project(&plain, None).unwrap().id;
    let err = w
        .host
        .add_task_in_worktree(project, None, Some(&Message::user("x")), None)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadInput);
    assert!(err.message.contains("not in a git repository"), "{err:?}");
    let err = w
        .host
        .add_task_in_worktree(w.project, None, Some(&Message::user("x")), Some("nope"))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound, "{err:?}");
    assert!(w.host.tasks(project).unwrap().is_empty());
    assert!(w.host.tasks(w.project).unwrap().is_empty());
    // A task in that folder is reviewed all the same, without marks of what is committed.
    let task = w.host.add_task(project, "Plain").unwrap();
    let review = w.host.folder_review(task.id).unwrap();
    assert_eq!(review.uncommitted, None);
    assert!(review.files.is_empty() && review.committed.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_or_a_file_is_reverted_and_comments_reach_the_agent() {
    let w = world();
    let long: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    std::fs::write(w.repo.join("long.txt"), &long).unwrap();
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-q", "-m", "long"]);
    let task = w
        .host
        .add_task_in_worktree(
            w.project,
            Some("Edit"),
            Some(&Message::user("Edit it")),
            None,
        )
        .unwrap();
    let root = PathBuf::from(&task.worktree.as_ref().unwrap().path);
    let edited = long
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line twenty-five\n");
    std::fs::write(root.join("long.txt"), &edited).unwrap();

    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        root.join("long.txt"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();

    let review = w.host.task_changes(task.id).unwrap();
    let hunk = &review.changes.files[0].hunks[1];
    let shown = codewright_host::worktrees::HunkRef {
        index: 1,
        old_start: hunk.old_start,
        new_start: hunk.new_start,
    };
    w.host
        .revert_change(task.id, "long.txt", Some(shown))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("long.txt")).unwrap(),
        long.replace("line 2\n", "line two\n")
    );
    let mode = std::fs::metadata(root.join("long.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o755,
        "the hunk's revert kept the file's mode"
    );
    // What the review showed is gone now: the same revert is refused, nothing changes.
    let err = w
        .host
        .revert_change(task.id, "long.txt", Some(shown))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");

    let mut events = w.host.subscribe(Some(task.id));
    w.host
        .send_review(
            task.id,
            &[codewright_host::worktrees::ReviewComment {
                path: "long.txt".into(),
                line: 2,
                quote: "line two".into(),
                comment: "Spell the number.".into(),
            }],
        )
        .await
        .unwrap();
    let request = w.fake.next_request().await;
    let said = request.last_text();
    assert!(
        said.contains("long.txt:2")
            && said.contains("> line two")
            && said.contains("Spell the number."),
        "{said}"
    );
    request.text("Done.");
    request.finish("stop");
    while !matches!(
        events.recv().await,
        Some(AgentEvent::RunFinished { .. }) | None
    ) {}

    w.host.revert_change(task.id, "long.txt", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("long.txt")).unwrap(),
        long
    );

    // Each revert is a restore of the task's, naming the file it put back: undone like one —
    // the worktree's change was not committed, and was nowhere else.
    let undos: Vec<_> = w
        .host
        .checkpoints(task.id)
        .unwrap()
        .into_iter()
        .filter(|c| c.kind == codewright_protocol::CheckpointKind::Restore)
        .collect();
    assert_eq!(
        undos.len(),
        2,
        "the hunk's revert and the file's: {undos:?}"
    );
    assert!(undos
        .iter()
        .all(|c| c.reverted.as_deref() == Some("long.txt")));
    // Undone newest first: the file as it was before the file's revert, then as the agent left it.
    let mut ids: Vec<i64> = undos.iter().map(|c| c.id).collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    for (id, then) in ids
        .into_iter()
        .zip([long.replace("line 2\n", "line two\n"), edited])
    {
        w.host
            .restore_files(task.id, codewright_host::by_hand::Restore::Checkpoint(id))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("long.txt")).unwrap(),
            then
        );
    }

    // A symbolic link the task made is not reverted (git's side refuses to follow one), and
    // says so — not how a copy of it failed: a checkpoint keeps regular files only, and none
    // is recorded.
    std::os::unix::fs::symlink("long.txt", root.join("link")).unwrap();
    let restores = |w: &World| {
        w.host
            .checkpoints(task.id)
            .unwrap()
            .into_iter()
            .filter(|c| c.kind == codewright_protocol::CheckpointKind::Restore)
            .count()
    };
    let before = restores(&w);
    let err = w.host.revert_change(task.id, "link", None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    assert!(err.message.contains("link is not a file"), "{err:?}");
    assert_eq!(restores(&w), before);
    std::fs::remove_file(root.join("link")).unwrap();

    // A hunk's revert that fails (a file that is not UTF-8 text) changes nothing and leaves no
    // restore — one would be `/undo`'s newest, undoing nothing.
    std::fs::write(root.join("latin.txt"), b"caf\xe9 1\nsame\n").unwrap();
    git(&root, &["add", "latin.txt"]);
    git(&root, &["commit", "-q", "-m", "latin"]);
    std::fs::write(root.join("latin.txt"), b"caf\xe9 2\nsame\n").unwrap();
    let review = w.host.task_changes(task.id).unwrap();
    let latin = review
        .changes
        .files
        .iter()
        .find(|f| f.path == "latin.txt")
        .expect("latin.txt in the review");
    let hunk = &latin.hunks[0];
    let shown = codewright_host::worktrees::HunkRef {
        index: 0,
        old_start: hunk.old_start,
        new_start: hunk.new_start,
    };
    let err = w
        .host
        .revert_change(task.id, "latin.txt", Some(shown))
        .unwrap_err();
    assert!(err.message.contains("latin.txt"), "{err:?}");
    assert_eq!(restores(&w), before);
    assert_eq!(
        std::fs::read(root.join("latin.txt")).unwrap(),
        b"caf\xe9 2\nsame\n"
    );

    // A folder swapped for a link after the review was read (a task's process may do it): a
    // hunk's revert never writes where the link leads.
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/x.txt"), "a\nb\n").unwrap();
    git(&root, &["add", "sub"]);
    git(&root, &["commit", "-q", "-m", "sub"]);
    std::fs::write(root.join("sub/x.txt"), "a\nB\n").unwrap();
    let review = w.host.task_changes(task.id).unwrap();
    let x = review
        .changes
        .files
        .iter()
        .find(|f| f.path == "sub/x.txt")
        .unwrap();
    let shown = codewright_host::worktrees::HunkRef {
        index: 0,
        old_start: x.hunks[0].old_start,
        new_start: x.hunks[0].new_start,
    };
    let elsewhere = w.repo.parent().unwrap().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("x.txt"), "a\nB\n").unwrap();
    std::fs::rename(root.join("sub"), root.join("sub-moved")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("sub")).unwrap();
    let before = restores(&w);
    let err = w
        .host
        .revert_change(task.id, "sub/x.txt", Some(shown))
        .unwrap_err();
    assert!(err.message.contains("sub/x.txt"), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("x.txt")).unwrap(),
        "a\nB\n",
        "written where the link leads"
    );
    assert_eq!(restores(&w), before);
    std::fs::remove_file(root.join("sub")).unwrap();
    std::fs::rename(root.join("sub-moved"), root.join("sub")).unwrap();

    // A file the task made and one it removed, each reverted and the revert undone.
    std::fs::write(root.join("made.txt"), "made\n").unwrap();
    std::fs::remove_file(root.join("app.py")).unwrap();
    for (path, there) in [("made.txt", false), ("app.py", true)] {
        w.host.revert_change(task.id, path, None).unwrap();
        assert_eq!(root.join(path).exists(), there, "{path} reverted");
        assert_eq!(undo_last_revert(&w, task.id).as_deref(), Some(path));
        assert_eq!(root.join(path).exists(), !there, "{path}'s revert undone");
    }
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "made\n"
    );

    // A made file's only hunk reverted: gone again, not left empty; a removed file's only hunk
    // reverted: back whole.
    std::fs::write(root.join("fresh.txt"), "fresh\n").unwrap();
    assert!(
        !root.join("app.py").exists(),
        "removed again by the undo above"
    );
    let review = w.host.task_changes(task.id).unwrap();
    for path in ["fresh.txt", "app.py"] {
        let f = review
            .changes
            .files
            .iter()
            .find(|f| f.path == path)
            .unwrap();
        let only = codewright_host::worktrees::HunkRef {
            index: 0,
            old_start: f.hunks[0].old_start,
            new_start: f.hunks[0].new_start,
        };
        w.host.revert_change(task.id, path, Some(only)).unwrap();
    }
    assert!(!root.join("fresh.txt").exists(), "the made file left empty");
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "print('hello')\n"
    );

    // A renamed file: its new name removed (along the path, never through a link), the old one
    // back; the revert undone, the other way round.
    std::fs::create_dir(root.join("moved")).unwrap();
    std::fs::rename(root.join("app.py"), root.join("moved/app2.py")).unwrap();
    let review = w.host.task_changes(task.id).unwrap();
    let renamed = review
        .changes
        .files
        .iter()
        .find(|f| f.path == "moved/app2.py")
        .unwrap();
    assert_eq!(renamed.old_path.as_deref(), Some("app.py"), "{renamed:?}");
    w.host
        .revert_change(task.id, "moved/app2.py", None)
        .unwrap();
    assert!(!root.join("moved/app2.py").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "print('hello')\n"
    );
    assert_eq!(
        undo_last_revert(&w, task.id).as_deref(),
        Some("moved/app2.py")
    );
    assert!(!root.join("app.py").exists());
    assert!(root.join("moved/app2.py").exists());
    // Its new name's folder swapped for a link since the review was read: git no longer sees
    // that rename, so the revert is refused as the review having moved, and nothing is removed
    // where the link leads. (A swap between the checks and the removal itself is refused by the
    // removal: tools' `a_reverts_removal_never_goes_through_a_link_or_out_of_the_folder`.)
    let review = w.host.task_changes(task.id).unwrap();
    assert!(review
        .changes
        .files
        .iter()
        .any(|f| f.path == "moved/app2.py"));
    let away = w.repo.parent().unwrap().join("away");
    std::fs::create_dir(&away).unwrap();
    std::fs::write(away.join("app2.py"), "theirs\n").unwrap();
    std::fs::rename(root.join("moved"), root.join("moved-aside")).unwrap();
    std::os::unix::fs::symlink(&away, root.join("moved")).unwrap();
    let err = w
        .host
        .revert_change(task.id, "moved/app2.py", None)
        .unwrap_err();
    assert!(
        err.message.contains("has changed since the review"),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_to_string(away.join("app2.py")).unwrap(),
        "theirs\n",
        "removed where the link leads"
    );
}

/// Undoes the task's newest revert (its newest restore checkpoint), as the user would from its
/// row; what that revert put back.
fn undo_last_revert(w: &World, task: codewright_protocol::TaskId) -> Option<String> {
    let undo = w
        .host
        .checkpoints(task)
        .unwrap()
        .into_iter()
        .filter(|c| c.kind == codewright_protocol::CheckpointKind::Restore)
        .max_by_key(|c| c.id)
        .unwrap();
    w.host
        .restore_files(task, codewright_host::by_hand::Restore::Checkpoint(undo.id))
        .unwrap();
    undo.reverted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_removed_by_hand_is_made_again_and_a_deleted_task_keeps_its_work() {
    let w = world();
    let task = w
        .host
        .add_task_in_worktree(w.project, Some("Gone"), Some(&Message::user("x")), None)
        .unwrap();
    let root = PathBuf::from(&task.worktree.as_ref().unwrap().path);
    std::fs::write(root.join("kept.txt"), "kept\n").unwrap();
    w.host.commit_task(task.id, Some("Keep it")).unwrap();
    std::fs::remove_dir_all(&root).unwrap();

    let found = w.host.repair_worktrees();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("made again on branch codewright/gone"),
        "{found:?}"
    );
    assert!(
        root.join("kept.txt").exists(),
        "the commit is back in the folder"
    );
    assert!(
        w.host.repair_worktrees().is_empty(),
        "nothing more to repair"
    );

    // Deleting the task keeps its work (uncommitted too) under its archive ref.
    std::fs::write(root.join("draft.txt"), "draft\n").unwrap();
    w.host.remove_task(task.id).unwrap();
    assert!(!root.exists());
    let kept = git(
        &w.repo,
        &[
            "show",
            &format!("refs/codewright/archive/{}:draft.txt", task.id.0),
        ],
    );
    assert_eq!(kept, "draft");
}

/// The main window's rows: where a followed task's branch stands is told at once, again when its
/// run wrote something or its branch moved (a commit made in a terminal, never touched), and not
/// when nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_task_is_told_where_its_branch_stands_as_it_changes_and_only_then() {
    use codewright_host::standing::Standing;
    use std::time::Duration;
    let w = world();
    let task = w
        .host
        .add_task_in_worktree(w.project, Some("fix"), None, None)
        .unwrap();
    let in_folder = w.host.add_task(w.project, "elsewhere").unwrap();
    let tree = PathBuf::from(&task.worktree.clone().unwrap().path);
    let (tx, told) = std::sync::mpsc::channel();
    let watch = w
        .host
        .follow_standings(w.project, move |task, standing| {
            let _ = tx.send((task, standing));
        })
        .unwrap();
    let next = |what: &str| {
        told.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("nothing told {what}"))
    };
    assert_eq!(next("at first"), (task.id, Some(Standing::default())));

    // Its run wrote a file (the window hears of the call's result and touches the task).
    std::fs::write(tree.join("app.py"), "print('bye')\n").unwrap();
    watch.touched(in_folder.id); // works in the project's folder: not followed
    watch.touched(task.id);
    let (id, standing) = next("after a write");
    assert_eq!(id, task.id);
    let standing = standing.unwrap();
    assert_eq!(
        (
            standing.files,
            standing.added,
            standing.removed,
            standing.uncommitted
        ),
        (1, 1, 1, 1),
        "{standing:?}"
    );

    // Committed by hand in a terminal: the branch moved, and that alone tells.
    git(&tree, &["commit", "-qam", "bye"]);
    let (_, standing) = next("after a commit made by hand");
    let standing = standing.unwrap();
    assert_eq!(
        (standing.ahead, standing.uncommitted),
        (1, 0),
        "{standing:?}"
    );

    // Read again with nothing changed: nothing told.
    let before = watch.reads();
    watch.touched(task.id);
    let asked = std::time::Instant::now();
    while watch.reads() == before {
        assert!(asked.elapsed() < Duration::from_secs(30), "not read again");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(told.recv_timeout(Duration::from_secs(1)).is_err());
    // And left alone, nothing is read: reading opens the refs it watches, which is no change.
    let reads = watch.reads();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        watch.reads(),
        reads,
        "read again and again while nothing changed"
    );
    assert_eq!(w.host.task_standing(task.id).unwrap(), standing);
    assert!(w.host.task_standing(in_folder.id).is_err());

    // Discarded: it stands nowhere any more, and that is told too.
    w.host.discard_task(task.id).unwrap();
    watch.touched(task.id);
    assert_eq!(next("after a discard"), (task.id, None));
}

/// The project's set-up command runs in a new worktree before its task's first request, once,
/// asking nothing (the user wrote it), and the model sees its output; one that fails stops the
/// task before the model is asked, and does not run again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_worktree_is_set_up_before_its_task_starts_and_a_failed_set_up_stops_it() {
    let w = world();
    let set_up = |command: &str| {
        let mut settings = w.host.project_settings(w.project).unwrap();
        settings.worktree_set_up = command.into();
        w.host.set_project_settings(w.project, &settings).unwrap();
    };
    let finished = |mut events: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>| async move {
        let mut errors = Vec::new();
        loop {
            match events.recv().await.expect("the run's events ended") {
                AgentEvent::RunFinished { outcome, .. } => return (outcome, errors),
                AgentEvent::Error { message, .. } => errors.push(message),
                _ => {}
            }
        }
    };

    set_up("echo made > .ready && echo the set-up said hello");
    let task = w
        .host
        .add_task_in_worktree(w.project, None, Some(&Message::user("Add the notes")), None)
        .unwrap();
    let tree = PathBuf::from(&task.worktree.clone().unwrap().path);
    let events = w.host.subscribe(Some(task.id));
    // The normal mode: a command asks first — but not the one the user wrote in the settings.
    w.host
        .send(task.id, None, RunOptions::default())
        .await
        .unwrap();
    let first = w.fake.next_request().await;
    assert!(tree.join(".ready").exists(), "the set-up did not run first");
    let sent = first.body.to_string();
    assert!(sent.contains("the set-up said hello"), "{sent}");
    // The prompt names the worktree's branch (its `.git` is a file pointing out of it, not read).
    assert!(
        sent.contains(
            "Git branch: codewright/add-the-notes (this task's own worktree, made from main)"
        ),
        "{sent}"
    );
    first.text("Done.");
    first.finish("stop");
    assert_eq!(finished(events).await.0, RunOutcome::Done);
    assert_eq!(w.host.task(task.id).unwrap().worktree.unwrap().set_up, None);
    assert!(
        !w.repo.join(".ready").exists(),
        "the set-up ran in the project folder"
    );

    // A set-up that fails: said, the model not asked, and not run again by itself.
    set_up("echo cannot install >&2; exit 3");
    let task = w
        .host
        .add_task_in_worktree(
            w.project,
            None,
            Some(&Message::user("Add more notes")),
            None,
        )
        .unwrap();
    let asked_before = w.fake.requests();
    let events = w.host.subscribe(Some(task.id));
    w.host
        .send(task.id, None, RunOptions::default())
        .await
        .unwrap();
    let (outcome, errors) = finished(events).await;
    assert_eq!(outcome, RunOutcome::Failed);
    assert!(
        errors.iter().any(|e| e.contains("set-up command failed")
            && e.contains("Settings → Project")
            && e.contains("exit 3")),
        "{errors:?}"
    );
    assert_eq!(w.fake.requests(), asked_before, "the model was asked");
    let history = w.host.history(task.id).unwrap();
    let shown: String = history.iter().map(|m| format!("{:?}", m.message)).collect();
    assert!(shown.contains("cannot install"), "{shown}");
    assert_eq!(w.host.task(task.id).unwrap().worktree.unwrap().set_up, None);

    // In plan mode (no commands) it waits for a run that may run them.
    set_up("echo later > .later");
    let task = w
        .host
        .add_task_in_worktree(
            w.project,
            None,
            Some(&Message::user("Plan the notes")),
            None,
        )
        .unwrap();
    let tree = PathBuf::from(&task.worktree.clone().unwrap().path);
    let events = w.host.subscribe(Some(task.id));
    w.host
        .send(
            task.id,
            None,
            RunOptions {
                mode: Some(PermissionMode::Plan),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    let asked = w.fake.next_request().await;
    asked.text("A plan.");
    asked.finish("stop");
    assert_eq!(finished(events).await.0, RunOutcome::Done);
    assert!(!tree.join(".later").exists(), "the set-up ran in plan mode");
    assert_eq!(
        w.host
            .task(task.id)
            .unwrap()
            .worktree
            .unwrap()
            .set_up
            .as_deref(),
        Some("echo later > .later")
    );
}

/// A stdio MCP server whose one tool, `where`, says the folder it was started in and the roots
/// its client offers it (asked with `roots/list`, as the filesystem server asks).
const WHERE_SERVER: &str = r#"
import json, os, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, id = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "where", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
            "name": "where", "description": "Where the server works",
            "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "roots", "method": "roots/list"})
        answer = json.loads(sys.stdin.readline())
        while answer.get("id") != "roots":
            answer = json.loads(sys.stdin.readline())
        roots = [r["uri"] for r in answer["result"]["roots"]]
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [
            {"type": "text", "text": json.dumps({"cwd": os.getcwd(), "roots": roots})}]}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
"#;

impl World {
    /// Runs the task once: the model calls the `where` server's tool and says it is done.
    /// Returns what the tool answered (the folder the server works in, its roots).
    async fn run_where(&self, task: TaskId, message: Option<Message>) -> serde_json::Value {
        let (offered, answered) = self
            .run_calling(task, message, "where__where", &json!({}))
            .await;
        assert!(
            offered.to_string().contains("where__where"),
            "the server's tool is not offered: {offered}"
        );
        serde_json::from_str(&answered).unwrap_or_else(|e| panic!("{e}: {answered}"))
    }
}

/// A task in a worktree works with the project's MCP servers started in its worktree (their
/// folder and their root), a task in the project folder with those started there — never each
/// other's — and discarding the worktree ends its servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_tasks_mcp_servers_work_in_its_worktree_and_end_with_it() {
    use codewright_store::{McpServerRow, McpTransport};
    let w = world();
    let script = w.home.join("where_server.py");
    std::fs::write(&script, WHERE_SERVER).unwrap();
    w.store
        .lock()
        .unwrap()
        .save_mcp_server(&McpServerRow {
            id: 0,
            name: "where".into(),
            transport: McpTransport::Stdio {
                command: "python3".into(),
                args: vec![script.display().to_string()],
            },
            env: Default::default(),
            headers: Default::default(),
            secrets: vec![],
            enabled: true,
            project: Some(w.project),
            call_timeout_secs: None,
        })
        .unwrap();
    let running = || {
        let out = Command::new("pgrep")
            .args(["-f", &script.display().to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let real = |p: &Path| p.canonicalize().unwrap().display().to_string();

    let in_tree = w
        .host
        .add_task_in_worktree(w.project, None, Some(&Message::user("Look around")), None)
        .unwrap();
    let tree = in_tree.worktree.clone().unwrap();
    let there = w.run_where(in_tree.id, None).await;
    assert_eq!(there["cwd"], real(&tree.root()), "{there}");
    assert_eq!(
        there["roots"],
        json!([format!("file://{}", tree.root().display())]),
        "{there}"
    );

    let in_folder = w.host.add_task(w.project, "Here").unwrap();
    let here = w
        .run_where(in_folder.id, Some(Message::user("Look around")))
        .await;
    assert_eq!(here["cwd"], real(&w.repo), "{here}");
    assert_eq!(
        here["roots"],
        json!([format!("file://{}", w.repo.display())]),
        "{here}"
    );
    assert_eq!(running(), 2, "one server in each folder");

    // The worktree goes, and its server with it; the folder's stays.
    w.host.discard_task(in_tree.id).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while running() != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} servers run after the worktree went",
            running()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    w.host.shutdown().await;
}
