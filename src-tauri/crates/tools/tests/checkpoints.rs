//! Per-turn checkpoints: restore puts back exactly the files the agent changed (created, edited
//! through tools, deleted by a command) and nothing else; a restore can itself be undone.

mod common;

use codewright_protocol::{CheckpointKind, PermissionMode};
use common::Harness;
use serde_json::json;

#[tokio::test]
async fn restore_and_undo_restore_round_trip() {
    let h = Harness::new(PermissionMode::Yolo);
    h.write("a.txt", "original a\n");
    h.write("c.txt", "doomed c\n");
    h.write("d.txt", "the user's file\n");
    std::fs::set_permissions(
        h.path("c.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    // Turn 1: edit a, create b, delete c (by command), append to a (by command).
    h.session.set_turn(1);
    h.call("read_file", json!({"path": "a.txt"})).await;
    let out = h
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "original", "new_string": "turn one"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    h.call(
        "write_file",
        json!({"path": "sub/b.txt", "content": "new b\n"}),
    )
    .await;
    let out = h
        .call(
            "bash",
            json!({"command": "rm c.txt && echo appended >> a.txt"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(!h.path("c.txt").exists());

    // The user changes a file the agent never touched.
    h.write("d.txt", "the user's file, edited\n");

    // Turn 2: another edit.
    h.session.set_turn(2);
    h.call("read_file", json!({"path": "a.txt"})).await;
    h.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "turn one", "new_string": "turn two"}),
    )
    .await;
    let after_turn_two = h.read("a.txt");
    assert_eq!(after_turn_two, "turn two a\nappended\n");

    let checkpoints = h.store.lock().unwrap().checkpoints(h.session.task).unwrap();
    assert_eq!(checkpoints.len(), 2);
    let mut files: Vec<(String, bool)> = checkpoints[0]
        .files
        .iter()
        .map(|f| (f.path.rsplit('/').next().unwrap().to_string(), f.existed))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ("a.txt".to_string(), true),
            ("b.txt".to_string(), false),
            ("c.txt".to_string(), true)
        ]
    );
    assert!(checkpoints[1].files.len() == 1 && checkpoints[1].turn == 2);

    // Restore turn 1: everything as before it; d.txt keeps the user's edit.
    let restored = h
        .session
        .checkpoints()
        .restore_turn(h.session.task, 1)
        .unwrap();
    assert_eq!(h.read("a.txt"), "original a\n");
    assert_eq!(h.read("c.txt"), "doomed c\n");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(h.path("c.txt")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o755, "permissions restored");
    assert!(!h.path("sub/b.txt").exists());
    assert_eq!(h.read("d.txt"), "the user's file, edited\n");
    assert_eq!(restored.removed.len(), 1);
    assert_eq!(restored.written.len(), 2);

    // Undo the restore: back to after turn 2.
    h.session
        .checkpoints()
        .restore(h.session.task, restored.undo_checkpoint)
        .unwrap();
    assert_eq!(h.read("a.txt"), after_turn_two);
    assert_eq!(h.read("sub/b.txt"), "new b\n");
    assert!(!h.path("c.txt").exists());
    assert_eq!(h.read("d.txt"), "the user's file, edited\n");

    let kinds: Vec<CheckpointKind> = h
        .store
        .lock()
        .unwrap()
        .checkpoints(h.session.task)
        .unwrap()
        .iter()
        .map(|c| c.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            CheckpointKind::Turn,
            CheckpointKind::Turn,
            CheckpointKind::Restore,
            CheckpointKind::Restore
        ]
    );
}

/// A task working in a worktree of its own restores within that worktree: once the worktree's
/// folder is gone, a restore says so and makes nothing again (it used to take the project's
/// folder as the task's, and made the worktree's folders again to write into them).
#[tokio::test]
async fn a_worktree_tasks_restore_stays_in_its_worktree() {
    let h = Harness::new(PermissionMode::Yolo);
    let worktree = tempfile::tempdir().unwrap();
    let top = worktree.path().join("tree");
    std::fs::create_dir(&top).unwrap();
    let top = top.canonicalize().unwrap();
    let task = h.session.task;
    h.store
        .lock()
        .unwrap()
        .set_task_worktree(
            task,
            Some(&codewright_protocol::TaskWorktree {
                path: top.to_string_lossy().into_owned(),
                subdir: String::new(),
                branch: "codewright/t".into(),
                base: "main".into(),
                base_commit: "0".repeat(40),
                state: codewright_protocol::WorktreeState::Active,
                pull_request: None,
                set_up: None,
            }),
        )
        .unwrap();
    let file = top.join("notes.txt");
    std::fs::write(&file, "before\n").unwrap();
    let checkpoints = h.session.checkpoints();
    checkpoints.before_change(task, 1, &file).unwrap();
    std::fs::write(&file, "after\n").unwrap();
    let turn = h.store.lock().unwrap().checkpoints(task).unwrap()[0].id;
    // While it is there, the file goes back.
    checkpoints.restore(task, turn).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\n");
    // Discarded (its folder removed, the task's record kept): refused, nothing made again —
    // the project's folder, which is there, is not the task's.
    let worktree_record = h
        .store
        .lock()
        .unwrap()
        .task(task)
        .unwrap()
        .worktree
        .unwrap();
    let discarded = codewright_protocol::TaskWorktree {
        state: codewright_protocol::WorktreeState::Discarded,
        ..worktree_record.clone()
    };
    h.store
        .lock()
        .unwrap()
        .set_task_worktree(task, Some(&discarded))
        .unwrap();
    std::fs::rename(&top, worktree.path().join("away")).unwrap();
    let err = checkpoints.restore(task, turn).unwrap_err();
    assert!(err.to_string().contains("was discarded"), "{err}");
    assert!(
        !top.exists(),
        "a discarded worktree's folder was made again"
    );
    std::fs::rename(worktree.path().join("away"), &top).unwrap();
    h.store
        .lock()
        .unwrap()
        .set_task_worktree(task, Some(&worktree_record))
        .unwrap();
    // Gone: nothing is made again.
    std::fs::remove_dir_all(&top).unwrap();
    let turn = h
        .store
        .lock()
        .unwrap()
        .checkpoints(task)
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .min()
        .unwrap();
    let err = checkpoints.restore(task, turn).unwrap_err();
    assert!(err.to_string().contains("is gone"), "{err}");
    assert!(!top.exists(), "the worktree's folder was made again");
}

/// The agent's own put-back (a small model's best version) writes over only what the agent
/// last wrote there: a file changed since — by hand, or by a command — or gone is left as it is,
/// and so are the version's other files (all of it or none); one put back is a change of the
/// turn, undone with it.
#[tokio::test]
async fn a_put_back_never_writes_over_a_change_made_since() {
    let h = Harness::new(PermissionMode::Yolo);
    h.write("rain.py", "stub\n");
    h.session.set_turn(1);
    h.call("read_file", json!({"path": "rain.py"})).await;
    let out = h
        .call(
            "write_file",
            json!({"path": "rain.py", "content": "worse\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let out = h
        .call(
            "write_file",
            json!({"path": "util.py", "content": "worse util\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let best: [(&str, &[u8]); 2] = [("rain.py", b"best\n"), ("util.py", b"best util\n")];
    // As the agent wrote them: put back, a change of turn 1.
    assert_eq!(h.session.put_back(&best).unwrap(), ["rain.py", "util.py"]);
    assert_eq!(h.read("rain.py"), "best\n");
    assert!(h.session.put_back(&best).unwrap().is_empty(), "already so");
    // One changed by the user since: refused, their text kept — and the other file too is
    // left as it is, not put back alone.
    h.write("util.py", "worse util\n");
    h.call("read_file", json!({"path": "util.py"})).await;
    h.write("rain.py", "the user's\n");
    let err = h.session.put_back(&best).unwrap_err();
    assert!(err.to_string().contains("changed since"), "{err}");
    assert_eq!(h.read("rain.py"), "the user's\n");
    assert_eq!(h.read("util.py"), "worse util\n");
    // Gone: refused, not made again.
    std::fs::remove_file(h.path("rain.py")).unwrap();
    let err = h.session.put_back(&best[..1]).unwrap_err();
    assert!(err.to_string().contains("is gone"), "{err}");
    assert!(!h.path("rain.py").exists());
    // Outside the folder: refused.
    assert!(h.session.put_back(&[("../elsewhere.py", b"x\n")]).is_err());
    // Undoing turn 1 puts the file back as it was before it: the put-back made no checkpoint
    // of its own.
    h.write("rain.py", "best\n");
    let checkpoints = h.store.lock().unwrap().checkpoints(h.session.task).unwrap();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert_eq!(checkpoints[0].kind, CheckpointKind::Turn);
    h.session
        .checkpoints()
        .restore(h.session.task, checkpoints[0].id)
        .unwrap();
    assert_eq!(h.read("rain.py"), "stub\n");
    assert!(!h.path("util.py").exists(), "made in turn 1");
}
