//! Real tasks with a real small model, end to end: Qwen2.5-Coder-1.5B-Instruct on llama.cpp's
//! `llama-server` (both from `scripts/small-model`), on Exercism exercises (`tests/exercism`)
//! with tests written by others. `exec` gets the exercise as a user would give it and must leave
//! code that passes the exercise's tests. Ignored unless asked for:
//! `CODEWRIGHT_LOCAL_MODEL=1 scripts/test` downloads the model and the server (about 1.6 GB, a
//! minute here) and runs them; each task takes one to three minutes on two cores.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const IGNORED: &str = "needs the small model: CODEWRIGHT_LOCAL_MODEL=1 scripts/test";
/// What a task may take, as the issue asks of each.
const LIMIT: Duration = Duration::from_secs(300);

/// The server, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts llama-server with greedy sampling (the same answer each run) and waits for the
    /// model to load.
    fn start() -> Server {
        let binary = std::env::var("CODEWRIGHT_SMALL_MODEL_SERVER")
            .unwrap_or_else(|_| panic!("{IGNORED} (CODEWRIGHT_SMALL_MODEL_SERVER is not set)"));
        let gguf = std::env::var("CODEWRIGHT_SMALL_MODEL_GGUF").expect(IGNORED);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary)
            .args([
                "-m", &gguf, "-ngl", "0", "-t", "2", "--jinja", "-c", "16384",
            ])
            .args([
                "-np",
                "1",
                "--temp",
                "0",
                "--seed",
                "42",
                "--host",
                "127.0.0.1",
            ])
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(180);
        while !server.ready() {
            assert!(Instant::now() < deadline, "llama-server did not start");
            std::thread::sleep(Duration::from_millis(250));
        }
        server
    }

    /// `/health` answers 200 once the model is loaded (503 while it loads).
    fn ready(&self) -> bool {
        let Ok(mut sock) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = sock.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let mut head = String::new();
        let _ = BufReader::new(sock).read_line(&mut head);
        head.contains(" 200 ")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exercise(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/exercism")
        .join(name)
}

/// Whether the exercise's tests pass in `folder` (unittest: no pytest needed).
fn tests_pass(folder: &Path, module: &str) -> (bool, String) {
    let out = Command::new("python3")
        .args(["-m", "unittest", "-q", &format!("{module}_test")])
        .current_dir(folder)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Gives `exec` the exercise the way the comparison did, and checks its tests after.
fn solves(server: &Server, name: &str) {
    let module = name.replace('-', "_");
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    for file in [
        format!("{module}.py"),
        format!("{module}_test.py"),
        "INSTRUCTIONS.md".into(),
    ] {
        std::fs::copy(exercise(name).join(&file), project.path().join(&file)).unwrap();
    }
    assert!(!tests_pass(project.path(), &module).0, "the stub passes");
    let cli = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        c.arg("--home").arg(home.path()).args(args);
        c.current_dir(project.path()).stdin(Stdio::null());
        c
    };
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let added = cli(&["providers", "add", "llama", "--protocol", "openai"])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let prompt = format!(
        "Implement the stub in {module}.py so that the tests in {module}_test.py pass. The task is \
         described in INSTRUCTIONS.md. Run the tests with `python3 -m unittest {module}_test` to \
         check your work."
    );
    let started = Instant::now();
    let mut child = cli(&[
        "--json",
        "exec",
        "--mode",
        "yolo",
        "--model",
        "qwen@llama",
        &prompt,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let events = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .collect::<Vec<_>>()
    });
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.wait();
    let events = events.join().unwrap();
    let took = started.elapsed();
    let (passed, output) = tests_pass(project.path(), &module);
    let solution = std::fs::read_to_string(project.path().join(format!("{module}.py"))).unwrap();
    assert!(
        passed,
        "{name}: the tests fail after {took:?}:\n{output}\n--- {module}.py:\n{solution}"
    );
    assert!(took < LIMIT, "{name} took {took:?}");
    let finished = events
        .iter()
        .find(|e| e["type"] == "runFinished")
        .expect("the run finished");
    assert!(finished["work"]["edits"].as_u64() >= Some(1), "{finished}");
}

#[test]
#[ignore = "needs the small model: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn the_small_model_solves_leap() {
    solves(&Server::start(), "leap");
}

#[test]
#[ignore = "needs the small model: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn the_small_model_solves_pangram() {
    solves(&Server::start(), "pangram");
}
