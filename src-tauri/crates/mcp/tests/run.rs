//! A run's servers as the agent sees them (`McpServers`): their tools in the registry, progress
//! reaching the tool panel, `tools/list_changed` updating the tools mid-run, a crash mid-call and
//! the restart on the next call, and the fault drill: a server that hangs, answers with 50 MB,
//! floods notifications or writes garbage to stdout stays contained while another server and the
//! run go on. Against the Python SDK server (tests/py_server.py).

use codewright_mcp::{McpServers, ServerState};
use codewright_protocol::PermissionMode;
use codewright_store::{McpServerRow, McpTransport, Store};
use codewright_tools::{CallContext, NonInteractive, Registry, Session, SessionConfig, Tool};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn servers() -> PathBuf {
    std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        })
}

fn row(name: &str, transport: McpTransport) -> McpServerRow {
    McpServerRow {
        id: 0,
        name: name.into(),
        transport,
        env: BTreeMap::new(),
        headers: BTreeMap::new(),
        secrets: vec![],
        enabled: true,
        project: None,
        call_timeout_secs: None,
    }
}

fn session(project: &std::path::Path, home: &std::path::Path) -> Arc<Session> {
    let store = Store::open_in(home).unwrap();
    let p = store.add_project(project, None).unwrap();
    let task = store.add_task(p.id, "mcp").unwrap();
    Session::new(
        SessionConfig {
            task: task.id,
            project: p.id,
            root: project.to_path_buf(),
            home: home.to_path_buf(),
            mode: PermissionMode::Yolo,
            sandbox: false,
            allow_private_network: false,
            rules: vec![],
        },
        Arc::new(Mutex::new(store)),
        Arc::new(NonInteractive),
    )
    .unwrap()
}

fn registry(tools: Vec<Arc<dyn Tool>>) -> Registry {
    let mut r = Registry::builtin();
    for t in tools {
        r.register(t).unwrap();
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_progress_changes_and_a_crash_mid_call() {
    let python = servers().join("py/bin/python");
    assert!(python.exists(), "run ./scripts/setup --test first");
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let rows = [
        row(
            "py",
            McpTransport::Stdio {
                command: python.display().to_string(),
                args: vec![format!(
                    "{}/tests/py_server.py",
                    std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo")
                )],
            },
        ),
        row(
            "missing",
            McpTransport::Stdio {
                command: "codewright-no-such-server".into(),
                args: vec![],
            },
        ),
        McpServerRow {
            enabled: false,
            ..row(
                "off",
                McpTransport::Http {
                    url: "http://127.0.0.1:9/mcp".into(),
                },
            )
        },
    ];
    let env = std::env::vars().collect();
    let servers =
        Arc::new(McpServers::start(&rows, &|_, _| None, &env, project.path().to_path_buf()).await);
    let states = servers.states();
    assert!(
        matches!(&states[0], (n, ServerState::Failed { error }) if n == "missing" && error.contains("not found")),
        "{states:?}"
    );
    assert_eq!(states[1], ("off".into(), ServerState::Disabled));
    assert!(
        matches!(&states[2], (n, ServerState::Connected { server, tools: 8, .. }) if n == "py" && server == "codewright-py-test"),
        "{states:?}"
    );
    let (changed_tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    servers.watch(move |tools| {
        let _ = changed_tx.send(tools);
    });

    let session = session(project.path(), home.path());
    let registry = registry(servers.tools());
    assert!(registry.get("py__add").is_some());
    let cx = |tool: &str| CallContext::new(session.clone(), tool);

    // Progress reaches the panel while the call runs.
    let progress = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut call = cx("py__slow");
    let sink = progress.clone();
    call.progress = Some(Arc::new(move |t: &str| sink.lock().unwrap().push(t.into())));
    let out = registry.call("py__slow", r#"{"steps": 2}"#, &call).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        *progress.lock().unwrap(),
        ["progress 1 of 2: step 1\n", "progress 2 of 2: step 2\n"]
    );

    // The server adds a tool and says so: the tools are listed again.
    let out = registry
        .call("py__add_tool", r#"{"name": "late"}"#, &cx("py__add_tool"))
        .await;
    assert_eq!(out.text_content(), "added late");
    let tools = tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .expect("the tools changed")
        .unwrap();
    let registry = self::registry(tools);
    let out = registry.call("py__late", "{}", &cx("py__late")).await;
    assert_eq!(out.text_content(), "late ran");

    // A crash mid-call is an error result that says what happened; the next call restarts it.
    let out = registry.call("py__crash", "{}", &cx("py__crash")).await;
    assert!(out.is_error);
    assert!(
        out.text_content()
            .contains("started again on the next call"),
        "{}",
        out.text_content()
    );
    let out = registry
        .call("py__add", r#"{"a": 1, "b": 2}"#, &cx("py__add"))
        .await;
    assert_eq!(out.text_content(), "3", "{out:?}");

    servers.shutdown().await;
}

fn py_row(name: &str) -> McpServerRow {
    row(
        name,
        McpTransport::Stdio {
            command: servers().join("py/bin/python").display().to_string(),
            args: vec![format!(
                "{}/tests/py_server.py",
                std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo")
            )],
        },
    )
}

/// The process's resident memory, from /proc.
fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faulty_server_is_contained_and_the_run_goes_on() {
    assert!(
        servers().join("py/bin/python").exists(),
        "run ./scripts/setup --test first"
    );
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = std::env::vars().collect();
    // One of them slow to start (3 s): the start waits for it (within the connect timeout), and
    // it answers like the others.
    let slow = McpServerRow {
        env: [("SLOW_START".to_string(), "3".to_string())].into(),
        ..py_row("slow")
    };
    let starting = std::time::Instant::now();
    let servers = Arc::new(
        McpServers::start(
            &[py_row("bad"), py_row("ok"), slow],
            &|_, _| None,
            &env,
            project.path().to_path_buf(),
        )
        .await,
    );
    let started_in = starting.elapsed();
    assert!(started_in >= Duration::from_secs(3), "{started_in:?}");
    let session = session(project.path(), home.path());
    let registry = Arc::new(registry(servers.tools()));
    let cx = |tool: &str| CallContext::new(session.clone(), tool);
    // The server answers a call to its `add` tool.
    let answers = |server: &'static str| {
        let tool = format!("{server}__add");
        let cx = cx(&tool);
        let registry = registry.clone();
        async move {
            let out = registry.call(&tool, r#"{"a": 2, "b": 3}"#, &cx).await;
            assert_eq!(out.text_content(), "5", "{server} answers: {out:?}");
        }
    };

    // A 50 MB answer (twice that on the wire: FastMCP sends text and structured content) fails
    // at once and says why; memory stays bounded.
    let before = rss_mib();
    let started = std::time::Instant::now();
    let out = registry
        .call("bad__huge", r#"{"megabytes": 50}"#, &cx("bad__huge"))
        .await;
    assert!(out.is_error, "{:.300}", out.text_content());
    assert!(
        out.text_content()
            .contains("MB, more than the 16 MB accepted in one message; ask for less"),
        "{}",
        out.text_content()
    );
    eprintln!(
        "50 MB answer refused in {:?}; RSS {before} → {} MiB",
        started.elapsed(),
        rss_mib()
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "no wait for the call's timeout"
    );
    // A 6 MB one is taken, and bounded: its head, its true end, and what was left out.
    let out = registry
        .call("bad__huge", r#"{"megabytes": 6}"#, &cx("bad__huge"))
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{}", &text[..text.len().min(500)]);
    assert!(text.len() <= 140 * 1024, "bounded: {} bytes", text.len());
    assert!(
        text.starts_with("BEGIN\n") && text.ends_with("THE END"),
        "head and tail kept"
    );
    assert!(
        text.contains("MB /") && text.contains("left out"),
        "says what it left out"
    );
    eprintln!("after the 6 MB answer: RSS {} MiB", rss_mib());
    answers("ok").await;
    answers("slow").await;

    // A flood of notifications: the call answers, progress reaches the panel coalesced, the other
    // server answers in the middle of it.
    let progress = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut call = cx("bad__flood");
    let sink = progress.clone();
    call.progress = Some(Arc::new(move |t: &str| sink.lock().unwrap().push(t.into())));
    let started = std::time::Instant::now();
    let flood = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .call("bad__flood", r#"{"count": 5000}"#, &call)
                .await
        })
    };
    answers("ok").await;
    let out = tokio::time::timeout(Duration::from_secs(120), flood)
        .await
        .expect("a flood does not hang the call")
        .unwrap();
    assert_eq!(out.text_content(), "flooded 5000", "{out:?}");
    let updates = progress.lock().unwrap().clone();
    eprintln!(
        "flood of 5000 × 3 notifications: {:?}, {} progress updates reached the panel",
        started.elapsed(),
        updates.len()
    );
    assert!(!updates.is_empty(), "progress shown");
    // At most one a tenth of a second (lines at least 100 ms apart), and the last one.
    assert!(
        updates.len() as f64 <= started.elapsed().as_secs_f64() * 10.0 + 2.0,
        "coalesced: {} updates in {:?}",
        updates.len(),
        started.elapsed()
    );
    answers("ok").await;

    // Garbage on stdout mid-session: this call fails or answers, the next one works.
    let out = registry
        .call("bad__garbage", "{}", &cx("bad__garbage"))
        .await;
    let text = out.text_content();
    assert!(
        text == "answered after garbage" || text.contains("started again on the next call"),
        "{out:?}"
    );
    answers("bad").await;

    // A call that never answers: the other server answers meanwhile, and a stop ends it at once
    // (the server is told to cancel) and leaves the server usable.
    let mut call = cx("bad__hang");
    let stop = tokio_util::sync::CancellationToken::new();
    call.cancel = stop.clone();
    let hang = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.call("bad__hang", "{}", &call).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    answers("ok").await;
    assert!(!hang.is_finished());
    let stopped_at = std::time::Instant::now();
    stop.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), hang)
        .await
        .expect("a stop ends a hanging call")
        .unwrap();
    assert!(
        out.is_error && out.text_content().contains("stopped"),
        "{out:?}"
    );
    eprintln!("hang stopped in {:?}", stopped_at.elapsed());
    answers("bad").await;

    servers.shutdown().await;
}

/// A server given its own call timeout: a call that never answers fails after it, says so and
/// that it was cancelled, and the server answers the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_fails_after_its_servers_own_timeout() {
    assert!(
        servers().join("py/bin/python").exists(),
        "run ./scripts/setup --test first"
    );
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = std::env::vars().collect();
    let quick = McpServerRow {
        call_timeout_secs: Some(1),
        ..py_row("quick")
    };
    let servers =
        McpServers::start(&[quick], &|_, _| None, &env, project.path().to_path_buf()).await;
    let session = session(project.path(), home.path());
    let registry = registry(servers.tools());
    let started = std::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        registry.call(
            "quick__hang",
            "{}",
            &CallContext::new(session.clone(), "quick__hang"),
        ),
    )
    .await
    .expect("the call ends at its server's timeout, not the default two minutes");
    let waited = started.elapsed();
    assert!(out.is_error, "{out:?}");
    assert!(
        out.text_content()
            .contains("did not answer within 1 s (the call timeout set for this server"),
        "{}",
        out.text_content()
    );
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    let out = registry
        .call(
            "quick__add",
            r#"{"a": 1, "b": 2}"#,
            &CallContext::new(session.clone(), "quick__add"),
        )
        .await;
    assert_eq!(out.text_content(), "3", "{out:?}");
    servers.shutdown().await;
}

/// The secret values a server is given (here an env variable from the keyring) never come back
/// from it: not in a tool's result (the everything server's `get-env` prints its environment),
/// not in the error and stderr tail of a server that prints it and exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_given_to_a_server_never_come_back() {
    const SECRET: &str = "tok-mcp-7d2e9f41c0";
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let with_secret = |row: McpServerRow| McpServerRow {
        secrets: vec!["API_TOKEN".into()],
        ..row
    };
    let rows = [
        with_secret(row(
            "everything",
            McpTransport::Stdio {
                command: "node".into(),
                args: vec![
                    servers()
                        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                        .display()
                        .to_string(),
                    "stdio".into(),
                ],
            },
        )),
        with_secret(row(
            "leaky",
            McpTransport::Stdio {
                command: "sh".into(),
                args: vec![
                    "-c".into(),
                    "echo \"cannot log in with token $API_TOKEN\" >&2; exit 3".into(),
                ],
            },
        )),
    ];
    let env = std::env::vars().collect();
    let secrets = |_: &str, key: &str| (key == "API_TOKEN").then(|| SECRET.to_string());
    let servers = McpServers::start(&rows, &secrets, &env, project.path().to_path_buf()).await;
    let states = format!("{:?}", servers.states());
    assert!(
        states.contains("cannot log in with token [secret API_TOKEN]"),
        "{states}"
    );
    assert!(!states.contains(SECRET), "{states}");

    let session = session(project.path(), home.path());
    let registry = registry(servers.tools());
    let out = registry
        .call(
            "everything__get-env",
            "{}",
            &CallContext::new(session.clone(), "everything__get-env"),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(
        text.contains(r#""API_TOKEN": "[secret API_TOKEN]""#),
        "{text}"
    );
    assert!(!text.contains(SECRET));
    servers.shutdown().await;
}
