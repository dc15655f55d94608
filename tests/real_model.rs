//! End-to-end with the real small model: the app under a private Xvfb, driven over WebDriver as
//! a person drives it, with Qwen2.5-Coder-1.5B on llama.cpp's server (`scripts/small-model`)
//! doing a real exercise (`tests/exercism`, tests written by others) in the task's window, each
//! change approved in its dialog. Ignored unless asked for: `CODEWRIGHT_LOCAL_MODEL=1
//! scripts/test` (a task takes a minute or two on two cores).

mod support;

use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::small_model::Server;
use support::webdriver::Session;
use support::{cli, save_screenshot, Desktop};

const WAIT: Duration = Duration::from_secs(15);
/// What a task may take, as issue 34 asks of each.
const LIMIT: Duration = Duration::from_secs(300);

fn exercise(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/exercism")
        .join(name)
}

/// Whether the exercise's tests pass in `folder` (unittest: no pytest needed), and what they said.
fn tests_pass(folder: &Path, module: &str) -> (bool, String) {
    let out = std::process::Command::new("python3")
        .args(["-m", "unittest", "-q", &format!("{module}_test")])
        .current_dir(folder)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Until the run ends: approves each change and command the window asks about, as a person
/// would, and counts them.
fn approve_until_idle(app: &Session, started: Instant) -> usize {
    let mut approved = 0;
    loop {
        assert!(started.elapsed() < LIMIT, "the task took over {LIMIT:?}");
        let state = app.js(
            "const d = document.getElementById('approval-dialog');
             return d && d.open ? 'asking' : document.getElementById('composer-stop').hidden ? 'idle' : 'running'",
            json!([]),
        );
        match state.as_str() {
            Some("asking") => {
                let approve = app.find("#approval-approve");
                approve.click();
                approved += 1;
                // Until this one is answered: its button gone (the next one's is another).
                let asked = Instant::now();
                while approve.attached() {
                    assert!(asked.elapsed() < WAIT, "the approval was not answered");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            Some("idle") => return approved,
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

#[test]
#[ignore = "needs the small model: CODEWRIGHT_LOCAL_MODEL=1 scripts/test"]
fn a_real_small_model_implements_an_exercise_in_its_window() {
    let server = Server::start();
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("leap 闰年");
    std::fs::create_dir_all(&folder).unwrap();
    for file in ["leap.py", "leap_test.py", "INSTRUCTIONS.md"] {
        std::fs::copy(exercise("leap").join(file), folder.join(file)).unwrap();
    }
    assert!(!tests_pass(&folder, "leap").0, "the stub passes");
    cli(&data, &["projects", "add", folder.to_str().unwrap()]);
    let base_url = server.base_url();
    cli(
        &data,
        &[
            "providers",
            "add",
            "llama",
            "--protocol",
            "openai",
            "--base-url",
            &base_url,
        ],
    );
    cli(&data, &["models", "role", "main", "qwen@llama"]);

    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    let main = app.current_window();
    // A new task from the main window, in its own window; the request typed in its composer.
    app.find("#new-task-title").type_text("Leap years — 闰年");
    app.click("#new-task button[type=submit]");
    app.switch_to_new_window(std::slice::from_ref(&main), WAIT);
    let input = app.find("#composer-input");
    input.type_text(
        "Implement the stub in leap.py so that the tests in leap_test.py pass. The task is \
         described in INSTRUCTIONS.md. Run the tests with `python3 -m unittest leap_test` to \
         check your work.",
    );
    let started = Instant::now();
    input.type_text("\u{E007}");
    app.wait_until(
        "the run to start",
        WAIT,
        "return !document.getElementById('composer-stop').hidden || !!document.getElementById('approval-dialog').open",
        |v| v == true,
    );
    let approved = approve_until_idle(&app, started);
    let took = started.elapsed();

    let (passed, output) = tests_pass(&folder, "leap");
    let solution = std::fs::read_to_string(folder.join("leap.py")).unwrap();
    save_screenshot("real-model-leap", &app.screenshot());
    assert!(
        passed,
        "the tests fail after {took:?} ({approved} approved):\n{output}\n--- leap.py:\n{solution}"
    );
    assert!(approved >= 1, "no change was asked about");
    // What the window shows: the change in an edit's panel, done; the run's end not called a
    // failure; the task done in the main window too.
    let panels = app.js(
        "return [...document.querySelectorAll('.tool-panel')].map(p => p.dataset.tool + ':' + p.dataset.state).join(' ')",
        json!([]),
    );
    assert!(
        panels
            .as_str()
            .is_some_and(|p| p.contains("write_file:done") || p.contains("edit_file:done")),
        "{panels}"
    );
    let notices = app.js(
        "return [...document.querySelectorAll('.notice')].map(n => n.textContent).join(' | ')",
        json!([]),
    );
    assert!(
        !notices.as_str().unwrap_or_default().contains("not done"),
        "{notices}"
    );
    // A local model has no price: no "$0.0000" as if it were counted.
    let usage = app.js(
        "return document.getElementById('task-usage').textContent",
        json!([]),
    );
    assert!(!usage.as_str().unwrap().contains('$'), "{usage}");
    app.switch_to(&main);
    app.wait_until(
        "the task done in the main window",
        WAIT,
        "return document.querySelector('.task .badge')?.textContent ?? ''",
        |v| v == "Done",
    );
    save_screenshot("real-model-leap-main", &app.screenshot());
    app.quit();
}
