//! The provider fault drill, through `codewright-cli exec --json` as a user runs it: every fault a
//! server or the network can throw ends in a retry that succeeds or in one typed error event —
//! within seconds, never a hang or a panic — and the user's message is always stored. The key is
//! set, and error bodies echo it back as some servers do: it appears in no event, no output and no
//! file of the data folder. (An answer that never ends is cut off at a size limit: `llm`'s
//! `silence_and_bad_answers`, where the limit can be made small.)

#[path = "../../agent/tests/common/mod.rs"]
mod common;

use common::{text, End, Reply};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Far longer than any fault below takes to end (the slowest: a stall, 2 × 1.5 s, and five tries of
/// a server that keeps failing, about 3 s of back-off).
const HANG: Duration = Duration::from_secs(60);

/// The provider key every run has, and looks for afterwards.
const KEY: &str = "sk-canary-5f0c1e2d3b4a69788796a5b4c3d2e1f0";

const OK_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";

fn event(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
    )
}

fn status(code: u16, headers: &str) -> Reply {
    // Echoing the key, as some servers do in their errors.
    let body = format!(
        r#"{{"error":{{"message":"fault injected for key {KEY}","type":"server_error"}}}}"#
    );
    Reply::Raw(
        format!(
            "HTTP/1.1 {code} Fault\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
        End::Close,
    )
}

/// What a fault must end in.
#[derive(Debug)]
enum Expect {
    /// The answer, after this many retries (each shown as a notice).
    Answer { retries: usize },
    /// One error event of this kind that `says` something, with the part of the answer that had
    /// arrived kept (or not).
    Error {
        kind: &'static str,
        says: &'static str,
        kept: bool,
    },
}

/// A fault: its name, the reply to the first request (`None`: nothing listens at all), whether
/// every later request gets the same fault (else a good answer), and what the run must end in.
struct Fault {
    name: &'static str,
    first: Option<Reply>,
    again: bool,
    expect: Expect,
}

fn faults() -> Vec<Fault> {
    let partial = format!("{OK_HEAD}{}", event(r#"{"content":"PARTIAL ANSWER"}"#));
    let once = |name, first, retries| Fault {
        name,
        first: Some(first),
        again: false,
        expect: Expect::Answer { retries },
    };
    let fails = |name, first, kind, says, kept| Fault {
        name,
        first: Some(first),
        again: true,
        expect: Expect::Error { kind, says, kept },
    };
    vec![
        Fault {
            name: "connection refused",
            first: None,
            again: true,
            expect: Expect::Error {
                kind: "network",
                says: "Connection refused",
                kept: false,
            },
        },
        once("429 with retry-after", status(429, "retry-after: 1\r\n"), 1),
        once("429 without retry-after", status(429, ""), 1),
        once("500", status(500, ""), 1),
        once("503", status(503, ""), 1),
        once("529", status(529, ""), 1),
        fails(
            "503 on every try",
            status(503, ""),
            "overloaded",
            "HTTP 503",
            false,
        ),
        fails(
            "reset after some bytes",
            Reply::Raw(partial.clone(), End::Reset),
            "network",
            "Connection reset by peer",
            true,
        ),
        fails(
            "a stall before the first byte",
            Reply::Raw(OK_HEAD.into(), End::Hold),
            "timeout",
            "first-byte timeout",
            false,
        ),
        fails(
            "a stall mid-answer",
            Reply::Raw(partial.clone(), End::Hold),
            "timeout",
            "idle timeout",
            true,
        ),
        fails(
            "malformed JSON in a chunk",
            Reply::Raw(
                format!("{partial}data: {{\"choices\":[{{\"index\":0,\"delta\n\n"),
                End::Close,
            ),
            "badResponse",
            "malformed event",
            true,
        ),
        fails(
            "a stream cut off without its end",
            Reply::Raw(partial, End::Close),
            "streamEndedEarly",
            "ended early",
            true,
        ),
        fails(
            "a web page with status 200",
            Reply::Raw(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n<html><head><title>Hotel Wi-Fi login</title></head></html>".into(),
                End::Close,
            ),
            "badResponse",
            "a web page (\"Hotel Wi-Fi login\")",
            false,
        ),
    ]
}

struct Run {
    code: Option<i32>,
    events: Vec<Value>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// `exec --json PROMPT` in `home`, killed (and failed) if it is still running after [`HANG`].
fn exec(home: &std::path::Path, project: &std::path::Path, model: &str, prompt: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
        .arg("--home")
        .arg(home)
        .args(["exec", "--json", "--model", model, prompt])
        .env("CODEWRIGHT_FAULT_KEY", KEY)
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > HANG {
            let _ = child.kill();
            panic!("{prompt}: still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Run {
        code: out.status.code(),
        events: stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{prompt}: {e}: {l}")))
            .collect(),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

fn cli(home: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn add_provider(home: &std::path::Path, name: &str, url: &str) {
    cli(
        home,
        &[
            "providers",
            "add",
            name,
            "--protocol",
            "openai",
            "--base-url",
            url,
            "--api-key-env",
            "CODEWRIGHT_FAULT_KEY",
            "--first-byte-timeout",
            "1.5",
            "--idle-timeout",
            "1.5",
        ],
    );
}

/// The stored conversation of the task `run` ran in.
fn stored(home: &std::path::Path, run: &Run) -> String {
    let task = run.events[0]["taskId"].to_string();
    cli(home, &["tasks", "show", &task])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_fault_ends_in_a_retry_or_one_clear_error_and_keeps_the_message() {
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for fault in faults() {
        // Kept until the run ends: the scripted server, or the port nobody listens on.
        let (url, _server) = match fault.first.clone() {
            Some(first) => {
                let again = fault.again;
                let server = common::serve(Arc::new(move |index, _: &Value| {
                    if index == 0 || again {
                        first.clone()
                    } else {
                        text("RECOVERED")
                    }
                }))
                .await;
                (server.url.clone(), Some(server))
            }
            None => {
                let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                (format!("http://{}/v1", closed.local_addr().unwrap()), None)
            }
        };
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        add_provider(home.path(), "faulty", &url);
        let prompt = format!("PROMPT for {}", fault.name);
        let run = tokio::task::spawn_blocking({
            let (home, project, prompt) = (
                home.path().to_owned(),
                project.path().to_owned(),
                prompt.clone(),
            );
            move || exec(&home, &project, "test-model@faulty", &prompt)
        })
        .await
        .unwrap();
        table.push(row(fault.name, &run));
        if let Err(e) = check(home.path(), &fault, &prompt, &run) {
            failures.push(format!("{}: {e}\nstderr: {}", fault.name, run.stderr));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every file under `dir`.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A line of the drill's table: the fault, how long the run took, and how it ended.
fn row(name: &str, run: &Run) -> String {
    let end = run
        .events
        .iter()
        .find(|e| e["type"] == "error")
        .map(|e| format!("{}: {}", e["kind"], e["message"]))
        .unwrap_or_else(|| "answered".into());
    format!("{name:<34} {:>5.1} s  {end}", run.took.as_secs_f64())
}

fn check(home: &std::path::Path, fault: &Fault, prompt: &str, run: &Run) -> Result<(), String> {
    if run.stderr.contains("panicked") {
        return Err("a panic".into());
    }
    if run.stdout.contains(KEY) || run.stderr.contains(KEY) {
        return Err("the key is in the output".into());
    }
    for file in files(home) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        if bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()) {
            return Err(format!("the key is in {}", file.display()));
        }
    }
    let of_type =
        |t: &str| -> Vec<&Value> { run.events.iter().filter(|e| e["type"] == t).collect() };
    let retries = of_type("notice")
        .iter()
        .filter(|e| e["message"].as_str().unwrap_or("").contains("Trying again"))
        .count();
    let errors = of_type("error");
    let shown = stored(home, run);
    if !shown.contains(&format!("── you\n{prompt}")) {
        return Err(format!("the user's message is not stored: {shown}"));
    }
    match fault.expect {
        Expect::Answer { retries: expected } => {
            if run.code != Some(0) || !errors.is_empty() {
                return Err(format!("no answer: exit {:?}, errors {errors:?}", run.code));
            }
            if retries != expected {
                return Err(format!("{retries} retries shown, expected {expected}"));
            }
            if !shown.contains("RECOVERED") {
                return Err(format!("the answer is not stored: {shown}"));
            }
        }
        Expect::Error { kind, says, kept } => {
            if run.code != Some(1) {
                return Err(format!("exit {:?}, expected 1", run.code));
            }
            let [error] = errors.as_slice() else {
                return Err(format!("expected one error event, got {errors:?}"));
            };
            if error["kind"] != kind {
                return Err(format!(
                    "error of kind {}, expected {kind}: {error}",
                    error["kind"]
                ));
            }
            let message = error["message"].as_str().unwrap_or("");
            if !message.contains(says) || message.contains("error decoding response body") {
                return Err(format!("the error does not say {says:?}: {message}"));
            }
            if kept != message.contains("The part of the answer that had arrived is kept.") {
                return Err(format!("the error does not say what was kept: {message}"));
            }
            if shown.contains("PARTIAL ANSWER") != kept {
                return Err(format!(
                    "the partial answer {} kept: {shown}",
                    if kept { "is not" } else { "is" }
                ));
            }
        }
    }
    Ok(())
}
