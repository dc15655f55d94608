//! `exec` and `tasks show` through the built binary, against the scripted provider; and the kill
//! drill: `exec` SIGKILLed at random points of streaming, commands, file writes, compaction and
//! MCP calls, then resumed — no lost user message, no orphan call, no half-written file.

#[path = "../../agent/tests/common/mod.rs"]
mod common;

use common::{calls, text, tool_results, Reply, Server};
use serde_json::{json, Value};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

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
        let out = cli.run(&[
            "providers",
            "add",
            "scripted",
            "--protocol",
            "openai",
            "--base-url",
            &server.url,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        cli
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        c.arg("--home")
            .arg(self.home.path())
            .args(args)
            // The user's own skills and commands are looked for here, not in the real home.
            .env("HOME", self.home.path().join("user"))
            .current_dir(self.project.path());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().unwrap()
    }
    /// Adds the project folder as a project: its id.
    fn add_project(&self) -> String {
        let path = self.project.path().to_str().unwrap();
        let added = self.run(&["projects", "add", path, "--json"]).stdout;
        serde_json::from_slice::<Value>(&added).unwrap()["id"].to_string()
    }
    fn exec(&self, extra: &[&str]) -> Output {
        let mut args = vec!["exec", "--model", "test-model@scripted"];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_prints_text_and_tool_lines_or_json_events_and_uses_exit_codes() {
    let server = common::serve(Arc::new(|_, body: &Value| {
        let messages = body["messages"].as_array().unwrap();
        let answering_results = messages.last().unwrap()["role"] == "tool";
        let last = common::last_text(body);
        if answering_results {
            text(&format!(
                "Done after {} tool results.",
                tool_results(body).len()
            ))
        } else if last.contains("run a command") {
            calls(&[("bash", json!({"command": "touch ran.txt"}))])
        } else if last.contains("sleep") {
            calls(&[("bash", json!({"command": "sleep 30"}))])
        } else if last.contains("note") {
            calls(&[(
                "write_file",
                json!({"path": "notes/n.md", "content": "noted\n"}),
            )])
        } else {
            calls(&[("read_file", json!({"path": "a.txt"}))])
        }
    }))
    .await;
    let cli = Cli::new(&server);
    std::fs::write(cli.project.path().join("a.txt"), "alpha\n").unwrap();

    let out = cli.exec(&["Read a.txt"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text_out = stdout(&out);
    assert!(text_out.contains("[read_file]      1\talpha"), "{text_out}");
    assert!(
        text_out.ends_with("Done after 1 tool results.\n"),
        "{text_out}"
    );

    // The project was registered from the current folder; the task can be shown.
    let projects: Value =
        serde_json::from_slice(&cli.run(&["projects", "list", "--json"]).stdout).unwrap();
    let project = projects[0]["id"].to_string();
    let tasks: Value = serde_json::from_slice(
        &cli.run(&["tasks", "list", "--project", &project, "--json"])
            .stdout,
    )
    .unwrap();
    let task = tasks[0]["id"].to_string();
    assert_eq!(tasks[0]["title"], "Read a.txt");
    let shown = stdout(&cli.run(&["tasks", "show", &task]));
    assert!(
        shown.contains("── you\nRead a.txt")
            && shown.contains("→ read_file {\"path\":\"a.txt\"}")
            && shown.contains("✓      1\talpha"),
        "{shown}"
    );

    // JSON: one protocol event per line; continuing the same task.
    let out = cli.exec(&["--task", &task, "--json", "Read it again"]);
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"runStarted"));
    assert_eq!(events[0]["turn"], 2);
    assert!(
        types.contains(&"toolFinished") && types.contains(&"textDelta") && types.contains(&"usage")
    );
    assert_eq!(events.last().unwrap()["outcome"], "done");

    // What the task changed in the project folder, from its checkpoints.
    let said = stdout(&cli.run(&["tasks", "diff", &task]));
    assert!(said.contains("has changed no file yet"), "{said}");
    let out = cli.exec(&["--task", &task, "--mode", "yolo", "Write a note"]);
    assert_eq!(out.status.code(), Some(0));
    let said = stdout(&cli.run(&["tasks", "diff", &task, "--stat"]));
    assert!(
        said.contains("notes/n.md") && said.contains("1 files, +1 −0, in the project folder"),
        "{said}"
    );
    let said = stdout(&cli.run(&["tasks", "diff", &task]));
    assert!(
        said.contains("--- /dev/null\n+++ b/notes/n.md\n@@ -0,0 +1,1 @@\n+noted\n"),
        "{said}"
    );

    // No terminal: what needs approval is rejected with a reason the model sees.
    let out = cli.exec(&["--task", &task, "Please run a command"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!cli.project.path().join("ran.txt").exists());
    let last = server.requests().pop().unwrap();
    assert!(
        tool_results(&last)
            .last()
            .unwrap()
            .1
            .contains("no terminal to ask on"),
        "{last}"
    );

    // A model that cannot be used: the prompt of a new task is kept, and the error says where.
    let out = cli.run(&["exec", "--model", "nosuch@nowhere", "KEEP THIS PROMPT"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Your message is saved in task"), "{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout for an error");
    let tasks: Value = serde_json::from_slice(
        &cli.run(&["tasks", "list", "--project", &project, "--json"])
            .stdout,
    )
    .unwrap();
    let kept = tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "KEEP THIS PROMPT")
        .expect("the task")["id"]
        .to_string();
    let shown = stdout(&cli.run(&["tasks", "show", &kept]));
    assert!(shown.contains("── you\nKEEP THIS PROMPT"), "{shown}");
    // Continued with a model that works, the task goes on from the stored prompt.
    let out = cli.exec(&["--task", &kept]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // …and remembers that model: continuing again needs no --model.
    let out = cli.run(&["exec", "--task", &kept, "Read a.txt once more"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Usage errors exit 2; SIGINT stops a run and exits 130.
    assert_eq!(cli.exec(&[]).status.code(), Some(2));
    assert_eq!(cli.exec(&["--mode", "wild", "x"]).status.code(), Some(2));
    let child = cli
        .command(&[
            "exec",
            "--model",
            "test-model@scripted",
            "--mode",
            "yolo",
            "--task",
            &task,
            "Now sleep",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.assert_clean();
}

/// The text of the newest user message of a request.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// The file the edit points of the kill drill rewrite: every line names the same version.
fn drill_file(version: &str) -> String {
    (1..=400).map(|i| format!("{version} line {i}\n")).collect()
}

/// `Ok(version)` when every line of the drill file names one version: never half written.
fn drill_file_version(path: &std::path::Path) -> Result<String, String> {
    let Ok(content) = std::fs::read_to_string(path) else {
        return Ok("none".into()); // not created yet
    };
    let version = content.split(' ').next().unwrap_or_default().to_string();
    if content == drill_file(&version) {
        Ok(version)
    } else {
        Err(format!(
            "big.txt is neither old nor new ({} bytes)",
            content.len()
        ))
    }
}

/// Kill -9 of `exec` starting a new task, early: at fixed points of its first quarter second, and
/// just after its task appears in the database (while the model is looked up and MCP servers
/// start). A task it leaves always holds the prompt it is titled with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_task_killed_as_it_starts_keeps_its_prompt() {
    let server = common::serve(Arc::new(|_, _: &Value| text("An answer."))).await;
    let cli = Cli::new(&server);
    let project = cli.add_project();
    let db = rusqlite::Connection::open(cli.home.path().join("codewright.db")).unwrap();
    for k in 0..10u64 {
        let prompt = format!("early {k}");
        let mut child = cli
            .command(&["exec", "--model", "test-model@scripted", &prompt])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if k % 2 == 0 {
            tokio::time::sleep(Duration::from_millis(k * 25)).await;
        } else {
            // Its task exists: kill it 0–4 ms after.
            let started = std::time::Instant::now();
            while db
                .query_row(
                    "SELECT count(*) FROM tasks WHERE title = ?1",
                    [&prompt],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
                == 0
            {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "no task for {prompt}"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            tokio::time::sleep(Duration::from_millis(k % 5)).await;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    let tasks: Value = serde_json::from_slice(
        &cli.run(&["tasks", "list", "--project", &project, "--json"])
            .stdout,
    )
    .unwrap();
    let tasks = tasks.as_array().unwrap();
    assert!(
        tasks.len() >= 5,
        "the five killed after their task appeared: {tasks:?}"
    );
    for task in tasks {
        let shown = stdout(&cli.run(&["tasks", "show", &task["id"].to_string()]));
        let title = task["title"].as_str().unwrap();
        assert!(shown.contains(&format!("── you\n{title}")), "{shown}");
    }
}

/// The kill drill: `exec` SIGKILLed at random points while it streams, runs a command, writes a
/// file (and its checkpoint), compacts the conversation and calls an MCP server; then resumed.
/// Nothing the user sent is lost, every call has a result, the file is old or new and never half
/// written, and the database is intact. `CODEWRIGHT_DRILL_POINTS=N` sets the number of kills
/// (30 by default; the drill command in RELIABILITY.md runs 120), `CODEWRIGHT_DRILL_SEED=N`
/// replays a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_anywhere_then_resume_loses_nothing() {
    let server = common::serve(Arc::new(|_, body: &Value| {
        let messages = body["messages"].as_array().unwrap();
        if messages[0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("You compact the history"))
        {
            return Reply::Paced(
                Box::new(text(
                    "## Goal\nThe drill.\n## Progress\nSteps were taken, one by one, as asked.",
                )),
                15,
            );
        }
        if messages.last().unwrap()["role"] == "tool" {
            return Reply::Paced(
                Box::new(text(
                    "Finished this step; everything went as planned and the file is in place.",
                )),
                15,
            );
        }
        let asked = last_user_text(body);
        let version = asked
            .split_whitespace()
            .last()
            .unwrap_or("v")
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_string();
        let call = if asked.contains("edit ") {
            (
                "write_file",
                json!({"path": "big.txt", "content": drill_file(&format!("v{version}"))}),
            )
        } else if asked.contains("mcp ") {
            (
                "everything__echo",
                json!({"message": format!("echo {version}")}),
            )
        } else {
            (
                "bash",
                json!({"command": "sleep 0.1; echo step >> log.txt"}),
            )
        };
        Reply::Paced(
            Box::new(Reply::Calls(
                "Working on it.".into(),
                vec![(call.0.into(), call.1)],
            )),
            15,
        )
    }))
    .await;
    let cli = Cli::new(&server);
    let project = cli.add_project();
    let task: Value = serde_json::from_slice(
        &cli.run(&["tasks", "add", "--project", &project, "drill", "--json"])
            .stdout,
    )
    .unwrap();
    let task = task["id"].to_string();
    // A model with a small window: its runs compact the conversation before answering.
    let out = cli.run(&[
        "models",
        "add",
        "tiny@scripted",
        "--context",
        "12000",
        "--max-output",
        "1000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The reference MCP server, installed by `scripts/setup --test`.
    let servers = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/codewright/mcp-servers")
        });
    let everything =
        servers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(everything.exists(), "run ./scripts/setup --test first");
    let out = cli.run(&[
        "mcp",
        "add",
        "everything",
        "--",
        "node",
        everything.to_str().unwrap(),
        "stdio",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let big = cli.project.path().join("big.txt");

    let points: u64 = std::env::var("CODEWRIGHT_DRILL_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    // Random kill points, from a seed printed for a failing run to be replayed.
    let seed: u64 = std::env::var("CODEWRIGHT_DRILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("kill drill seed: {seed} (CODEWRIGHT_DRILL_SEED={seed} replays it)");
    let mut state = seed | 1;
    let mut random = move || {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut acknowledged = Vec::new();
    let mut last_got_going = false;
    let mut reached = std::collections::BTreeMap::<&str, u32>::new();
    for k in 0..points {
        let (kind, model) = match k % 4 {
            0 => ("step", "test-model@scripted"),
            1 => ("edit", "test-model@scripted"),
            2 => ("compact", "tiny@scripted"),
            _ => ("mcp", "test-model@scripted"),
        };
        let prompt = format!("{kind} {k}");
        let mut child = cli
            .command(&[
                "exec", "--model", model, "--mode", "yolo", "--task", &task, "--json", &prompt,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let output = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut printed = String::new();
            for line in std::io::BufReader::new(output)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("\"runStarted\"") {
                    let _ = started_tx.send(());
                }
                printed.push_str(&line);
                printed.push('\n');
            }
            printed
        });
        // One point in five lands in start-up (the MCP server starting); the others that far
        // into the run: streaming, the call, the answer.
        if k % 5 != 4 {
            tokio::task::block_in_place(|| started_rx.recv_timeout(Duration::from_secs(30)))
                .expect("the run did not start");
        }
        let at = 10 + random() % 900;
        tokio::time::sleep(Duration::from_millis(at)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let printed = reader.join().unwrap();
        let started = printed.lines().any(|l| l.contains("\"runStarted\""));
        // Killed mid-run (not after it finished).
        last_got_going = started && !printed.contains("\"runFinished\"");
        if started {
            acknowledged.push(prompt);
        }
        for (what, event) in [
            ("streaming", "\"textDelta\""),
            ("tool running", "\"toolRunning\""),
            ("tool finished", "\"toolFinished\""),
            ("compacting", "\"compacting\""),
        ] {
            if printed.contains(event) {
                *reached.entry(what).or_default() += 1;
            }
        }
        if let Err(e) = drill_file_version(&big) {
            panic!("after kill {k} ({at} ms into {kind}): {e}");
        }
    }
    eprintln!("kill drill: {points} kills; runs that got as far as: {reached:?}");
    assert!(
        acknowledged.len() as u64 >= points / 2,
        "most runs got going: {acknowledged:?}"
    );

    // A run killed mid-way shows as interrupted, not as still running.
    if last_got_going {
        let shown: Value =
            serde_json::from_slice(&cli.run(&["tasks", "show", &task, "--json"]).stdout).unwrap();
        assert_eq!(shown["task"]["status"], "interrupted");
    }

    // The database survived every kill.
    let db = rusqlite::Connection::open(cli.home.path().join("codewright.db")).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    drop(db);

    // Resume with one message: it works, and says the last run was interrupted.
    let out = cli.exec(&["--task", &task, "--mode", "yolo", "--json", "finish up"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = stdout(&out);
    assert!(events.contains("\"outcome\":\"done\""));
    if last_got_going {
        assert!(
            events.contains("was interrupted"),
            "the resumed run says the last one was interrupted: {events}"
        );
    }

    let shown: Value =
        serde_json::from_slice(&cli.run(&["tasks", "show", &task, "--json"]).stdout).unwrap();
    let history: Vec<codewright_protocol::MessageRecord> =
        serde_json::from_value(shown["messages"].clone()).unwrap();
    let users: Vec<String> = history
        .iter()
        .filter(|r| r.message.role == codewright_protocol::Role::User)
        .map(|r| r.message.text())
        .collect();
    for prompt in &acknowledged {
        assert!(users.contains(prompt), "{prompt} was lost: {users:?}");
    }
    assert!(history.iter().all(|r| r.complete), "nothing left streaming");
    let messages: Vec<codewright_protocol::Message> =
        history.iter().map(|r| r.message.clone()).collect();
    let (_, repairs) = codewright_protocol::answer_every_call(&messages, "x");
    assert!(
        repairs.answered.is_empty(),
        "orphan calls: {:?}",
        repairs.answered
    );
    assert_eq!(repairs.dropped_results, 0);
    assert_eq!(shown["task"]["status"], "done");
    drill_file_version(&big).unwrap();
    server.assert_clean();
}

/// A command that prints 300 MB, run through `exec --json` (issue 12 found 2.1 GB of progress
/// events on stdout, and a result without the command's end): the events stay small, and the
/// model gets the true end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_through_exec_json_stays_small_and_keeps_its_end() {
    let server = common::serve(Arc::new(|_, body: &Value| {
        if body["messages"].as_array().unwrap().last().unwrap()["role"] == "tool" {
            text("Printed it.")
        } else {
            calls(&[(
                "bash",
                json!({"command": "yes abcdefghij | head -c 300000000; echo END_MARKER_XYZ"}),
            )])
        }
    }))
    .await;
    let cli = Cli::new(&server);
    let started = std::time::Instant::now();
    let out = cli.exec(&["--mode", "yolo", "--json", "Print a lot"]);
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = out.stdout.len();
    // At most one progress event every 100 ms, each at most 24 KB (32 KB as JSON), however long
    // a busy machine takes.
    let bound = (took.as_millis() as usize / 100 + 2) * (32 << 10) + (64 << 10);
    assert!(
        printed <= bound,
        "{printed} bytes of events for 300 MB of output in {took:?}"
    );
    let results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| tool_results(r).into_iter().map(|(_, t)| t))
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].ends_with("END_MARKER_XYZ\n[exit code 0]") && results[0].len() < 64 << 10,
        "{} bytes, ending {:?}",
        results[0].len(),
        &results[0][results[0].len().saturating_sub(300)..]
    );
    eprintln!(
        "300 MB of output: {printed} bytes of events, a result of {} bytes",
        results[0].len()
    );
}

/// The secrets drill: with a provider key, a token and a database URL with a password in the
/// environment, a model that prints the environment gets none of them, and none reaches the
/// events, the output or the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_model_the_events_or_the_database() {
    const KEY: &str = "sk-drill-7f3a9c1e";
    const TOKEN: &str = "ghp-drill-55aa";
    const PASSWORD: &str = "pw-drill-0b1d";
    let server = common::serve(Arc::new(|_, body: &Value| {
        if body["messages"].as_array().unwrap().last().unwrap()["role"] == "tool" {
            text("Printed it.")
        } else {
            calls(&[("bash", json!({"command": "printenv; env | sort"}))])
        }
    }))
    .await;
    let cli = Cli::new(&server);
    let out = cli.run(&[
        "providers",
        "add",
        "keyed",
        "--protocol",
        "openai",
        "--base-url",
        &server.url,
        "--api-key-env",
        "CODEWRIGHT_DRILL_KEY",
    ]);
    assert!(out.status.success());
    let out = cli
        .command(&[
            "exec",
            "--model",
            "test-model@keyed",
            "--mode",
            "yolo",
            "--json",
            "Print the environment",
        ])
        .env("CODEWRIGHT_DRILL_KEY", KEY)
        .env("GITHUB_TOKEN", TOKEN)
        .env("DATABASE_URL", format!("postgres://app:{PASSWORD}@db/app"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| tool_results(r).into_iter().map(|(_, t)| t))
        .collect();
    assert!(
        results.iter().any(|t| t.contains("PATH=")),
        "the environment was printed: {results:?}"
    );
    let mut places = vec![
        (
            "the model's requests".to_string(),
            serde_json::to_vec(&server.requests()).unwrap(),
        ),
        ("stdout".into(), out.stdout.clone()),
        ("stderr".into(), out.stderr.clone()),
    ];
    // Every file of the data folder, those in its subfolders (checkpoints, attachments) too.
    let mut folders = vec![cli.home.path().to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.is_file() {
                places.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    for (place, bytes) in &places {
        let text = String::from_utf8_lossy(bytes);
        for secret in [KEY, TOKEN, PASSWORD] {
            assert!(!text.contains(secret), "{secret} leaked into {place}");
        }
    }
    server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slash_command_runs_as_its_prompt_and_an_unknown_one_names_the_closest() {
    let server = common::serve(Arc::new(|_, _: &Value| text("Fixed."))).await;
    let cli = Cli::new(&server);
    let commands = cli.home.path().join("user/.claude/commands/gh");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("fix.md"),
        "---\ndescription: Fix a GitHub issue\nargument-hint: ISSUE\n---\nFix issue #$1 and add a test ($ARGUMENTS).\n",
    )
    .unwrap();
    let out = cli.exec(&["/gh:fix 42 quickly"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(
        common::last_text(&requests[0]),
        "Fix issue #42 and add a test (42 quickly)."
    );
    // The built-in /review is a prompt too; //… is a message that starts with /.
    let out = cli.exec(&["/review the parser"]);
    assert!(out.status.success());
    let review = common::last_text(&server.requests()[1]);
    assert!(
        review.starts_with("Review the changes in the working tree")
            && review.ends_with("the parser"),
        "{review}"
    );
    assert!(cli.exec(&["//tmp is full"]).status.success());
    assert_eq!(common::last_text(&server.requests()[2]), "/tmp is full");

    let out = cli.exec(&["/gh:fxi 42"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codewright-cli: There is no command /gh:fxi. Did you mean /gh:fix? To send a message that starts with /, begin it with //.\n"
    );
    assert_eq!(
        server.requests().len(),
        3,
        "an unknown command reaches no model"
    );
    let help = stdout(&cli.exec(&["/help"]));
    assert!(
        help.contains("/gh:fix ISSUE") && help.contains("Fix a GitHub issue (user (.claude))"),
        "{help}"
    );
    // Only the three runs' tasks exist: /help and the unknown command stored nothing.
    let tasks: Value = serde_json::from_slice(
        &cli.run(&["tasks", "list", "--project", "1", "--json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(tasks.as_array().unwrap().len(), 3, "{tasks}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_files_are_listed_implemented_one_by_one_and_marked_done() {
    // TASK-002's run fails (the model answers 500 with a request error): it stays pending and
    // --implement-all stops there.
    let server = common::serve(Arc::new(|_, body: &Value| {
        if common::last_text(body).contains("(id TASK-002)") {
            Reply::Status(400, r#"{"error":{"message":"bad request"}}"#.into())
        } else {
            text("Implemented.")
        }
    }))
    .await;
    let cli = Cli::new(&server);
    let tasks = cli.project.path().join(".ayder/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join("TASK-001-notes.md"), "# Fix the notes\n\n- **ID:** TASK-001\n- **Status:** pending\n\nThe notes lose their last line.\n").unwrap();
    std::fs::write(
        tasks.join("TASK-002-login.md"),
        "# Add login\n\n- **Status:** pending\n",
    )
    .unwrap();
    std::fs::write(
        tasks.join("TASK-003-docs.md"),
        "---\nstatus: pending\n---\n# Write docs\n",
    )
    .unwrap();

    let out = cli.exec(&["--implement", "TASK-009"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codewright-cli: there is no task file TASK-009; the project's are: TASK-001, TASK-002, TASK-003\n"
    );
    let out = cli.exec(&["--implement", "TASK-001"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompt = common::last_text(&server.requests()[0]);
    assert!(prompt.starts_with("Implement the task in the task file .ayder/tasks/TASK-001-notes.md (id TASK-001):\n\n# Fix the notes"), "{prompt}");
    assert!(std::fs::read_to_string(tasks.join("TASK-001-notes.md"))
        .unwrap()
        .contains("- **Status:** done\n"));

    let out = cli.exec(&["--implement-all"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("TASK-002 did not finish; its file stays as it was"));
    assert!(std::fs::read_to_string(tasks.join("TASK-002-login.md"))
        .unwrap()
        .contains("- **Status:** pending"));
    assert!(
        std::fs::read_to_string(tasks.join("TASK-003-docs.md"))
            .unwrap()
            .contains("status: pending"),
        "stopped before TASK-003"
    );
    let listed = stdout(&cli.run(&["tasks", "files", "--project", "1"]));
    let lines: Vec<&str> = listed.lines().collect();
    assert!(
        lines[1].starts_with("TASK-001  done")
            && lines[1].contains("Fix the notes")
            && lines[1].ends_with(".ayder/tasks/TASK-001-notes.md"),
        "{listed}"
    );
    assert!(lines[2].starts_with("TASK-002  pending"), "{listed}");
    // Each file ran in a task of its own, titled by its id and title.
    let tasks: Value = serde_json::from_slice(
        &cli.run(&["tasks", "list", "--project", "1", "--json"])
            .stdout,
    )
    .unwrap();
    let titles: Vec<&str> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"TASK-001: Fix the notes") && titles.contains(&"TASK-002: Add login"),
        "{titles:?}"
    );
    // In JSON every path is a full one, the broken files' as the others'.
    std::fs::write(
        cli.project.path().join(".ayder/tasks/copy.md"),
        "# Again

- **ID:** TASK-001
",
    )
    .unwrap();
    let listed: Value = serde_json::from_slice(
        &cli.run(&["tasks", "files", "--project", "1", "--json"])
            .stdout,
    )
    .unwrap();
    let paths: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .chain(listed["broken"].as_array().unwrap())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 4, "{listed}");
    assert!(
        paths.iter().all(|p| std::path::Path::new(p).is_absolute()),
        "{listed}"
    );
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `exec --worktree` runs the task on a branch of its own; `tasks diff`, `commit`, `merge`,
/// `discard` and `restore` carry its work to the base or keep it — the project folder is
/// untouched until the merge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_a_worktree_is_reviewed_committed_merged_discarded_and_restored() {
    let server = common::serve(Arc::new(|_, body: &Value| {
        let messages = body["messages"].as_array().unwrap();
        if messages.last().unwrap()["role"] == "tool" {
            text("Wrote it.")
        } else if common::last_text(body).contains("notes") {
            calls(&[(
                "write_file",
                json!({"path": "notes.md", "content": "# Notes\n"}),
            )])
        } else {
            calls(&[(
                "write_file",
                json!({"path": "draft.md", "content": "draft\n"}),
            )])
        }
    }))
    .await;
    let cli = Cli::new(&server);
    let repo = cli.project.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("app.py"), "print('hi')\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "first"]);
    let identity = [
        ("GIT_AUTHOR_NAME", "Test"),
        ("GIT_AUTHOR_EMAIL", "test@example.com"),
        ("GIT_COMMITTER_NAME", "Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.com"),
    ];
    let run = |args: &[&str]| {
        let mut command = cli.command(args);
        command
            .envs(identity)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    let out = cli.exec(&["--worktree", "--mode", "yolo", "Write the notes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("on branch codewright/write-the-notes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !repo.join("notes.md").exists(),
        "the task wrote in the project folder"
    );

    let stat = stdout(&run(&["tasks", "diff", "1", "--stat"]));
    assert!(
        stat.contains("notes.md") && stat.contains("1 not committed"),
        "{stat}"
    );
    let patch = stdout(&run(&["tasks", "diff", "1"]));
    assert!(patch.contains("+# Notes"), "{patch}");

    let merge = run(&["tasks", "merge", "1"]);
    assert!(!merge.status.success());
    assert!(
        String::from_utf8_lossy(&merge.stderr).contains("commit them first"),
        "{}",
        String::from_utf8_lossy(&merge.stderr)
    );
    let commit = run(&["tasks", "commit", "1", "-m", "Add notes"]);
    assert!(
        commit.status.success(),
        "{}",
        String::from_utf8_lossy(&commit.stderr)
    );
    let merged = run(&["tasks", "merge", "1", "--json"]);
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(merged["fastForward"], true);
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.md")).unwrap(),
        "# Notes\n"
    );
    assert_eq!(git(repo, &["log", "-1", "--format=%s"]), "Add notes");

    // A pull request: GitHub's command line signed out says what to do and pushes nothing;
    // signed in, the branch is pushed and the pull request's address kept on the task.
    let remote = cli.home.path().join("remote.git");
    git(
        cli.home.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let bin = cli.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = |script: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(bin.join("gh"), script).unwrap();
        std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let pr = |args: &[&str]| {
        let mut command = cli.command(args);
        command
            .envs(identity)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    gh("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.0';; *) exit 1;; esac\n");
    let out = pr(&["tasks", "pr", "1", "--title", "Add notes"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && said.contains("gh auth login")
            && said.contains("git push -u origin codewright/write-the-notes"),
        "{said}"
    );
    assert_eq!(
        git(&remote, &["branch", "--list"]),
        "",
        "pushed while signed out"
    );
    let asked = cli.home.path().join("gh-asked");
    gh(&format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\ncase \"$1 $2\" in\n'pr create') echo 'https://github.com/o/r/pull/7';;\n'pr checks') echo '[{{\"name\":\"build\",\"bucket\":\"pass\",\"link\":\"https://ci/1\"}},{{\"name\":\"test\",\"bucket\":\"fail\",\"link\":\"https://ci/2\"}},{{\"name\":\"lint\",\"bucket\":\"pending\",\"link\":\"\"}}]'; echo 'Some checks were not successful' >&2; exit 1;;\nesac\n",
        asked.display()
    ));
    let out = pr(&[
        "tasks",
        "pr",
        "1",
        "--title",
        "Add notes",
        "--body",
        "Notes.",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("https://github.com/o/r/pull/7"));
    assert!(git(&remote, &["branch", "--list"]).contains("codewright/write-the-notes"));
    let gh_args = std::fs::read_to_string(&asked).unwrap();
    assert!(
        gh_args.contains("pr create --title Add notes --body Notes. --base main --head codewright/write-the-notes"),
        "{gh_args}"
    );
    let tasks: Value =
        serde_json::from_slice(&run(&["tasks", "list", "--project", "1", "--json"]).stdout)
            .unwrap();
    assert_eq!(
        tasks[0]["worktree"]["pullRequest"]
            .as_str()
            .or(tasks[1]["worktree"]["pullRequest"].as_str()),
        Some("https://github.com/o/r/pull/7")
    );
    // Its checks, as gh reports them (gh fails while one failed, and says so: still read).
    let out = pr(&["tasks", "checks", "1", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checks: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&checks["passed"], &checks["failed"], &checks["pending"]),
        (&json!(1), &json!(1), &json!(1)),
        "{checks}"
    );
    assert_eq!(checks["failing"][0]["name"], "test");
    assert!(stdout(&pr(&["tasks", "checks", "1"])).contains("1 passed, 1 failed, 1 pending"));

    // A second task's draft is discarded (not without --yes off a terminal) and restored.
    let out = cli.exec(&["--worktree", "--mode", "yolo", "Write a draft"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refused = run(&["tasks", "discard", "2"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("draft.md") && said.contains("--yes"),
        "{said}"
    );
    let discarded = run(&["tasks", "discard", "2", "--yes"]);
    assert!(
        discarded.status.success(),
        "{}",
        String::from_utf8_lossy(&discarded.stderr)
    );
    assert!(stdout(&discarded).contains("refs/codewright/archive/2"));
    let restored = run(&["tasks", "restore", "2"]);
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let review: Value =
        serde_json::from_slice(&run(&["tasks", "diff", "2", "--json"]).stdout).unwrap();
    assert_eq!(review["status"]["uncommitted"], json!(["draft.md"]));
    assert_eq!(git(repo, &["status", "--porcelain"]), "");
}

/// A run that ends while a check the message named still fails is not done, and says so: on
/// stderr, in `--json`'s `runFinished` (`work.failing`), and in the exit status (3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_ending_with_a_named_check_failing_says_the_task_is_not_done() {
    let server = common::serve(Arc::new(|_, _: &Value| text("Done."))).await;
    let cli = Cli::new(&server);
    std::fs::write(cli.project.path().join("check.sh"), "exit 1\n").unwrap();
    // A local model with a small window: Codewright runs the checks its message names.
    let out = cli.run(&["models", "add", "tiny@scripted", "--context", "16000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompt = "Make the check pass; check with `sh check.sh`.";
    let run = |extra: &[&str]| {
        let mut args = vec!["exec", "--model", "tiny@scripted", "--mode", "yolo"];
        args.extend_from_slice(extra);
        args.push(prompt);
        cli.run(&args)
    };
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the task is not done: `sh check.sh` still fails"),
        "{stderr}"
    );
    let out = run(&["--json"]);
    assert_eq!(out.status.code(), Some(3));
    let finished = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "runFinished")
        .expect("a runFinished event");
    assert_eq!(finished["work"]["failing"], json!(["sh check.sh"]));

    // Once it passes, the same run is done.
    std::fs::write(cli.project.path().join("check.sh"), "exit 0\n").unwrap();
    let out = run(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
