//! The client against real MCP servers installed by the test command (`scripts/setup --test`
//! puts them in $CODEWRIGHT_MCP_SERVERS): the reference "everything" server over stdio, streamable
//! HTTP and legacy SSE, the filesystem server, a server on the Python SDK; and against servers
//! that misbehave.

use codewright_mcp::{Connection, Endpoint, Notice, OnProgress, ProgressUpdate};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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

/// A progress listener and what it heard.
fn progress_log() -> (Arc<Mutex<Vec<ProgressUpdate>>>, OnProgress) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    (
        log,
        Arc::new(move |u: ProgressUpdate| sink.lock().unwrap().push(u)),
    )
}

async fn exercise(c: &Connection) {
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
    let out = c
        .call(
            "echo",
            json!({"message": "héllo"}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("héllo"), "{out:?}");
    assert!(!out.is_error);
    let out = c
        .call(
            "get-sum",
            json!({"a": 2, "b": 40}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("42"), "{out:?}");

    // Progress arrives while a long call runs, routed to that call.
    let (updates, on_progress) = progress_log();
    let out = c
        .call(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            Duration::from_secs(20),
            &never,
            Some(on_progress),
        )
        .await
        .unwrap();
    assert!(!out.is_error);
    let updates = updates.lock().unwrap().clone();
    assert!(updates.len() >= 3, "{updates:?}");
    assert_eq!(updates[0].total, Some(4.0), "{updates:?}");

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
            None,
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.message.contains("stopped by the user"));
    // The connection still works after a cancellation.
    let out = c
        .call(
            "echo",
            json!({"message": "still here"}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(text_of(&out.content).contains("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_stdio() {
    let (c, mut notices) = connect(&everything("stdio")).await;
    exercise(&c).await;
    // It announces a tool list change right after initialize.
    let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv()).await;
    assert_eq!(notice.ok().flatten(), Some(Notice::ToolsChanged));
    let prompts = c.prompts().await.unwrap();
    assert!(!prompts.is_empty());
    c.close().await;
}

/// A free port on loopback.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts an HTTP server process listening on `port`, and waits until it accepts connections.
async fn http_server(command: &str, args: &[&str], port: u16) -> tokio::process::Child {
    let server = tokio::process::Command::new(command)
        .args(args)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{command} {args:?} did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server
}

fn everything_script() -> String {
    servers()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_streamable_http() {
    let port = free_port();
    let _server = http_server("node", &[&everything_script(), "streamableHttp"], port).await;
    let (c, _) = connect(&Endpoint::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::new(),
    })
    .await;
    exercise(&c).await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_legacy_sse() {
    let port = free_port();
    let _server = http_server("node", &[&everything_script(), "sse"], port).await;
    let (c, _) = connect(&Endpoint::Sse {
        url: format!("http://127.0.0.1:{port}/sse"),
        headers: BTreeMap::new(),
    })
    .await;
    exercise(&c).await;
    c.close().await;

    // The wrong path is a clear error, not a hang.
    let (tx, _rx) = mpsc::unbounded_channel();
    let err = Connection::connect(
        &Endpoint::Sse {
            url: format!("http://127.0.0.1:{port}/nope"),
            headers: BTreeMap::new(),
        },
        vec![],
        tx,
        Duration::from_secs(5),
    )
    .await
    .err()
    .unwrap();
    assert!(err.message.contains("404"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_server_gets_the_project_as_its_root() {
    // A folder name with a space and CJK: the root's file:// URI must be percent-encoded.
    let project = tempfile::Builder::new()
        .prefix("my app 项目 ")
        .tempdir()
        .unwrap();
    let root = project.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "from the project\n").unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    // Started without directories, the server asks the client for its roots (`roots/list`).
    let c = Connection::connect(
        &Endpoint::Stdio {
            command: "node".into(),
            args: vec![servers()
                .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
                .display()
                .to_string()],
            env: env(),
            cwd: None,
        },
        vec![root.clone()],
        tx,
        codewright_mcp::client::CONNECT_TIMEOUT,
    )
    .await
    .unwrap_or_else(|e| panic!("connect: {e}"));
    let never = CancellationToken::new();
    // The roots arrive just after initialize; ask until the server has them.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = c
            .call(
                "list_allowed_directories",
                json!({}),
                Duration::from_secs(10),
                &never,
                None,
            )
            .await
            .unwrap();
        if text_of(&out.content).contains(&root.display().to_string()) {
            break;
        }
        assert!(Instant::now() < deadline, "{out:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = c
        .call(
            "read_text_file",
            json!({"path": root.join("notes.txt")}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(
        text_of(&out.content).contains("from the project"),
        "{out:?}"
    );
    let out = c
        .call(
            "read_text_file",
            json!({"path": "/etc/hostname"}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(out.is_error, "outside the root is refused: {out:?}");
    c.close().await;
}

/// The Python test server (tests/py_server.py, on the `mcp` package `scripts/setup --test`
/// installs).
fn python() -> (String, String) {
    let python = servers().join("py/bin/python");
    assert!(
        python.exists(),
        "the Python MCP package is not installed in {}: run ./scripts/setup --test",
        python.display()
    );
    (
        python.display().to_string(),
        format!(
            "{}/tests/py_server.py",
            std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo")
        ),
    )
}

async fn exercise_python(c: &Connection) {
    assert_eq!(c.server.0, "codewright-py-test");
    let never = CancellationToken::new();
    let out = c
        .call(
            "add",
            json!({"a": 2, "b": 40}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out.content), "42");
    let (updates, on_progress) = progress_log();
    let out = c
        .call(
            "slow",
            json!({"steps": 3}),
            Duration::from_secs(10),
            &never,
            Some(on_progress),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out.content), "3 steps done");
    let updates = updates.lock().unwrap().clone();
    let messages: Vec<String> = updates.iter().map(|u| u.to_string()).collect();
    assert_eq!(
        messages,
        [
            "progress 1 of 3: step 1",
            "progress 2 of 3: step 2",
            "progress 3 of 3: step 3"
        ]
    );
    // A schema violation comes back as an error result, not a failure of the connection.
    let out = c
        .call(
            "add",
            json!({"a": "two"}),
            Duration::from_secs(10),
            &never,
            None,
        )
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_over_stdio_and_streamable_http() {
    let (python, script) = python();
    let (c, _) = connect(&Endpoint::Stdio {
        command: python.clone(),
        args: vec![script.clone(), "stdio".into()],
        env: env(),
        cwd: None,
    })
    .await;
    exercise_python(&c).await;
    c.close().await;

    // Over HTTP the Python SDK frames its event streams with CRLF.
    let port = free_port();
    let _server = http_server(&python, &[&script, "streamable-http"], port).await;
    let (c, _) = connect(&Endpoint::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::new(),
    })
    .await;
    exercise_python(&c).await;
    c.close().await;
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
    assert!(err.message.contains("exited"), "{err}");

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

    // HTTP endpoints that answer with an error status.
    for status in ["404 Not Found", "500 Internal Server Error"] {
        let url = answering(status).await;
        for endpoint in [
            Endpoint::Http {
                url: url.clone(),
                headers: BTreeMap::new(),
            },
            Endpoint::Sse {
                url: url.clone(),
                headers: BTreeMap::new(),
            },
        ] {
            let err = Connection::connect(&endpoint, vec![], tx.clone(), Duration::from_secs(5))
                .await
                .err()
                .unwrap();
            let code = &status[..3];
            assert!(
                err.message.contains(&url) && err.message.contains(code),
                "{endpoint:?}: {err}"
            );
        }
    }

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

/// A local HTTP server that answers every request with `status` (and a short body).
async fn answering(status: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = socket.read(&mut buf).await;
                let body = "no MCP here";
                let _ = socket
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    url
}

/// An answer over streamable HTTP larger than a message may be (16 MB) fails at once and says
/// why, as over stdio; the connection goes on answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_answer_over_http_fails_at_once_and_says_why() {
    let (python, script) = python();
    let port = free_port();
    let _server = http_server(&python, &[&script, "streamable-http"], port).await;
    let (c, _) = connect(&Endpoint::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::new(),
    })
    .await;
    let never = CancellationToken::new();
    let started = Instant::now();
    let error = c
        .call(
            "huge",
            json!({"megabytes": 20}),
            Duration::from_secs(120),
            &never,
            None,
        )
        .await
        .expect_err("a 20 MB answer is refused")
        .to_string();
    assert!(
        error.contains("larger than the 16 MB accepted in one message does that, so ask for less"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no wait for the call's timeout: {:?}",
        started.elapsed()
    );
    let again = c
        .call(
            "add",
            json!({"a": 2, "b": 3}),
            Duration::from_secs(20),
            &never,
            None,
        )
        .await
        .expect("the connection goes on");
    assert_eq!(text_of(&again.content), "5");
    c.close().await;
}
