//! Against a real local model server nobody on this project wrote: llama-cpp-python[server]
//! 0.3.36 serving SmolLM2-135M-Instruct in a 4,096-token window, installed by
//! `scripts/local-model`. The tests check behaviour, never the model's words. They are ignored
//! unless asked for: `CODEWRIGHT_LOCAL_MODEL=1 scripts/test` installs the server (the first time
//! it builds llama.cpp for ~12 minutes) and runs them.

use codewright_llm::request::build_body;
use codewright_llm::{ChatRequest, Client, Protocol, Provider, RetryPolicy};
use codewright_protocol::{Message, Part, Role, ToolContent, ToolSpec};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const IGNORED: &str = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test";

/// The server, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts the server with one of its chat formats and waits until it answers.
    fn start(chat_format: &str) -> Server {
        let python = std::env::var("CODEWRIGHT_LOCAL_MODEL_PYTHON")
            .unwrap_or_else(|_| panic!("{IGNORED} (CODEWRIGHT_LOCAL_MODEL_PYTHON is not set)"));
        let gguf = std::env::var("CODEWRIGHT_LOCAL_MODEL_GGUF").expect(IGNORED);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python)
            .args([
                "-m",
                "llama_cpp.server",
                "--model",
                &gguf,
                "--model_alias",
                "smollm2",
            ])
            .args([
                "--n_ctx",
                "4096",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args(["--chat_format", chat_format])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "the local model server did not start"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn answers(&self) -> bool {
        let Ok(mut sock) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = sock.write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let mut head = String::new();
        let _ = BufReader::new(sock).read_line(&mut head);
        head.contains(" 200 ")
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A data folder and a project folder, with the server as provider `llama`.
struct Cli {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Cli {
    fn new(server: &Server) -> Cli {
        let cli = Cli {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        };
        cli.ok(&[
            "providers",
            "add",
            "llama",
            "--protocol",
            "openai",
            "--base-url",
            &server.base_url(),
        ]);
        // Greedy and seeded: the same answer each run.
        cli.ok(&[
            "models",
            "add",
            "smollm2@llama",
            "--temperature",
            "0",
            "--seed",
            "42",
        ]);
        cli
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        c.arg("--home")
            .arg(self.home.path())
            .args(args)
            .current_dir(self.project.path());
        c.stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.home.path().join("codewright.db")).unwrap()
    }

    /// The newest assistant message: (text, stop reason, usage JSON, model, error).
    fn last_answer(
        &self,
    ) -> (
        String,
        Option<String>,
        Value,
        Option<String>,
        Option<String>,
    ) {
        self.db()
            .query_row(
                "SELECT parts, stop_reason, usage, model, error FROM messages WHERE role = 'assistant' ORDER BY id DESC LIMIT 1",
                [],
                |r| {
                    let parts: Value = serde_json::from_str(&r.get::<_, String>(0)?).unwrap();
                    let text = parts
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<String>();
                    let usage = r
                        .get::<_, Option<String>>(2)?
                        .map_or(Value::Null, |u| serde_json::from_str(&u).unwrap());
                    Ok((text, r.get(1)?, usage, r.get(3)?, r.get(4)?))
                },
            )
            .unwrap()
    }
}

/// `exec --json` started, its events read line by line until `until` says stop (then the child
/// is handed back with what was read).
fn exec_until(cli: &Cli, args: &[&str], until: impl Fn(&Value) -> bool) -> (Child, Vec<Value>) {
    let mut all = vec!["--json", "exec", "--model", "smollm2@llama"];
    all.extend_from_slice(args);
    let mut child = cli
        .command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let stop = until(&event);
        seen.push(event);
        if stop {
            break;
        }
    }
    // The rest is drained so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, seen)
}

#[test]
#[ignore = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn an_answer_streams_and_is_stored_with_estimated_usage_under_its_id() {
    let server = Server::start("chatml");
    let cli = Cli::new(&server);
    let (mut child, events) = exec_until(
        &cli,
        &["--max-iterations", "2", "Say hello in French."],
        |e| e["type"] == "runFinished",
    );
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        events.iter().any(|e| e["type"] == "textDelta"),
        "it streamed: {events:?}"
    );
    // The server reports no usage: estimated and marked so, never zeros.
    let usage = events
        .iter()
        .find(|e| e["type"] == "usage")
        .expect("a usage event");
    assert!(usage["contextTokens"].as_u64().unwrap() > 100, "{usage}");
    assert_eq!(usage["usage"]["estimated"], true, "{usage}");
    let (text, stop, stored_usage, model, error) = cli.last_answer();
    assert!(!text.trim().is_empty());
    assert_eq!(stop.as_deref(), Some("end_turn"));
    assert_eq!(stored_usage["estimated"], true);
    assert_eq!(model.as_deref(), Some("smollm2@llama"));
    assert_eq!(error, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
async fn a_native_tool_calls_second_turn_is_accepted() {
    let server = Server::start("chatml-function-calling");
    let provider = Provider::new("llama", Protocol::OpenAiChat, &server.base_url(), None);
    let client = Client::new(RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    });
    let tool = ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the project.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    };
    let mut request = ChatRequest {
        model: "smollm2".into(),
        system: None,
        messages: vec![Message::user("Read file.txt")],
        tools: vec![tool],
        max_output_tokens: 64,
        thinking_budget: None,
        sampling: Default::default(),
        answer_schema: None,
    };
    // A 135M model calls a tool only when made to: the server's forced tool_choice.
    let mut body = build_body(&provider, &request);
    body["tool_choice"] = json!({"type": "function", "function": {"name": "read_file"}});
    let cancel = tokio_util::sync::CancellationToken::new();
    let first = client
        .stream(&provider, None, "smollm2", &body, &cancel, &mut |_, _| {})
        .await
        .unwrap_or_else(|f| panic!("{}", f.error));
    let call = first.tool_calls().next().expect("a call").id.to_string();
    request.messages.push(first);
    request.messages.push(Message::new(
        Role::Tool,
        vec![Part::ToolResult {
            call_id: call,
            content: vec![ToolContent::Text {
                text: "hello".into(),
            }],
            is_error: false,
            detail: None,
        }],
    ));
    // The second turn carries the call beside `"content": ""`; `null` got a 500 from this server.
    let body = build_body(&provider, &request);
    assert_eq!(body["messages"][1]["content"], "");
    let second = client
        .stream(&provider, None, "smollm2", &body, &cancel, &mut |_, _| {})
        .await;
    assert!(second.is_ok(), "{:?}", second.err().map(|f| f.error));
}

#[test]
#[ignore = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn a_stop_and_a_server_that_dies_keep_what_arrived() {
    let mut server = Server::start("chatml");
    let cli = Cli::new(&server);
    let long = "Count from 1 to 300, one number per line.";
    let first_text = |e: &Value| e["type"] == "textDelta";

    // Ctrl-C mid-stream: exit 130, the partial answer kept as stopped.
    let (child, _) = exec_until(&cli, &[long], first_text);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (text, stop, ..) = cli.last_answer();
    assert!(!text.is_empty());
    assert_eq!(stop.as_deref(), Some("aborted"));

    // The server killed mid-stream: a clear error in the CLI's words, the partial answer kept
    // with the reason.
    let (child, _) = exec_until(&cli, &[long], first_text);
    server.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    // (Its events were read above; the error it told is the one stored with the answer.)
    let (text, stop, _, _, error) = cli.last_answer();
    assert!(!text.is_empty());
    assert_eq!(stop.as_deref(), Some("error"));
    let error = error.unwrap_or_default();
    assert!(
        error.contains("lost the connection") && error.contains("is kept"),
        "{error}"
    );
    assert!(!error.contains("error decoding"), "{error}");
}

#[test]
#[ignore = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn an_oversized_prompt_is_explained_once_not_retried() {
    let server = Server::start("chatml");
    let cli = Cli::new(&server);
    let prompt = "Summarize this. ".to_string()
        + &"The quick brown fox jumps over the lazy dog. ".repeat(700);
    // The window unknown (this server does not say it): sent, answered with an empty stream,
    // explained with the request's size, not retried.
    let started = Instant::now();
    let out = cli.run(&["exec", "--model", "smollm2@llama", &prompt]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("without sending anything") && err.contains("This request was about"),
        "{err}"
    );
    assert!(!err.contains("Trying again"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
    // The window given: the request is not sent at all, and the message says why.
    cli.ok(&[
        "models",
        "add",
        "smollm2@llama",
        "--context",
        "4096",
        "--temperature",
        "0",
    ]);
    let out = cli.run(&["exec", "--model", "smollm2@llama", &prompt]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("more than the context window"), "{err}");
}

#[test]
#[ignore = "needs the local model server: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn a_4k_window_compacts_again_and_again_with_real_summaries() {
    let server = Server::start("chatml");
    let cli = Cli::new(&server);
    cli.ok(&[
        "models",
        "add",
        "smollm2@llama",
        "--context",
        "4096",
        "--max-output",
        "200",
        "--temperature",
        "0",
    ]);
    let mut task = String::new();
    // Each round adds ~900 tokens to ~1,800 of system prompt and compact tools: from the second
    // round on, the history passes 4,096 − 200 − 512.
    for round in 1..=6 {
        let notes: String = (1..=70)
            .map(|i| {
                format!(
                    "Note {round}.{i}: the shelf {i} holds {} jars of honey.\n",
                    i * round
                )
            })
            .collect();
        let prompt = format!("Remember these notes and answer OK.\n{notes}");
        let mut args = vec![
            "--json",
            "exec",
            "--model",
            "smollm2@llama",
            "--max-iterations",
            "2",
        ];
        if !task.is_empty() {
            args.extend(["--task", task.as_str()]);
        }
        args.push(&prompt);
        let out = cli.run(&args);
        assert!(
            out.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if task.is_empty() {
            task = String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok()?["taskId"].as_i64())
                .expect("an event names the task")
                .to_string();
        }
    }
    let summaries: Vec<String> = {
        let db = cli.db();
        let mut stmt = db
            .prepare("SELECT summary FROM compactions ORDER BY rowid")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(summaries.len() >= 2, "compacted {} times", summaries.len());
    assert!(
        summaries.iter().all(|s| !s.trim().is_empty()),
        "{summaries:?}"
    );
}
