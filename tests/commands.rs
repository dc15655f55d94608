//! The app's commands, events and capabilities on tauri's mock runtime (no display needed), wired
//! exactly as the real app is (`app_builder` and the real tauri.conf.json).

use codewright_app::{app_builder, AppState, STORE_EVENT};
use codewright_store::Store;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener, Manager, WebviewWindow, WebviewWindowBuilder};

struct Harness {
    app: App<MockRuntime>,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Harness {
    fn new(home: &Path) -> Harness {
        let mut app = app_builder(mock_builder(), AppState::open(home))
            .build(tauri::generate_context!())
            .expect("the app builds on the mock runtime");
        // One turn of the event loop runs the setup hook (which starts the sync thread), as `run`
        // does in the real app.
        #[allow(deprecated)]
        app.run_iteration(|_, _| {});
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        app.listen_any(STORE_EVENT, move |event| {
            sink.lock()
                .unwrap()
                .push(serde_json::from_str(event.payload()).unwrap());
        });
        Harness { app, events }
    }

    fn window(&self, label: &str) -> WebviewWindow<MockRuntime> {
        match self.app.get_webview_window(label) {
            Some(window) => window,
            None => WebviewWindowBuilder::new(&self.app, label, Default::default())
                .build()
                .unwrap(),
        }
    }

    /// Invokes `cmd` from the window `label`, as its page would.
    fn invoke(&self, label: &str, cmd: &str, args: Value) -> Result<Value, Value> {
        let request = InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        };
        get_ipc_response(&self.window(label), request)
            .map(|body| body.deserialize::<Value>().unwrap())
    }

    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke("main", cmd, args)
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    fn err(&self, cmd: &str, args: Value) -> Value {
        self.invoke("main", cmd, args).expect_err(cmd)
    }

    /// Waits for a store event matching `pred`.
    fn event(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(e) = self.events.lock().unwrap().iter().find(|e| pred(e)) {
                return e.clone();
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "no {what} event; got {:?}",
                self.events.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn folder(parent: &Path, name: &str) -> String {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap().to_str().unwrap().to_string()
}

#[test]
fn projects_and_tasks_through_commands_with_events() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let info = h.ok("app_info", json!({}));
    assert!(info["startupError"].is_null(), "{info}");

    let path = folder(tmp.path(), "app");
    let project = h.ok("add_project", json!({"path": path, "name": null}));
    assert_eq!(project["name"], "app");
    assert_eq!(project["rootPath"], path);
    let pid = project["id"].clone();
    h.event("projectUpserted", |e| {
        e["type"] == "projectUpserted" && e["project"]["id"] == pid
    });

    let task = h.ok(
        "create_task",
        json!({"projectId": pid, "title": "写测试 ✅"}),
    );
    assert_eq!(task["title"], "写测试 ✅");
    let tid = task["id"].clone();
    h.event("taskUpserted", |e| {
        e["type"] == "taskUpserted" && e["task"]["id"] == tid
    });
    assert_eq!(
        h.ok("list_tasks", json!({"projectId": pid}))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        h.invoke(&format!("task-{tid}"), "get_task", json!({"id": tid}))
            .unwrap()["title"],
        "写测试 ✅"
    );

    let renamed = h.ok("rename_task", json!({"id": tid, "title": "Renamed"}));
    assert_eq!(renamed["title"], "Renamed");
    h.ok(
        "rename_project",
        json!({"id": pid, "name": "Renamed project"}),
    );
    assert_eq!(
        h.ok("list_projects", json!({}))[0]["name"],
        "Renamed project"
    );

    h.ok("delete_task", json!({"id": tid}));
    h.event("taskDeleted", |e| {
        e["type"] == "taskDeleted" && e["taskId"] == tid
    });
    h.ok("remove_project", json!({"id": pid}));
    h.event("projectDeleted", |e| {
        e["type"] == "projectDeleted" && e["projectId"] == pid
    });
    assert_eq!(h.ok("list_projects", json!({})), json!([]));
    assert!(
        Path::new(&path).is_dir(),
        "removing a project touched its folder"
    );
}

#[test]
fn bad_input_comes_back_as_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let missing = tmp.path().join("missing");
    let err = h.err("add_project", json!({"path": missing, "name": null}));
    assert_eq!(err["kind"], "badPath");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(missing.to_str().unwrap()),
        "{err}"
    );
    assert_eq!(err["fatal"], false);

    let err = h.err(
        "add_project",
        json!({"path": "some/relative/dir", "name": null}),
    );
    assert_eq!(err["kind"], "badPath");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("some/relative/dir is a relative path"),
        "{err}"
    );

    let path = folder(tmp.path(), "p");
    let pid = h.ok("add_project", json!({"path": path, "name": "P"}))["id"].clone();
    let err = h.err("add_project", json!({"path": path, "name": null}));
    assert_eq!(err["kind"], "alreadyAdded");
    assert_eq!(
        h.err("create_task", json!({"projectId": pid, "title": "  "}))["kind"],
        "badInput"
    );
    assert_eq!(
        h.invoke("task-999", "get_task", json!({"id": 999}))
            .unwrap_err()["kind"],
        "notFound"
    );
    assert_eq!(
        h.ok("list_projects", json!({})).as_array().unwrap().len(),
        1
    );
}

#[test]
fn writes_by_another_process_reach_the_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("data");
    let h = Harness::new(&home);
    let other = Store::open_in(&home).unwrap(); // stands in for the CLI: its own connection
    let project = other
        .add_project(Path::new(&folder(tmp.path(), "ext")), None)
        .unwrap();
    let task = other.add_task(project.id, "from outside").unwrap();
    h.event("the external task", |e| {
        e["type"] == "taskUpserted" && e["task"]["id"] == task.id.0
    });
    h.event("the external project", |e| {
        e["type"] == "projectUpserted" && e["project"]["id"] == project.id.0
    });
}

#[test]
fn each_task_opens_in_one_window_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let pid = h.ok(
        "add_project",
        json!({"path": folder(tmp.path(), "p"), "name": null}),
    )["id"]
        .clone();
    let tid = h.ok("create_task", json!({"projectId": pid, "title": "t"}))["id"].clone();
    h.ok("open_task", json!({"id": tid}));
    h.ok("open_task", json!({"id": tid}));
    let labels: Vec<String> = h
        .app
        .webview_windows()
        .into_keys()
        .filter(|l| l.starts_with("task-"))
        .collect();
    assert_eq!(labels, vec![format!("task-{tid}")]);
    assert_eq!(h.err("open_task", json!({"id": 12345}))["kind"], "notFound");
}

#[test]
fn task_windows_get_only_their_own_capability() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let pid = h.ok(
        "add_project",
        json!({"path": folder(tmp.path(), "p"), "name": null}),
    )["id"]
        .clone();
    let tid = h.ok("create_task", json!({"projectId": pid, "title": "t"}))["id"].clone();
    let label = format!("task-{tid}");
    assert_eq!(
        h.invoke(&label, "get_task", json!({"id": tid})).unwrap()["title"],
        "t"
    );
    for (cmd, args) in [
        ("remove_project", json!({"id": pid})),
        ("delete_task", json!({"id": tid})),
        ("create_task", json!({"projectId": pid, "title": "x"})),
        ("pick_folder", json!({})),
    ] {
        assert!(
            h.invoke(&label, cmd, args).is_err(),
            "a task window may call {cmd}"
        );
    }
    // It can read its own task only.
    let other = h.ok("create_task", json!({"projectId": pid, "title": "other"}))["id"].clone();
    let err = h
        .invoke(&label, "get_task", json!({"id": other}))
        .unwrap_err();
    assert_eq!(err["kind"], "denied", "{err}");
    // Every task command of another task is refused by the guard, however the id is hidden.
    for (cmd, args) in [
        (
            "rename_task",
            json!({"taskId": tid, "id": other, "title": "renamed"}),
        ),
        ("send_message", json!({"taskId": other, "text": "hi"})),
        ("stop_task", json!({"taskId": other})),
        (
            "switch_skill",
            json!({"taskId": other, "name": "x", "on": false}),
        ),
        ("choose_agent", json!({"taskId": other, "name": "planner"})),
        (
            "rank_skill",
            json!({"taskId": other, "name": "x", "priority": 1}),
        ),
        (
            "sub_agent_work",
            json!({"taskId": other, "callId": "call_1"}),
        ),
        (
            "save_memory",
            json!({"taskId": other, "scope": "project", "text": "x"}),
        ),
        ("compact_task", json!({"taskId": other})),
        ("new_sibling_task", json!({"taskId": other})),
        ("task_view", json!({"taskId": other})),
        (
            "decide_approval",
            json!({"taskId": other, "id": 1, "decision": {"decision": "approve"}}),
        ),
        (
            "restore_checkpoint",
            json!({"taskId": other, "checkpointId": 1}),
        ),
        ("task_changes", json!({"taskId": other})),
        ("folder_changes", json!({"taskId": other})),
        (
            "revert_change",
            json!({"taskId": other, "path": "a.txt", "hunk": null}),
        ),
        ("send_review", json!({"taskId": other, "comments": []})),
        ("draft_commit_message", json!({"taskId": other})),
        ("commit_task", json!({"taskId": other, "message": "x"})),
        ("merge_task", json!({"taskId": other, "mode": "auto"})),
        ("discard_task", json!({"taskId": other})),
        ("restore_task", json!({"taskId": other})),
        ("resolve_conflicts", json!({"taskId": other})),
        ("draft_pull_request", json!({"taskId": other})),
        ("pull_request_checks", json!({"taskId": other})),
        (
            "open_pull_request",
            json!({"taskId": other, "title": "x", "body": ""}),
        ),
    ] {
        let err = h.invoke(&label, cmd, args).unwrap_err();
        assert_eq!(err["kind"], "denied", "{cmd}: {err}");
    }
    let titles = h.ok("list_tasks", json!({"projectId": pid}));
    assert!(
        titles
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["title"] == "other"),
        "the other task was renamed: {titles}"
    );
    // Its own task works; a message it sends without a model says what to do.
    assert_eq!(
        h.invoke(&label, "task_view", json!({"taskId": tid}))
            .unwrap()["task"]["title"],
        "t"
    );
    let err = h
        .invoke(&label, "send_message", json!({"taskId": tid, "text": "hi"}))
        .unwrap_err();
    assert_eq!(err["kind"], "noModel", "{err}");
    // A window that matches no capability can call nothing.
    assert!(h.invoke("stranger", "list_projects", json!({})).is_err());
    assert_eq!(
        h.ok("list_projects", json!({})).as_array().unwrap().len(),
        1
    );
}

#[test]
fn a_corrupt_database_is_reported_to_every_window_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("data");
    std::fs::create_dir_all(&home).unwrap();
    let db = home.join("codewright.db");
    std::fs::write(&db, vec![0x42; 4096]).unwrap();
    let h = Harness::new(&home);
    let info = h.ok("app_info", json!({}));
    assert_eq!(info["startupError"]["kind"], "corrupt");
    assert_eq!(info["startupError"]["fatal"], true);
    assert!(info["startupError"]["message"]
        .as_str()
        .unwrap()
        .contains(db.to_str().unwrap()));
    assert_eq!(info["dataDir"], home.to_str().unwrap());
    assert_eq!(h.err("list_projects", json!({}))["kind"], "corrupt");
    assert_eq!(std::fs::read(&db).unwrap(), vec![0x42; 4096]);
}

#[test]
fn what_needs_you_and_search_reach_the_main_window_only() {
    use codewright_protocol::{Message, Part, Role, TaskStatus};
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("data");
    let h = Harness::new(&home);
    let other = Store::open_in(&home).unwrap(); // stands in for the CLI
    let project = other
        .add_project(Path::new(&folder(tmp.path(), "p")), None)
        .unwrap();
    let away = other.add_task(project.id, "finished while away").unwrap();
    let watched = other.add_task(project.id, "finished in view").unwrap();
    let needing = |h: &Harness| -> Vec<(i64, bool, String)> {
        let list = h.ok("tasks_needing_you", json!({}));
        let mut list: Vec<_> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["id"].as_i64().unwrap(),
                    t["unread"].as_bool().unwrap(),
                    t["status"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        list.sort();
        list
    };

    // A result that arrives with the task's window closed is unread until the task is opened.
    other.set_task_status(away.id, TaskStatus::Done).unwrap();
    other
        .set_task_status(watched.id, TaskStatus::AwaitingApproval)
        .unwrap();
    assert_eq!(
        needing(&h),
        vec![
            (away.id.0, true, "done".into()),
            (watched.id.0, false, "awaitingApproval".into())
        ]
    );
    h.ok("open_task", json!({"id": away.id.0}));
    assert!(!other.task(away.id).unwrap().unread);

    // One that arrives with its window open is read before any window is told of it.
    h.ok("open_task", json!({"id": watched.id.0}));
    other.set_task_status(watched.id, TaskStatus::Done).unwrap();
    let done = h.event("the watched task done", |e| {
        e["type"] == "taskUpserted"
            && e["task"]["id"] == watched.id.0
            && e["task"]["status"] == "done"
    });
    assert_eq!(done["task"]["unread"], false, "{done}");
    assert!(!other.task(watched.id).unwrap().unread);
    assert!(needing(&h).is_empty());

    // Search: the passage in pieces, the word found marked.
    other
        .append_message(
            away.id,
            &Message::new(
                Role::User,
                vec![Part::Text {
                    text: "Where is <b>zanzibar</b> configured?".into(),
                }],
            ),
        )
        .unwrap();
    let hits = h.ok("search_conversations", json!({"query": "zanzibar"}));
    assert_eq!(hits[0]["taskId"], away.id.0, "{hits}");
    assert_eq!(hits[0]["seq"], 1);
    let marked: Vec<_> = hits[0]["snippet"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["hit"] == true)
        .map(|p| p["text"].clone())
        .collect();
    assert_eq!(marked, vec![json!("zanzibar")]);

    // The palette finds tasks by the words of their title.
    let found = h.ok("find_tasks", json!({"query": "AWAY finished"}));
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["id"], away.id.0);

    // Task windows get none of the main window's views, nor the settings.
    let label = format!("task-{}", away.id.0);
    for (cmd, args) in [
        ("tasks_needing_you", json!({})),
        ("search_conversations", json!({"query": "zanzibar"})),
        ("find_tasks", json!({"query": "away"})),
        (
            "list_folder",
            json!({"place": {"projectId": project.id.0}, "path": ""}),
        ),
        (
            "watch_tree",
            json!({"place": {"projectId": project.id.0}, "folders": [""]}),
        ),
        ("follow_standings", json!({"projectId": project.id.0})),
        (
            "open_file",
            json!({"place": {"projectId": project.id.0}, "path": "x"}),
        ),
        (
            "attach_file",
            json!({"place": {"projectId": project.id.0}, "path": "x"}),
        ),
        ("mcp_servers", json!({})),
        ("project_rules", json!({"projectId": project.id.0})),
        ("app_settings", json!({})),
        ("list_tasks", json!({"projectId": project.id.0})),
        ("settings_overview", json!({})),
        ("local_servers", json!({})),
        (
            "set_provider_key",
            json!({"provider": "openai", "key": "sk-x"}),
        ),
        ("remove_provider_key", json!({"provider": "openai"})),
        ("remove_provider", json!({"name": "openai"})),
        (
            "set_model_role",
            json!({"role": "main", "model": "x@openai"}),
        ),
    ] {
        assert!(
            h.invoke(&label, cmd, args).is_err(),
            "a task window may call {cmd}"
        );
    }
}

#[test]
fn the_tree_lists_a_projects_folders_and_never_leaves_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let root = folder(tmp.path(), "p");
    std::fs::create_dir_all(Path::new(&root).join("src")).unwrap();
    std::fs::write(Path::new(&root).join("src/lib.rs"), "").unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "outside").unwrap();
    let pid = h.ok("add_project", json!({"path": root, "name": null}))["id"].clone();
    let here = json!({"projectId": pid});
    let top = h.ok("list_folder", json!({"place": here, "path": ""}));
    assert_eq!(top["entries"][0]["path"], "src", "{top}");
    let src = h.ok("list_folder", json!({"place": here, "path": "src"}));
    assert_eq!(src["entries"][0]["name"], "lib.rs");
    for path in ["..", "../p", "src/../..", "/etc"] {
        h.err("list_folder", json!({"place": here, "path": path}));
    }
    h.err("open_file", json!({"place": here, "path": "../secret.txt"}));
    let err = h.err("attach_file", json!({"place": here, "path": "src/lib.rs"}));
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("Open a task of this project that works in its folder first"),
        "{err}"
    );
}

/// The Files tab shows a worktree task's own files when that task is chosen: its new file is
/// there and not in the project's folder; a task without a worktree, another project's task or
/// a discarded worktree is refused with words saying what to choose instead.
#[test]
fn the_tree_shows_a_worktree_tasks_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let root = folder(tmp.path(), "p");
    std::fs::write(Path::new(&root).join("a.txt"), "a\n").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .expect("git is installed")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let pid = h.ok("add_project", json!({"path": root, "name": null}))["id"].clone();
    let other = folder(tmp.path(), "q");
    let other_pid = h.ok("add_project", json!({"path": other, "name": null}))["id"].clone();
    let task = h.ok(
        "create_task",
        json!({"projectId": pid, "title": "Add notes", "worktree": true}),
    );
    let tree = Path::new(task["worktree"]["path"].as_str().unwrap()).to_path_buf();
    std::fs::write(tree.join("notes.md"), "new\n").unwrap();
    let names = |place: Value| -> Vec<String> {
        let folder = h.ok("list_folder", json!({"place": place, "path": ""}));
        folder["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{}{}",
                    e["path"].as_str().unwrap(),
                    e["git"]
                        .as_str()
                        .map(|g| format!(" {g}"))
                        .unwrap_or_default()
                )
            })
            .collect()
    };
    let worktree = json!({"projectId": pid, "taskId": task["id"]});
    assert_eq!(names(worktree.clone()), ["a.txt", "notes.md untracked"]);
    assert_eq!(names(json!({"projectId": pid})), ["a.txt"]);
    // Attach from the worktree goes to its own task's window only.
    let err = h.err(
        "attach_file",
        json!({"place": worktree, "path": "notes.md"}),
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("Open this worktree's task first"),
        "{err}"
    );
    // Not this project's task, or no worktree: refused, saying what to choose.
    let err = h.err(
        "list_folder",
        json!({"place": {"projectId": other_pid, "taskId": task["id"]}, "path": ""}),
    );
    assert_eq!(err["kind"], "notFound", "{err}");
    let plain = h.ok("create_task", json!({"projectId": pid, "title": "Plain"}));
    let err = h.err(
        "list_folder",
        json!({"place": {"projectId": pid, "taskId": plain["id"]}, "path": ""}),
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("choose the project folder"),
        "{err}"
    );
    // Discarded: its worktree is gone from disk, and the choice with it.
    h.invoke(
        &format!("task-{}", task["id"]),
        "discard_task",
        json!({"taskId": task["id"]}),
    )
    .unwrap();
    let err = h.err("list_folder", json!({"place": worktree, "path": ""}));
    assert_eq!(err["kind"], "notFound", "{err}");
}

#[test]
fn no_command_returns_a_key() {
    const KEY: &str = "sk-commands-test-9f3a71";
    std::env::set_var("CODEWRIGHT_COMMANDS_TEST_KEY", KEY);
    let tmp = tempfile::tempdir().unwrap();
    let h = Harness::new(&tmp.path().join("data"));
    let saved = h.ok(
        "save_provider",
        json!({"form": {"name": "keyed", "protocol": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "CODEWRIGHT_COMMANDS_TEST_KEY"}}),
    );
    assert_eq!(saved, "keyed");
    h.ok(
        "set_model_role",
        json!({"role": "main", "model": "m@keyed"}),
    );
    let pid = h.ok(
        "add_project",
        json!({"path": folder(tmp.path(), "p"), "name": null}),
    )["id"]
        .clone();
    let mut seen = String::new();
    for (cmd, args) in [
        ("settings_overview", json!({})),
        ("model_catalog", json!({})),
        ("mcp_servers", json!({})),
        ("app_settings", json!({})),
        ("project_settings", json!({"projectId": pid})),
        ("project_rules", json!({"projectId": pid})),
        ("list_projects", json!({})),
        ("app_info", json!({})),
    ] {
        seen.push_str(&h.ok(cmd, args).to_string());
    }
    assert!(
        seen.contains("CODEWRIGHT_COMMANDS_TEST_KEY"),
        "the key's source is shown: {seen}"
    );
    assert!(!seen.contains(KEY), "a command returned the key");
}

/// The task page names every module it imports, at any depth, as a `modulepreload` (a new task
/// window then fetches them all at once instead of one import level at a time), and nothing else.
/// The highlighter, imported with `import()` after the first paint, is not one of them.
#[test]
fn the_task_page_preloads_every_module_it_imports() {
    let ui = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
    let page = std::fs::read_to_string(ui.join("task.html")).unwrap();
    let preloaded: std::collections::BTreeSet<String> = page
        .split("<link rel=\"modulepreload\" href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect();
    let mut imported = std::collections::BTreeSet::new();
    let mut todo = vec!["js/task.js".to_string()];
    while let Some(module) = todo.pop() {
        let source = std::fs::read_to_string(ui.join(&module)).unwrap();
        let dir = Path::new(&module).parent().unwrap();
        for rest in source.split(" from '").skip(1) {
            let target = dir.join(rest.split('\'').next().unwrap());
            // Resolve `./` and `../` within the ui folder.
            let mut parts: Vec<String> = Vec::new();
            for part in target.iter() {
                match part.to_str().unwrap() {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    name => parts.push(name.to_string()),
                }
            }
            let target = parts.join("/");
            if imported.insert(target.clone()) {
                todo.push(target);
            }
        }
    }
    assert_eq!(preloaded, imported);
}
