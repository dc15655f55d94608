//! A run's servers as the agent sees them (`McpServers`): their tools in the registry, progress
//! reaching the tool panel, `tools/list_changed` updating the tools mid-run, a crash mid-call and
//! the restart on the next call. Against the Python SDK server (tests/py_server.py).

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
        matches!(&states[2], (n, ServerState::Connected { server, tools: 4, .. }) if n == "py" && server == "codewright-py-test"),
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
        ["progress 1 of 2: step 1", "progress 2 of 2: step 2"]
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
