//! The client against real MCP servers installed by the test command (`scripts/setup --test`
//! puts them in $CODEWRIGHT_MCP_SERVERS), and against servers that misbehave.

use codewright_mcp::{Connection, Endpoint, Notice};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn servers() -> PathBuf {
    let dir = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        });
    assert!(
        dir.join("node_modules/.bin/mcp-server-everything").exists(),
        "the MCP test servers are not installed in {}: run ./scripts/setup --test",
        dir.display()
    );
    dir
}

fn env() -> HashMap<String, String> {
    std::env::vars().collect()
}

fn everything(mode: &str) -> Endpoint {
    Endpoint::Stdio {
        command: "node".into(),
        args: vec![
            servers()
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
            mode.into(),
        ],
        env: env(),
        cwd: None,
    }
}

async fn connect(endpoint: &Endpoint) -> (Connection, mpsc::UnboundedReceiver<Notice>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let c = Connection::connect(
        endpoint,
        vec![std::env::temp_dir()],
        tx,
        codewright_mcp::client::CONNECT_TIMEOUT,
    )
    .await
    .unwrap_or_else(|e| panic!("connect: {e}"));
    (c, rx)
}

fn text_of(content: &[serde_json::Value]) -> String {
    content
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn exercise(c: &Connection, notices: &mut mpsc::UnboundedReceiver<Notice>) {
    assert_eq!(c.server.0, "mcp-servers/everything");
    let tools = c.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "trigger-long-running-operation",
        "get-tiny-image",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(tools.len() >= 10, "{} tools", tools.len());
    assert!(tools.iter().find(|t| t.name == "echo").unwrap().read_only);
    let never = CancellationToken::new();
    let (_, out) = c
        .call(
            "echo",
            json!({"message": "héllo"}),
            Duration::from_secs(10),
            &never,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("héllo"), "{out:?}");
    assert!(!out.is_error);
    let (_, out) = c
        .call(
            "get-sum",
            json!({"a": 2, "b": 40}),
            Duration::from_secs(10),
            &never,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("42"), "{out:?}");

    // Progress arrives while a long call runs.
    let (token, out) = c
        .call(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            Duration::from_secs(20),
            &never,
        )
        .await
        .unwrap();
    assert!(!out.is_error);
    let mut steps = 0;
    while let Ok(n) = notices.try_recv() {
        if matches!(&n, Notice::Progress { token: t, .. } if *t == token) {
            steps += 1;
        }
    }
    assert!(steps >= 3, "{steps} progress notices for {token}");

    // A stop cancels the call at once.
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stopper.cancel();
    });
    let started = Instant::now();
    let err = c
        .call(
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
            Duration::from_secs(60),
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.message.contains("stopped by the user"));
    // The connection still works after a cancellation.
    let (_, out) = c
        .call(
            "echo",
            json!({"message": "still here"}),
            Duration::from_secs(10),
            &never,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_stdio() {
    let (c, mut notices) = connect(&everything("stdio")).await;
    exercise(&c, &mut notices).await;
    // It announced a tool list change right after initialize.
    let prompts = c.prompts().await.unwrap();
    assert!(!prompts.is_empty());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_streamable_http() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = tokio::process::Command::new("node")
        .arg(servers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (c, mut notices) = connect(&Endpoint::Http {
        url,
        headers: BTreeMap::new(),
    })
    .await;
    exercise(&c, &mut notices).await;
    c.close().await;
    let _ = server.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_servers_fail_clearly() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let stdio = |command: &str, args: &[&str]| Endpoint::Stdio {
        command: command.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: env(),
        cwd: None,
    };
    let err = Connection::connect(
        &stdio("codewright-no-such-server", &[]),
        vec![],
        tx.clone(),
        Duration::from_secs(3),
    )
    .await
    .err()
    .unwrap();
    assert!(err.message.contains("not found"), "{err}");

    let err = Connection::connect(
        &stdio("sh", &["-c", "echo 'fatal: bad config' >&2; exit 3"]),
        vec![],
        tx.clone(),
        Duration::from_secs(3),
    )
    .await
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("fatal: bad config"),
        "stderr tail shown: {err}"
    );

    let err = Connection::connect(
        &stdio(
            "sh",
            &[
                "-c",
                "while true; do echo 'this is not json'; sleep 0.1; done",
            ],
        ),
        vec![],
        tx.clone(),
        Duration::from_secs(3),
    )
    .await
    .err()
    .unwrap();
    assert!(
        err.message.contains("did not answer initialize within 3 s"),
        "{err}"
    );
    let err = Connection::connect(
        &stdio("sleep", &["100"]),
        vec![],
        tx.clone(),
        Duration::from_secs(1),
    )
    .await
    .err()
    .unwrap();
    assert!(err.message.contains("within 1 s"), "{err}");

    let err = Connection::connect(
        &Endpoint::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::new(),
        },
        vec![],
        tx.clone(),
        Duration::from_secs(3),
    )
    .await
    .err()
    .unwrap();
    assert!(err.message.contains("127.0.0.1:9"), "{err}");
}
