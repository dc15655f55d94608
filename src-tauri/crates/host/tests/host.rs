//! The host's promises that no front end can check on its own: a message is never swallowed by
//! a run that cannot start, an answer nobody waits for is refused, and runs left behind by a
//! process that quit are marked interrupted.

use codewright_agent::AgentConfig;
use codewright_host::{Host, RunOptions};
use codewright_protocol::{Decision, ErrorKind, Message, TaskId, TaskStatus};
use codewright_store::{ProviderRow, Store};
use std::sync::{Arc, Mutex};

/// A host on a fresh data folder with one task and a main model (whose server is never reached).
/// A task in a project, a host on its data, and the data itself (as a test reads and seeds it).
fn world() -> (tempfile::TempDir, Host, TaskId, Arc<Mutex<Store>>) {
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    std::fs::create_dir_all(&project_dir).unwrap();
    let store = Store::open_in(&dir.path().join("data")).unwrap();
    let project = store.add_project(&project_dir, None).unwrap();
    let task = store.add_task(project.id, "t").unwrap().id;
    store
        .save_provider(&ProviderRow {
            name: "local".into(),
            protocol: "openai".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key_env: Some("CODEWRIGHT_HOST_TEST_KEY".into()),
            first_byte_timeout_ms: None,
            idle_timeout_ms: None,
        })
        .unwrap();
    store
        .set_setting("model.main", Some(&serde_json::json!("m@local")))
        .unwrap();
    std::env::set_var("CODEWRIGHT_HOST_TEST_KEY", "k");
    let home = dir.path().join("data");
    let store = Arc::new(Mutex::new(store));
    let host = Host::new(store.clone(), home, AgentConfig::default());
    (dir, host, task, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_running_elsewhere_refuses_the_message_and_stores_nothing() {
    let (dir, host, task, data) = world();
    // Another run holds the task (the lock is the same across processes).
    let other = Arc::new(Mutex::new(
        Store::open_in(&dir.path().join("data")).unwrap(),
    ));
    let _held =
        codewright_agent::Agent::new(other, dir.path().join("data"), AgentConfig::default())
            .hold(task)
            .unwrap();
    let err = host
        .send(task, Some(Message::user("do it")), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Busy, "{err:?}");
    let store = data.lock().unwrap();
    assert!(
        store.history(task).unwrap().is_empty(),
        "the message was taken"
    );
}

/// `chat --task` writes into the task: it waits for no run and races none. While a run holds
/// the task (here, another process's), the chat is refused before anything is stored or sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_in_a_task_running_elsewhere_is_refused_and_stores_nothing() {
    let (dir, host, task, data) = world();
    let other = Arc::new(Mutex::new(
        Store::open_in(&dir.path().join("data")).unwrap(),
    ));
    let held = codewright_agent::Agent::new(other, dir.path().join("data"), AgentConfig::default())
        .hold(task)
        .unwrap();
    let never = tokio_util::sync::CancellationToken::new();
    let mut heard = 0;
    let refused = host
        .chat(None, Some(task), "hello", &never, &mut |_| heard += 1)
        .await
        .unwrap_err();
    assert_eq!(refused.error.kind, ErrorKind::Busy, "{:?}", refused.error);
    assert_eq!(heard, 0, "the model was asked");
    assert!(
        data.lock().unwrap().history(task).unwrap().is_empty(),
        "the prompt was stored in a task another run holds"
    );
    // Once the run lets go, the chat takes the task (and fails only at the provider here).
    drop(held);
    let failed = host
        .chat(None, Some(task), "hello", &never, &mut |_| {})
        .await
        .unwrap_err();
    assert_ne!(failed.error.kind, ErrorKind::Busy, "{:?}", failed.error);
    assert_eq!(data.lock().unwrap().history(task).unwrap().len(), 2);
}

/// A compaction that fails says why once, to whoever asked for it (`/compact` shows it where it
/// was typed): the error is not also sent as an event, which the window would show a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compaction_is_told_once_to_who_asked() {
    let (_dir, host, task, data) = world();
    {
        let store = data.lock().unwrap();
        for i in 0..30 {
            store
                .append_message(
                    task,
                    &Message::user(format!("question {i} {}", "x ".repeat(6000))),
                )
                .unwrap();
            store
                .append_message(
                    task,
                    &Message::new(
                        codewright_protocol::Role::Assistant,
                        vec![codewright_protocol::Part::Text {
                            text: format!("answer {i} {}", "y ".repeat(6000)),
                        }],
                    ),
                )
                .unwrap();
        }
    }
    let mut events = host.subscribe(Some(task));
    let err = host.compact(task, None).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Compaction, "{err:?}");
    assert!(!err.message.is_empty());
    let mut errors = 0;
    while let Ok(event) = events.try_recv() {
        if matches!(event, codewright_protocol::AgentEvent::Error { .. }) {
            errors += 1;
        }
    }
    assert_eq!(errors, 0, "the error was also sent as an event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_nobody_waits_for_are_refused() {
    let (_dir, host, task, _data) = world();
    let err = host.decide(task, 1, Decision::Approve).unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyAnswered);
    let err = host.answer(task, 1, None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyAnswered);
    assert_eq!(host.stop(task).unwrap_err().kind, ErrorKind::NotRunning);
    let err = host
        .send(task, Some(Message::user("  ")), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadInput);
}

#[test]
fn runs_left_behind_are_marked_interrupted_unless_someone_holds_them() {
    let (dir, host, task, data) = world();
    let store = data.clone();
    let second = {
        let store = store.lock().unwrap();
        let project = store.task(task).unwrap().project_id;
        store.add_task(project, "u").unwrap().id
    };
    for t in [task, second] {
        store
            .lock()
            .unwrap()
            .set_task_status(t, TaskStatus::AwaitingApproval)
            .unwrap();
    }
    // The second task is still held by a process (here: an agent of this one).
    let agent = codewright_agent::Agent::new(
        store.clone(),
        dir.path().join("data"),
        AgentConfig::default(),
    );
    let _held = agent.hold(second).unwrap();
    // The first was streaming a long answer (not indexed again as it grew).
    {
        let store = store.lock().unwrap();
        let mut stream = store.start_streaming(task, "m@local").unwrap();
        let long = vec![codewright_protocol::Part::Text {
            text: format!("{} bandicoot", "filler ".repeat(20_000)),
        }];
        stream
            .update(&store, &long, codewright_store::FLUSH_BYTES)
            .unwrap();
        assert!(store.search_messages("bandicoot", 5).unwrap().is_empty());
    }
    host.mark_interrupted();
    let store = store.lock().unwrap();
    assert_eq!(store.task(task).unwrap().status, TaskStatus::Interrupted);
    assert_eq!(
        store.search_messages("bandicoot", 5).unwrap().len(),
        1,
        "what the interrupted answer got to is found"
    );
    assert_eq!(
        store.task(second).unwrap().status,
        TaskStatus::AwaitingApproval
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_stored_before_the_model_is_looked_up() {
    let (_dir, host, task, data) = world();
    let err = host
        .send(
            task,
            Some(Message::user("PROMPT that must survive")),
            RunOptions {
                model: Some("nosuch@nowhere".into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.saved, "{err:?}");
    assert!(err.message.contains("nowhere"), "{err:?}");
    let store = data.lock().unwrap();
    let history = store.history(task).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].message.text(), "PROMPT that must survive");
    assert_eq!(
        store.task(task).unwrap().settings.get("model"),
        None,
        "a model that cannot be used is not remembered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_that_cannot_be_sent_are_refused_before_anything_is_stored() {
    use codewright_protocol::{Attachment, AttachmentKind};
    let (_dir, host, task, data) = world();
    let image = |name: &str, mime: &str, data: String| Attachment {
        kind: AttachmentKind::Image,
        name: name.into(),
        mime: mime.into(),
        size: data.len() as u64,
        path: None,
        data: Some(data),
    };
    let png = "iVBORw0KGgo=".to_string();
    let cases = [
        (
            vec![image("page.svg", "image/svg+xml", png.clone())],
            "only PNG",
        ),
        (
            vec![image("huge.png", "image/png", "A".repeat(8 * 1024 * 1024))],
            "larger than 3.75 MB",
        ),
        (
            vec![image("odd.png", "image/png", "<script>".into())],
            "not a readable image",
        ),
        (
            vec![image("wide.png", "image/png", "é".repeat(40))],
            "not a readable image",
        ),
        (
            vec![image("photo.jpg", "image/jpeg", png.clone())],
            "is a image/png file named as image/jpeg",
        ),
        (
            (0..11)
                .map(|i| image(&format!("{i}.png"), "image/png", png.clone()))
                .collect(),
            "at most 10 images",
        ),
    ];
    for (attachments, says) in cases {
        let err = host
            .send(
                task,
                Some(Message::user_with("look", attachments)),
                RunOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadInput, "{err:?}");
        assert!(err.message.contains(says), "{err:?}");
        assert!(!err.saved);
    }
    // Nothing at all is empty; an image alone is a message.
    assert!(
        Message::user_with("", vec![]).is_empty_prompt(),
        "no text and nothing attached"
    );
    assert!(!Message::user_with("", vec![image("a.png", "image/png", png)]).is_empty_prompt());
    assert!(data.lock().unwrap().history(task).unwrap().is_empty());
}

#[test]
fn a_task_without_a_mode_of_its_own_takes_its_projects_default() {
    use codewright_protocol::PermissionMode;
    let (_dir, host, task, data) = world();
    assert_eq!(host.options(task).unwrap().mode, PermissionMode::Normal);
    {
        let store = data.lock().unwrap();
        let project = store.task(task).unwrap().project_id;
        let mut settings = store.project_settings(project).unwrap();
        settings.default_mode = Some(PermissionMode::Plan);
        store.set_project_settings(project, &settings).unwrap();
    }
    assert_eq!(host.options(task).unwrap().mode, PermissionMode::Plan);
    // Its own, once chosen, wins.
    host.set_options(task, None, PermissionMode::AcceptEdits)
        .unwrap();
    assert_eq!(
        host.options(task).unwrap().mode,
        PermissionMode::AcceptEdits
    );
}

/// A task file whose run cannot start (the model cannot be found) still gets its task, with its
/// request stored, and the error says so (`saved`): the user continues it once that is fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_file_whose_run_cannot_start_keeps_its_task_and_request() {
    let (dir, host, task, data) = world();
    let project = {
        let store = data.lock().unwrap();
        store
            .set_setting("model.main", Some(&serde_json::json!("nosuch@nowhere")))
            .unwrap();
        store.task(task).unwrap().project_id
    };
    let tasks = dir.path().join("project/.codewright/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join("TASK-001.md"), "# Greet\n\nSay hello.\n").unwrap();
    let err = host.implement(project, "TASK-001").await.unwrap_err();
    assert!(err.saved && err.message.contains("nowhere"), "{err:?}");
    {
        let store = data.lock().unwrap();
        let made = store
            .tasks(project)
            .unwrap()
            .into_iter()
            .find(|t| t.title == "TASK-001: Greet")
            .expect("the task was made");
        let history = store.history(made.id).unwrap();
        assert!(
            history[0].message.text().contains("Say hello."),
            "{history:?}"
        );
    }
    let missing = host.implement(project, "TASK-009").await.unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);
    assert!(
        missing.message.contains("the project's are: TASK-001"),
        "{missing:?}"
    );
}

/// An agent is chosen by name (an unknown one names the closest); one that names its own model
/// runs with it unless the task has a model of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_agent_is_chosen_by_name_and_brings_its_model() {
    let (dir, host, task, data) = world();
    let agents = dir.path().join("project/.codewright/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("big-thinker.md"),
        "---\ndescription: Thinks hard\nmodel: huge@elsewhere\n---\nThink.\n",
    )
    .unwrap();
    {
        let store = data.lock().unwrap();
        trust(&store, task);
        let err = codewright_host::agents::choose_agent(&store, task, "planer").unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(
            err.message
                .starts_with("There is no agent named planer; did you mean planner"),
            "{err:?}"
        );
        let listed = codewright_host::agents::choose_agent(&store, task, "big-thinker").unwrap();
        assert_eq!(listed.current, "big-thinker");
    }
    let err = host
        .send(task, Some(Message::user("think")), RunOptions::default())
        .await
        .unwrap_err();
    assert!(err.saved && err.message.contains("elsewhere"), "{err:?}");
    // A model of the task's own wins over the agent's.
    let err = host
        .send(
            task,
            Some(Message::user("again")),
            RunOptions {
                model: Some("m2@nowhere".into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("nowhere"), "{err:?}");
}

/// An agent may name a model role; its run uses the model the user chose for that role.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_model_role_is_the_model_chosen_for_it() {
    let (dir, host, task, data) = world();
    let agents = dir.path().join("project/.codewright/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("quick.md"),
        "---\ndescription: Quick answers\nmodel: small\n---\nBe brief.\n",
    )
    .unwrap();
    {
        let store = data.lock().unwrap();
        trust(&store, task);
        store
            .set_setting("model.small", Some(&serde_json::json!("tiny@faraway")))
            .unwrap();
        codewright_host::agents::choose_agent(&store, task, "quick").unwrap();
    }
    let err = host
        .send(
            task,
            Some(Message::user("quick one")),
            RunOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.saved && err.message.contains("faraway"), "{err:?}");
}

/// A command's agent and tools are kept with the message that brought them, so continuing the
/// task (after a pause or a crash) runs the same way; the next message of the user's own
/// forgets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_agent_and_tools_are_kept_until_the_next_message() {
    let (_dir, host, task, data) = world();
    let kept = || data.lock().unwrap().task(task).unwrap().settings["thisRun"].clone();
    // (Each run fails: its provider's port refuses, after the usual retries, ~3 s.)
    let ended = || async {
        for _ in 0..1200 {
            if host.running(task).is_none() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the run did not end");
    };
    let review = codewright_agent::ThisRun {
        agent: Some("reviewer".into()),
        tools: Some(vec!["read_file".into()]),
    };
    host.send(
        task,
        Some(Message::user("review it")),
        RunOptions {
            this_run: review,
            ..RunOptions::default()
        },
    )
    .await
    .unwrap();
    ended().await;
    assert_eq!(
        kept(),
        serde_json::json!({"agent": "reviewer", "tools": ["read_file"]})
    );
    // Continuing without a message keeps them; a message of the user's own forgets them.
    host.send(task, None, RunOptions::default()).await.unwrap();
    ended().await;
    assert_eq!(kept()["agent"], "reviewer");
    host.send(task, Some(Message::user("thanks")), RunOptions::default())
        .await
        .unwrap();
    ended().await;
    assert!(kept().is_null(), "{}", kept());
}

/// A project's MCP server that never answers `initialize` holds up the run, not the sending of
/// the message: `send` returns, the run says it is starting its servers, and a stop ends the
/// wait (and the server) at once instead of after the connect timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_starts_holds_the_run_where_a_stop_ends_it() {
    use codewright_protocol::{AgentEvent, AgentState, RunOutcome};
    use codewright_store::{McpServerRow, McpTransport};
    const MUTE: &str = "97.3125"; // a unique `sleep`, to find its process
    let (_dir, host, task, data) = world();
    {
        let store = data.lock().unwrap();
        let project = store.task(task).unwrap().project_id;
        store
            .save_mcp_server(&McpServerRow {
                id: 0,
                name: "mute".into(),
                transport: McpTransport::Stdio {
                    command: "sleep".into(),
                    args: vec![MUTE.into()],
                },
                env: Default::default(),
                headers: Default::default(),
                secrets: vec![],
                enabled: true,
                project: Some(project),
                call_timeout_secs: None,
            })
            .unwrap();
    }
    let mut events = host.subscribe(Some(task));
    host.send(task, Some(Message::user("Use it")), RunOptions::default())
        .await
        .unwrap();
    async fn next(events: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> AgentEvent {
        tokio::time::timeout(std::time::Duration::from_secs(120), events.recv())
            .await
            .expect("an event")
            .expect("the host is alive")
    }
    // Said at once; the servers are named once they are slow.
    let (mut waits, mut named) = (false, None);
    while !(waits && named.is_some()) {
        match next(&mut events).await {
            AgentEvent::State {
                state: AgentState::StartingServers,
                ..
            } => waits = true,
            AgentEvent::Notice { message, .. } if message.contains("MCP servers") => {
                assert!(waits, "named before the run says it waits: {message}");
                named = Some(message);
            }
            AgentEvent::RunFinished { outcome, .. } => {
                panic!("the run ended ({outcome:?}) without saying it waits for its servers")
            }
            _ => {}
        }
    }
    let named = named.unwrap();
    assert!(
        named.contains("(mute)")
            && named.contains("30 s")
            && named.contains("Stopping the task ends the wait"),
        "{named}"
    );
    let mute = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("sleep {MUTE}")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    // Started a moment after the run says it waits (the environment is read first).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !mute() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    host.stop(task).unwrap();
    loop {
        if let AgentEvent::RunFinished { outcome, .. } = next(&mut events).await {
            assert_eq!(outcome, RunOutcome::Stopped);
            break;
        }
    }
    {
        let store = data.lock().unwrap();
        assert_eq!(store.history(task).unwrap()[0].message.text(), "Use it");
        assert_eq!(store.task(task).unwrap().status, TaskStatus::Idle);
    }
    // Its process is stopped with the wait (not left running until the connect timeout).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while mute() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server was left running"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The user trusts the task's project (its own agents, commands and skills are used).
fn trust(store: &codewright_store::Store, task: codewright_protocol::TaskId) {
    let project = store.task(task).unwrap().project_id;
    codewright_host::project::set_project_trusted(store, project, true).unwrap();
}
