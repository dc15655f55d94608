//! `providers`, `models`, `auth` and `chat` through the built binary, against a local server that
//! replays a recorded provider stream.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo"))
        .join("../llm/tests/fixtures/sse")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Serves `body` as an SSE response to every request; returns the base URL and the requests seen
/// (head and body).
fn serve(body: Vec<u8>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut request_body = vec![0; length];
            reader.read_exact(&mut request_body).unwrap();
            log.lock().unwrap().push(format!(
                "{head}\n{}",
                String::from_utf8_lossy(&request_body)
            ));
            let reply = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            let _ = stream
                .write_all(reply.as_bytes())
                .and_then(|()| stream.write_all(&body));
        }
    });
    (base, seen)
}

struct Cli {
    home: tempfile::TempDir,
}

impl Cli {
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        cmd.arg("--home")
            .arg(self.home.path().join("data"))
            .args(args)
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(args, env);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

#[test]
fn chat_streams_an_answer_and_stores_it_in_the_task_with_its_cost() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
    };
    let (base, seen) = serve(fixture("openai-chat/text_then_usage_chunk.sse"));
    let secret = "sk-local-VERY-SECRET-4242";
    cli.ok(
        &[
            "providers",
            "add",
            "local",
            "--protocol",
            "openai",
            "--base-url",
            &base,
            "--api-key-env",
            "LOCAL_TEST_KEY",
        ],
        &[],
    );
    cli.ok(
        &[
            "models",
            "add",
            "gpt-4o@local",
            "--context",
            "128000",
            "--input-price",
            "2.5",
            "--output-price",
            "10",
        ],
        &[],
    );
    let listed = cli.ok(&["providers", "list"], &[("LOCAL_TEST_KEY", secret)]);
    assert!(
        listed.contains("local")
            && listed.contains(&format!("{base}/v1"))
            && listed.contains("$LOCAL_TEST_KEY"),
        "{listed}"
    );
    assert!(!listed.contains(secret));

    let dir = cli.home.path().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let project: Value =
        serde_json::from_str(&cli.ok(&["--json", "projects", "add", dir.to_str().unwrap()], &[]))
            .unwrap();
    let task: Value = serde_json::from_str(&cli.ok(
        &[
            "--json",
            "tasks",
            "add",
            "--project",
            &project["id"].to_string(),
            "Chat",
        ],
        &[],
    ))
    .unwrap();
    let tid = task["id"].to_string();

    let out = cli.run(
        &[
            "chat",
            "--model",
            "gpt-4o@local",
            "--task",
            &tid,
            "Say hello",
        ],
        &[("LOCAL_TEST_KEY", secret)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = String::from_utf8(out.stdout).unwrap();
    assert!(answer.trim().len() > 10, "{answer}");
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(
        summary.contains("gpt-4o@local") && summary.contains('$'),
        "{summary}"
    );

    // What reached the server: the key as a bearer token, the prompt, streaming with usage.
    let request = seen.lock().unwrap()[0].clone();
    assert!(
        request.starts_with("POST /v1/chat/completions"),
        "{request}"
    );
    assert!(request
        .to_lowercase()
        .contains(&format!("authorization: bearer {}", secret.to_lowercase())));
    assert!(request.contains("\"Say hello\"") && request.contains("\"include_usage\":true"));

    // What was stored: the prompt and the answer, totals updated, no key anywhere on disk.
    let listed: Value = serde_json::from_str(&cli.ok(
        &[
            "--json",
            "tasks",
            "list",
            "--project",
            &project["id"].to_string(),
        ],
        &[],
    ))
    .unwrap();
    let stored = &listed[0];
    assert_eq!(stored["messageCount"], 2);
    assert!(
        stored["inputTokens"].as_i64().unwrap() > 0 && stored["cost"].as_f64().unwrap() > 0.0,
        "{stored}"
    );
    // Every file under the data folder (the database, the task locks' folder…).
    let mut folders = vec![cli.home.path().join("data")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "the key reached {}",
                path.display()
            );
        }
    }

    // A second question in the same task sends the history along; with the main role set,
    // --model can be left out.
    cli.ok(&["models", "role", "main", "gpt-4o@local"], &[]);
    let roles = cli.ok(&["models", "roles"], &[]);
    assert!(
        roles.contains("compaction") && roles.contains("from main"),
        "{roles}"
    );
    cli.ok(
        &["chat", "--task", &tid, "And again"],
        &[("LOCAL_TEST_KEY", secret)],
    );
    let second = seen.lock().unwrap()[1].clone();
    assert!(
        second.contains("\"Say hello\"")
            && second.contains("\"And again\"")
            && second.contains("\"assistant\""),
        "{second}"
    );
}

#[test]
fn chat_json_prints_one_event_per_line() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
    };
    let (base, _) = serve(fixture("anthropic/thinking_signature_text.sse"));
    cli.ok(
        &[
            "providers",
            "add",
            "claude-local",
            "--protocol",
            "anthropic",
            "--base-url",
            &base,
        ],
        &[],
    );
    let out = cli.ok(
        &[
            "--json",
            "chat",
            "--model",
            "claude-sonnet-4-5@claude-local",
            "Think first",
        ],
        &[],
    );
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["type"] == "thinking"));
    assert!(events.iter().any(|e| e["type"] == "text"));
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["stopReason"], "end_turn");
}

#[test]
fn missing_keys_and_bad_ids_are_one_line_errors_that_say_what_to_do() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
    };
    let out = cli.run(
        &["chat", "--model", "claude-sonnet-4-5@anthropic", "hi"],
        &[("ANTHROPIC_API_KEY", "")],
    );
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("auth set anthropic") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let err = String::from_utf8(cli.run(&["chat", "hi"], &[]).stderr).unwrap();
    assert!(err.contains("models role main"), "{err}");
    // Without --model the main model's provider is named all the same.
    let set = cli.run(
        &["models", "role", "main", "claude-sonnet-4-5@anthropic"],
        &[],
    );
    assert!(set.status.success(), "{set:?}");
    let err = String::from_utf8(
        cli.run(&["chat", "hi"], &[("ANTHROPIC_API_KEY", "")])
            .stderr,
    )
    .unwrap();
    assert!(err.contains("auth set anthropic"), "{err}");
    assert!(cli.run(&["models", "role", "main"], &[]).status.success());
    let err =
        String::from_utf8(cli.run(&["chat", "--model", "nomodel", "hi"], &[]).stderr).unwrap();
    assert!(err.contains("MODEL@PROVIDER"), "{err}");
    let err =
        String::from_utf8(cli.run(&["chat", "--model", "x@nowhere", "hi"], &[]).stderr).unwrap();
    assert!(err.contains("unknown provider 'nowhere'"), "{err}");
    let err = String::from_utf8(
        cli.run(
            &[
                "providers",
                "add",
                "x",
                "--protocol",
                "soap",
                "--base-url",
                "http://a",
            ],
            &[],
        )
        .stderr,
    )
    .unwrap();
    assert!(err.contains("unknown protocol 'soap'"), "{err}");
    let err = String::from_utf8(cli.run(&["auth", "set", "anthropic"], &[]).stderr).unwrap();
    assert!(err.contains("no key on standard input"), "{err}");
    let err = String::from_utf8(cli.run(&["providers", "rm", "openai"], &[]).stderr).unwrap();
    assert!(
        err.contains("cannot be removed") && err.contains("providers list"),
        "{err}"
    );
}

#[test]
fn models_list_shows_the_catalog_with_prices() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
    };
    let list: Value = serde_json::from_str(&cli.ok(&["--json", "models", "list"], &[])).unwrap();
    let sonnet = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "claude-sonnet-4-5@anthropic")
        .unwrap();
    assert_eq!(sonnet["contextWindow"], 200000);
    assert_eq!(sonnet["pricing"]["output"], 15.0);
    let text = cli.ok(&["models", "list"], &[]);
    assert!(
        text.starts_with("MODEL") && text.contains("gemini-2.5-flash@google"),
        "{text}"
    );
}

/// Answers every request with `response` (a whole HTTP response); with `hold`, sends only its
/// head and then keeps the connection open in silence. Returns the base URL and how many
/// requests arrived.
fn serve_raw(response: Vec<u8>, hold: bool) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(Mutex::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            *seen.lock().unwrap() += 1;
            let _ = stream.write_all(&response);
            if hold {
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
        }
    });
    (base, count)
}

#[test]
fn a_local_servers_answers_are_stored_and_told_as_they_were() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
    };
    let dir = cli.home.path().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let project: Value =
        serde_json::from_str(&cli.ok(&["--json", "projects", "add", dir.to_str().unwrap()], &[]))
            .unwrap();
    let task: Value = serde_json::from_str(&cli.ok(
        &[
            "--json",
            "tasks",
            "add",
            "--project",
            &project["id"].to_string(),
            "Local",
        ],
        &[],
    ))
    .unwrap();
    let tid = task["id"].to_string();
    let add = |name: &str, base: &str| {
        cli.ok(
            &[
                "providers",
                "add",
                name,
                "--protocol",
                "openai",
                "--base-url",
                base,
            ],
            &[],
        );
        cli.ok(
            &[
                "models",
                "add",
                &format!("smollm2@{name}"),
                "--context",
                "4096",
            ],
            &[],
        );
    };

    // llama-cpp-python reports no usage: said so, not "0 in / 0 out"; stored under the id asked
    // for, not the server's bare "smollm2".
    let (base, seen) = serve(fixture(
        "local-servers/llamacpp_python_smollm2_text_no_usage.sse",
    ));
    add("local", &base);
    // Sampling set for the model goes with every request to it; out of range, it says so.
    let out = cli.run(
        &["models", "add", "smollm2@local", "--temperature", "3"],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("from 0"), "{err}");
    cli.ok(
        &[
            "models",
            "add",
            "smollm2@local",
            "--context",
            "4096",
            "--temperature",
            "0.2",
            "--top-p",
            "0.9",
            "--seed",
            "7",
        ],
        &[],
    );
    let out = cli.run(
        &[
            "chat",
            "--model",
            "smollm2@local",
            "--task",
            &tid,
            "Bonjour",
        ],
        &[],
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.contains("usage not reported by the server") && !summary.contains(" 0 in"),
        "{summary}"
    );
    let request = seen.lock().unwrap()[0].clone();
    assert!(
        request.contains("\"temperature\":0.2")
            && request.contains("\"top_p\":0.9")
            && request.contains("\"seed\":7"),
        "{request}"
    );
    let shown: Value =
        serde_json::from_str(&cli.ok(&["--json", "tasks", "show", &tid], &[])).unwrap();
    assert!(
        shown.to_string().contains("\"model\":\"smollm2@local\""),
        "{shown}"
    );

    // A request the server refuses: one line on stderr, nothing on stdout, and the reason is
    // kept with the answer.
    let recorded = String::from_utf8(fixture(
        "errors/llamacpp_python_500_assistant_content_null.http",
    ))
    .unwrap();
    let recorded = recorded.replace("\r\n", "\n");
    let body = recorded.split_once("\n\n").unwrap().1;
    let response = format!(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (base, count) = serve_raw(response.into_bytes(), false);
    add("refusing", &base);
    let out = cli.run(
        &[
            "chat",
            "--model",
            "smollm2@refusing",
            "--task",
            &tid,
            "Again",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "no blank line on stdout"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused the request as malformed"), "{err}");
    assert_eq!(
        *count.lock().unwrap(),
        1,
        "a validation error is not retried"
    );
    let shown = cli.ok(&["tasks", "show", &tid], &[]);
    assert!(
        shown.contains("(error: refusing refused the request as malformed"),
        "{shown}"
    );

    // Ctrl-C stops `chat` as it stops `exec`: exit 130.
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let (base, count) = serve_raw(head.as_bytes().to_vec(), true);
    add("silent", &base);
    let child = Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
        .arg("--home")
        .arg(cli.home.path().join("data"))
        .args(["chat", "--model", "smollm2@silent", "--task", &tid, "Wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while *count.lock().unwrap() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the request never came"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}
