//! The store against real SQLite files in temporary folders.

use codewright_protocol::{ProjectId, StoreEvent, TaskId, TaskStatus};
use codewright_store::{migrations, Store, StoreError, DB_FILE_NAME};
use rusqlite::Connection;
use std::path::Path;

fn fresh() -> (tempfile::TempDir, Store) {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    (home, store)
}

fn folder(parent: &Path, name: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn migrates_from_empty_and_from_every_earlier_version() {
    for start in 0..=migrations::LATEST {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(DB_FILE_NAME);
        {
            let conn = Connection::open(&path).unwrap();
            for _ in 0..start {
                migrations::apply_next(&conn).unwrap();
            }
            assert_eq!(migrations::version(&conn).unwrap(), start);
        }
        let store = Store::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(
            migrations::version(&conn).unwrap(),
            migrations::LATEST,
            "from v{start}"
        );
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        // And the schema works.
        let project = store.add_project(&folder(home.path(), "p"), None).unwrap();
        store.add_task(project.id, "t").unwrap();
        // Opening again is a no-op.
        drop(store);
        Store::open(&path).unwrap();
    }
}

/// Tasks stored in the old words (`awaiting_approval`, `completed`) read in the one vocabulary
/// after the upgrade, and one waiting for approval still needs the user.
#[test]
fn statuses_stored_in_the_old_words_are_read_in_the_new_ones() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(DB_FILE_NAME);
    {
        let conn = Connection::open(&path).unwrap();
        for _ in 0..18 {
            migrations::apply_next(&conn).unwrap();
        }
        conn.execute_batch(&format!(
            "INSERT INTO projects (name, root_path, created_at, updated_at) VALUES ('p', '{}', 0, 0);
             INSERT INTO tasks (project_id, title, status, created_at, updated_at) VALUES
                 (1, 'asking', 'awaiting_approval', 0, 0), (1, 'finished', 'completed', 0, 0);",
            home.path().display()
        ))
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let tasks = store.tasks(ProjectId(1)).unwrap();
    let status = |title: &str| tasks.iter().find(|t| t.title == title).unwrap().status;
    assert_eq!(status("asking"), TaskStatus::AwaitingApproval);
    assert_eq!(status("finished"), TaskStatus::Done);
    let needing: Vec<String> = store
        .tasks_needing_you()
        .unwrap()
        .into_iter()
        .map(|t| t.title)
        .collect();
    assert_eq!(needing, ["asking"]);
}

#[test]
fn refuses_a_database_from_a_newer_build_without_touching_it() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(DB_FILE_NAME);
    Store::open(&path).unwrap();
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 999)
        .unwrap();
    let err = Store::open(&path).err().unwrap();
    assert!(
        matches!(err, StoreError::TooNew { found: 999, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&path.display().to_string()));
}

#[test]
fn a_corrupt_file_is_reported_with_its_path_and_left_untouched() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(DB_FILE_NAME);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open_in(home.path()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.is_fatal());
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("left untouched"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        garbage,
        "the corrupt file was modified"
    );
    let names: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "side files were created: {names:?}");
}

/// Another process holds a write on the database as it is opened (a long write by the app or
/// `codewright-cli`, or a stuck one). The open waits, then says the file is in use and by which
/// process — not that it should be made writable, which it is.
#[test]
fn a_database_held_by_another_process_says_so_and_by_whom() {
    let (home, store) = fresh();
    let path = store.path().to_path_buf();
    drop(store);
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN EXCLUSIVE')\n\
             print('held', flush=True)\n\
             time.sleep(60)",
        ])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 (scripts/setup)");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "held\n");
    let err = Store::open_in(home.path()).err();
    let pid = holder.id();
    let _ = holder.kill();
    let _ = holder.wait();
    let err = err.expect("the open waits, then fails");
    let message = err.to_string();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(
        message.contains("in use by another process")
            && message.contains(&format!("(process {pid})")),
        "{message}"
    );
    assert!(!message.contains("writable"), "{message}");
    // Once let go, it opens.
    Store::open_in(home.path()).unwrap();
}

#[test]
fn a_data_dir_that_cannot_be_created_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let err = Store::open_in(&file.join("codewright")).err().unwrap();
    assert!(matches!(err, StoreError::DataDir { .. }), "{err:?}");
    assert!(err.to_string().contains("not-a-folder"), "{err}");
}

#[test]
fn deleting_a_project_cascades_to_its_tasks_and_leaves_the_folder() {
    let (home, store) = fresh();
    let dir = folder(home.path(), "work");
    std::fs::write(dir.join("keep.txt"), "precious").unwrap();
    let a = store.add_project(&dir, None).unwrap();
    let b = store
        .add_project(&folder(home.path(), "other"), None)
        .unwrap();
    let t1 = store.add_task(a.id, "one").unwrap();
    store.add_task(a.id, "two").unwrap();
    let kept = store.add_task(b.id, "kept").unwrap();
    store.remove_project(a.id).unwrap();
    assert!(matches!(
        store.task(t1.id),
        Err(StoreError::NotFound { what: "task", .. })
    ));
    assert!(matches!(
        store.tasks(a.id),
        Err(StoreError::NotFound {
            what: "project",
            ..
        })
    ));
    assert_eq!(store.tasks(b.id).unwrap(), vec![kept]);
    assert_eq!(
        std::fs::read_to_string(dir.join("keep.txt")).unwrap(),
        "precious"
    );
}

#[test]
fn root_path_is_unique_even_through_symlinks_and_relative_forms() {
    let (home, store) = fresh();
    let dir = folder(home.path(), "repo");
    let first = store.add_project(&dir, Some("Repo")).unwrap();
    assert_eq!(first.name, "Repo");
    let link = home.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    for again in [dir.clone(), link, dir.join("."), dir.join("../repo")] {
        let err = store.add_project(&again, None).unwrap_err();
        assert!(
            matches!(err, StoreError::AlreadyAdded { .. }),
            "{again:?}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&first.root_path) && message.contains("Repo"),
            "{message}"
        );
    }
    assert_eq!(store.projects().unwrap().len(), 1);
}

#[test]
fn bad_paths_and_names_are_clear_errors_and_write_nothing() {
    let (home, store) = fresh();
    let missing = home.path().join("nope");
    let err = store.add_project(&missing, None).unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
    let file = home.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let err = store.add_project(&file, None).unwrap_err();
    assert!(
        matches!(err, StoreError::NotADirectory { .. }) && err.to_string().contains("file.txt")
    );
    let dir = folder(home.path(), "d");
    assert!(matches!(
        store.add_project(&dir, Some("  ")),
        Err(StoreError::Invalid(_))
    ));
    assert!(store.projects().unwrap().is_empty());
    let p = store.add_project(&dir, None).unwrap();
    assert!(matches!(
        store.add_task(p.id, "\t "),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.rename_project(p.id, ""),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.add_task(ProjectId(999), "x"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.rename_task(TaskId(999), "x"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.remove_task(TaskId(999)),
        Err(StoreError::NotFound { .. })
    ));
    assert!(store.tasks(p.id).unwrap().is_empty());
    assert_eq!(store.project(p.id).unwrap().name, "d");
}

#[test]
fn unicode_names_are_preserved_exactly() {
    let (home, store) = fresh();
    let dir = folder(home.path(), "数据 🚀");
    let p = store.add_project(&dir, None).unwrap();
    assert_eq!(p.name, "数据 🚀");
    for title in [
        "修复登录 bug 🐛",
        "تحسين الأداء",
        "שלום עולם",
        "👩‍💻 emoji ZWJ",
    ] {
        let t = store.add_task(p.id, title).unwrap();
        assert_eq!(store.task(t.id).unwrap().title, title);
    }
    let renamed = store.rename_project(p.id, "مشروع 项目").unwrap();
    assert_eq!(store.project(renamed.id).unwrap().name, "مشروع 项目");
}

#[test]
fn two_connections_writing_at_once_never_see_database_is_locked() {
    let home = tempfile::tempdir().unwrap();
    let setup = Store::open_in(home.path()).unwrap();
    let project = setup.add_project(&folder(home.path(), "p"), None).unwrap();
    const EACH: usize = 300;
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let home = home.path().to_path_buf();
            std::thread::spawn(move || {
                let store = Store::open_in(&home).unwrap();
                for i in 0..EACH {
                    let task = store.add_task(project.id, &format!("w{w} #{i}")).unwrap();
                    store
                        .rename_task(task.id, &format!("w{w} #{i} renamed"))
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer
            .join()
            .expect("a writer failed (database is locked?)");
    }
    assert_eq!(setup.tasks(project.id).unwrap().len(), 2 * EACH);
}

#[test]
fn the_change_feed_reports_every_write_from_any_connection() {
    let (home, reader) = fresh();
    let mut cursor = reader.change_cursor().unwrap();
    assert!(reader.events_since(&mut cursor).unwrap().is_empty());

    let writer = Store::open_in(home.path()).unwrap();
    let p = writer.add_project(&folder(home.path(), "p"), None).unwrap();
    let t = writer.add_task(p.id, "first").unwrap();
    writer.rename_task(t.id, "renamed").unwrap();
    let events = reader.events_since(&mut cursor).unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(&events[0], StoreEvent::ProjectUpserted { project } if project.id == p.id));
    assert!(matches!(&events[1], StoreEvent::TaskUpserted { task } if task.title == "renamed"));
    assert!(reader.events_since(&mut cursor).unwrap().is_empty());

    writer.remove_project(p.id).unwrap();
    let events = reader.events_since(&mut cursor).unwrap();
    assert!(
        events.contains(&StoreEvent::ProjectDeleted { project_id: p.id }),
        "{events:?}"
    );
    assert!(
        events.contains(&StoreEvent::TaskDeleted {
            task_id: t.id,
            project_id: p.id
        }),
        "{events:?}"
    );
}

#[test]
fn a_reader_left_behind_by_pruning_is_told_to_resync() {
    let (home, store) = fresh();
    let p = store.add_project(&folder(home.path(), "p"), None).unwrap();
    let t = store.add_task(p.id, "t").unwrap();
    let mut cursor = 0;
    store.events_since(&mut cursor).unwrap();
    for i in 0..10_010 {
        store.rename_task(t.id, &format!("t{i}")).unwrap();
    }
    drop(store);
    let store = Store::open_in(home.path()).unwrap(); // opening prunes the feed
    assert_eq!(
        store.events_since(&mut cursor).unwrap(),
        vec![StoreEvent::Resync]
    );
    assert_eq!(cursor, store.change_cursor().unwrap());
}

#[test]
fn rules_upsert_list_remove_and_go_with_their_project() {
    use codewright_protocol::{PermissionRule, RuleAction};
    let (home, store) = fresh();
    let project = store.add_project(&folder(home.path(), "p"), None).unwrap();
    let rule = |pattern: &str, action| PermissionRule {
        tool: "bash".into(),
        pattern: pattern.into(),
        action,
    };
    let first = store
        .save_rule(project.id, &rule("cargo test", RuleAction::Allow))
        .unwrap();
    store
        .save_rule(project.id, &rule("rm", RuleAction::Deny))
        .unwrap();
    // Saving the same tool + pattern again changes its action, not the count.
    let again = store
        .save_rule(project.id, &rule("cargo test", RuleAction::Ask))
        .unwrap();
    assert_eq!(again.id, first.id);
    let rules = store.rules(project.id).unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].rule.action, RuleAction::Ask);
    assert!(store
        .save_rule(project.id, &rule("x", RuleAction::Allow).clone())
        .is_ok());
    store.remove_rule(first.id).unwrap();
    assert!(matches!(
        store.remove_rule(first.id),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.rules(project.id).unwrap().len(), 2);
    store.remove_project(project.id).unwrap();
    assert!(store.rules(project.id).unwrap().is_empty());
}

#[test]
fn checkpoints_keep_the_first_pre_image_of_each_file_per_turn() {
    use codewright_store::PreImage;
    let (home, mut store) = fresh();
    let project = store.add_project(&folder(home.path(), "p"), None).unwrap();
    let task = store.add_task(project.id, "t").unwrap();
    let pre = |path: &str, blob: Option<&str>| PreImage {
        path: path.into(),
        blob: blob.map(String::from),
        mode: Some(0o644),
    };
    let turn1 = store.turn_checkpoint(task.id, 1).unwrap();
    assert_eq!(store.turn_checkpoint(task.id, 1).unwrap(), turn1);
    assert!(store
        .add_pre_image(turn1, &pre("/p/a", Some("h1")))
        .unwrap());
    assert!(!store
        .add_pre_image(turn1, &pre("/p/a", Some("h2")))
        .unwrap());
    store.add_pre_image(turn1, &pre("/p/new", None)).unwrap();
    let turn2 = store.turn_checkpoint(task.id, 2).unwrap();
    store
        .add_pre_image(turn2, &pre("/p/a", Some("h3")))
        .unwrap();
    store
        .add_pre_image(turn2, &pre("/p/b", Some("h4")))
        .unwrap();

    // Undoing turn 1 and later: each file at its earliest state since turn 1.
    let since = store.pre_images_since(task.id, turn1).unwrap();
    assert_eq!(
        since,
        vec![
            pre("/p/a", Some("h1")),
            pre("/p/b", Some("h4")),
            pre("/p/new", None)
        ]
    );
    let restore = store
        .record_restore(task.id, 1, &[pre("/p/a", Some("h9"))], None)
        .unwrap();
    let reverted = store
        .record_restore(task.id, 2, &[pre("/p/b", Some("h5"))], Some("b"))
        .unwrap();
    let list = store.checkpoints(task.id).unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[2].id, restore);
    assert_eq!(list[2].reverted, None);
    assert_eq!(list[3].id, reverted);
    assert_eq!(list[3].reverted.as_deref(), Some("b"));
    assert_eq!(list[0].files.iter().filter(|f| !f.existed).count(), 1);
    store.remove_task(task.id).unwrap();
    assert!(store.checkpoints(task.id).unwrap().is_empty());
}

#[test]
fn project_settings_round_trip_and_keep_unknown_keys() {
    let (dir, store) = fresh();
    let p = store.add_project(&folder(dir.path(), "p"), None).unwrap();
    assert_eq!(
        store.project_settings(p.id).unwrap(),
        codewright_protocol::ProjectSettings::default()
    );
    // A newer build's key survives this build's save.
    let raw_db = Connection::open(dir.path().join(DB_FILE_NAME)).unwrap();
    raw_db
        .execute(
            "UPDATE projects SET settings = '{\"future\": 7}' WHERE id = ?1",
            [p.id.0],
        )
        .unwrap();
    let on = codewright_protocol::ProjectSettings {
        sandbox: true,
        allow_private_network: false,
        pass_env: vec!["GITHUB_TOKEN".into()],
        default_mode: Some(codewright_protocol::PermissionMode::Plan),
        trusted: true,
        worktrees: true,
        worktree_set_up: "npm ci".into(),
    };
    store.set_project_settings(p.id, &on).unwrap();
    assert_eq!(store.project_settings(p.id).unwrap(), on);
    let raw: String = raw_db
        .query_row(
            "SELECT settings FROM projects WHERE id = ?1",
            [p.id.0],
            |r| r.get(0),
        )
        .unwrap();
    assert!(raw.contains("\"future\":7"), "{raw}");
    let missing = ProjectId(p.id.0 + 100);
    assert!(store.project_settings(missing).is_err());
    assert!(store.set_project_settings(missing, &on).is_err());
}

#[test]
fn background_checkpoints_keep_the_log_short() {
    let (dir, store) = fresh();
    let p = store.add_project(&folder(dir.path(), "p"), None).unwrap();
    let wal = dir.path().join(format!("{DB_FILE_NAME}-wal"));
    let checkpointer = store
        .checkpoint_in_background(std::time::Duration::from_millis(20))
        .unwrap();
    // ~26 MB of messages (about 65 KB each with their index), in bursts of ten, each followed by
    // a checkpoint of the thread's own (waited for, however busy the machine): without
    // checkpoints, the log would hold all of it.
    let task = store.add_task(p.id, "t").unwrap();
    let text = "word ".repeat(800);
    for i in 0..400 {
        store
            .append_message(
                task.id,
                &codewright_protocol::Message::user(format!("{i} {text}")),
            )
            .unwrap();
        if i % 10 == 9 {
            // Two runs: the first may have started before this burst's last commit.
            let until = checkpointer.runs() + 2;
            let start = std::time::Instant::now();
            while checkpointer.runs() < until {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(30),
                    "the checkpoint thread stopped running"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
    let size = std::fs::metadata(&wal).unwrap().len();
    assert!(size < 4_000_000, "the log grew to {size} bytes");
    // This connection no longer checkpoints inline.
    let inline: i64 = Connection::open(dir.path().join(DB_FILE_NAME))
        .unwrap()
        .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
        .unwrap();
    assert_eq!(inline, 1000, "other connections keep the default");
}

#[test]
fn where_calls_got_to_is_kept_until_their_results_are_stored() {
    use codewright_protocol::{Message, Part, Role};
    use codewright_store::CallState;
    let (home, store) = fresh();
    let project = store
        .add_project(&folder(home.path(), "work"), None)
        .unwrap();
    let task = store
        .add_task_with(project.id, "fix it", &Message::user("fix the bug"))
        .unwrap();
    let history = store.history(task.id).unwrap();
    assert_eq!(history.len(), 1, "the prompt is stored with the task");
    assert_eq!(history[0].message.role, Role::User);

    let result = codewright_protocol::conversation::interrupted_result("c3", "done");
    store
        .set_call_state(task.id, "c1", &CallState::Running)
        .unwrap();
    store
        .set_call_state(task.id, "c2", &CallState::Asking)
        .unwrap();
    store
        .set_call_state(task.id, "c3", &CallState::Running)
        .unwrap();
    store
        .set_call_state(task.id, "c3", &CallState::Finished(result.clone()))
        .unwrap();
    let states = store.call_states(task.id).unwrap();
    assert_eq!(states.len(), 3);
    assert_eq!(states["c1"], CallState::Running);
    assert_eq!(states["c2"], CallState::Asking);
    assert!(
        matches!(&states["c3"], CallState::Finished(Part::ToolResult { call_id, .. }) if call_id == "c3")
    );
    assert_eq!(store.tasks_asking().unwrap(), vec![task.id]);

    store.clear_calls(task.id).unwrap();
    assert!(store.call_states(task.id).unwrap().is_empty());
    assert!(store.tasks_asking().unwrap().is_empty());
    // A task that is gone records nothing.
    store
        .set_call_state(TaskId(9999), "c1", &CallState::Asking)
        .unwrap();
    assert!(store.tasks_asking().unwrap().is_empty());
}

#[test]
fn a_task_that_ends_is_unread_until_marked_and_the_needing_list_follows() {
    use codewright_protocol::TaskStatus;
    let (home, store) = fresh();
    let one = store
        .add_project(&folder(home.path(), "one"), None)
        .unwrap();
    let two = store
        .add_project(&folder(home.path(), "two"), None)
        .unwrap();
    let done = store.add_task(one.id, "done").unwrap();
    let asking = store.add_task(two.id, "asking").unwrap();
    let quiet = store.add_task(two.id, "quiet").unwrap();
    assert!(!done.unread && store.tasks_needing_you().unwrap().is_empty());

    store.set_task_status(done.id, TaskStatus::Running).unwrap();
    assert!(
        !store.task(done.id).unwrap().unread,
        "running is not a result"
    );
    store.set_task_status(done.id, TaskStatus::Done).unwrap();
    store
        .set_task_status(asking.id, TaskStatus::AwaitingApproval)
        .unwrap();
    store
        .set_task_status(quiet.id, TaskStatus::Interrupted)
        .unwrap();
    let mut needing: Vec<_> = store
        .tasks_needing_you()
        .unwrap()
        .into_iter()
        .map(|t| (t.id, t.project_id, t.unread))
        .collect();
    needing.sort();
    assert_eq!(
        needing,
        vec![(done.id, one.id, true), (asking.id, two.id, false)]
    );

    // Reading is not activity: the task keeps its place.
    let before = store.task(done.id).unwrap().updated_at;
    std::thread::sleep(std::time::Duration::from_millis(5));
    store.mark_task_read(done.id).unwrap();
    let read = store.task(done.id).unwrap();
    assert!(!read.unread);
    assert_eq!(read.updated_at, before);
    // A failure is a result too; starting again keeps an unseen one unread.
    store.set_task_status(done.id, TaskStatus::Failed).unwrap();
    store.set_task_status(done.id, TaskStatus::Running).unwrap();
    assert!(store.task(done.id).unwrap().unread);
    assert!(matches!(
        store.mark_task_read(TaskId(9999)),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn tasks_are_found_by_the_words_of_their_title_newest_first() {
    let (home, store) = fresh();
    let one = store
        .add_project(&folder(home.path(), "one"), None)
        .unwrap();
    let two = store
        .add_project(&folder(home.path(), "two"), None)
        .unwrap();
    let a = store.add_task(one.id, "Fix the LOGIN page").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(3));
    let b = store
        .add_task(two.id, "登录 login flow, 100% done_")
        .unwrap();
    store.add_task(two.id, "Unrelated").unwrap();
    let ids = |words: &str, limit| -> Vec<TaskId> {
        store
            .find_tasks(words, limit)
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect()
    };
    assert_eq!(ids("login", 10), vec![b.id, a.id]);
    assert_eq!(ids("login", 1), vec![b.id]);
    assert_eq!(ids("page LOG", 10), vec![a.id]);
    assert_eq!(ids("登录", 10), vec![b.id]);
    assert_eq!(ids("100%", 10), vec![b.id], "% is text");
    assert_eq!(ids("_", 10), vec![b.id], "_ is text");
    assert_eq!(ids("", 10).len(), 3);
}
