//! What commands cannot do: outlive the agent that started them (a `kill -9` of it included), or
//! read its secrets from their environment; and what they get back: the real-time limit it
//! started with.
//!
//! Each test runs this test binary again as the agent (`helper_agent`, which does nothing unless
//! [`HELPER`] is set), so that it can be killed or given an environment of its own.

mod common;

use codewright_protocol::{Decision, PermissionMode, ProjectSettings};
use common::{alive, Harness};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the helper does (`kill` or `env`); unset when this binary runs as the test suite.
const HELPER: &str = "CODEWRIGHT_ISOLATION_HELPER";
/// Where the helper writes what the test reads.
const HELPER_DIR: &str = "CODEWRIGHT_ISOLATION_DIR";

/// This binary, to run `helper_agent` only, as `mode`, writing into `dir`.
fn helper(mode: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["helper_agent", "--exact", "--nocapture", "--test-threads=1"])
        .env(HELPER, mode)
        .env(HELPER_DIR, dir)
        // Its project and data folders land where this test cleans up, even when it is killed.
        .env("TMPDIR", dir)
        .stdin(Stdio::null());
    cmd
}

/// Not a test of its own: the agent the tests below start (without [`HELPER`] it returns at once).
#[tokio::test]
async fn helper_agent() {
    let Ok(mode) = std::env::var(HELPER) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(HELPER_DIR).unwrap());
    // As both binaries start.
    codewright_tools::protect_own_environment();
    let h = Harness::new(PermissionMode::Normal);
    match mode.as_str() {
        "kill" => {
            // Each command writes its shell's pid and its sleep's pid (then renames the file, so
            // the test never reads half of it).
            let pids = |name: &str| {
                let file = dir.join(name);
                format!(
                    "echo $$ $! > '{0}.tmp' && mv '{0}.tmp' '{0}'",
                    file.display()
                )
            };
            h.decide([Decision::Approve, Decision::Approve]);
            let background = h
                .call(
                    "bash",
                    json!({"command": format!("sleep 97 & {}; wait", pids("background")), "background": true}),
                )
                .await;
            assert!(!background.is_error, "{}", background.text_content());
            // Runs until the test kills this process.
            h.call(
                "bash",
                json!({"command": format!("sleep 31 & {}; wait", pids("foreground"))}),
            )
            .await;
        }
        "env" => {
            h.store
                .lock()
                .unwrap()
                .set_project_settings(
                    h.session.project,
                    &ProjectSettings {
                        pass_env: vec!["CODEWRIGHT_TEST_TOKEN".into()],
                        ..Default::default()
                    },
                )
                .unwrap();
            h.decide([Decision::Approve]);
            let out = h.call("bash", json!({"command": "env"})).await;
            let text = out.text_content();
            assert!(!out.is_error, "{text}");
            assert!(
                !text.contains("sk-must-not-leak")
                    && !text.contains("hunter2")
                    && !text.contains("proxy-pw"),
                "{text}"
            );
            assert!(
                text.contains("CODEWRIGHT_TEST_TOKEN=let-through") && text.contains("PATH="),
                "{text}"
            );
            // Nothing started without the filter (WebKit's processes, git) inherits them, and this
            // process's own environment cannot be read by its commands; Codewright still reads
            // the key.
            let plain = Command::new("env").output().unwrap();
            let plain = String::from_utf8_lossy(&plain.stdout);
            assert!(plain.contains("PATH="), "{plain}");
            for secret in ["sk-must-not-leak", "hunter2", "let-through"] {
                assert!(!plain.contains(secret), "{plain}");
            }
            assert_eq!(
                codewright_tools::env_var("CODEWRIGHT_TEST_API_KEY").as_deref(),
                Some("sk-must-not-leak")
            );
            // A proxy stays where Codewright's own HTTP clients read it.
            assert!(std::env::var("HTTPS_PROXY").is_ok_and(|p| p.contains("proxy-pw")));
            // SAFETY: a query with no pointers.
            assert_eq!(unsafe { libc::prctl(libc::PR_GET_DUMPABLE) }, 0);
            // Proof for the test that this ran (a helper that matched nothing would pass too).
            std::fs::write(dir.join("checked"), "").unwrap();
        }
        "limits" => {
            // As the desktop does: the starting limits noted, then its own real-time limit
            // lowered for WebKit's threads.
            let soft = |limits: &str| {
                limits
                    .lines()
                    .find_map(|l| l.strip_prefix("Max realtime timeout"))
                    .and_then(|rest| rest.split_whitespace().next())
                    .unwrap()
                    .to_string()
            };
            let starting = soft(&std::fs::read_to_string("/proc/self/limits").unwrap());
            codewright_tools::reaper::remember_starting_limits();
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit and setrlimit only read and write the struct given.
            unsafe {
                libc::getrlimit(libc::RLIMIT_RTTIME, &mut limit);
                limit.rlim_cur = 50_000.min(limit.rlim_max);
                assert_eq!(libc::setrlimit(libc::RLIMIT_RTTIME, &limit), 0);
            }
            let own = soft(&std::fs::read_to_string("/proc/self/limits").unwrap());
            assert_ne!(own, starting, "the limit was not lowered");
            h.decide([Decision::Approve]);
            let out = h
                .call("bash", json!({"command": "cat /proc/self/limits"}))
                .await;
            assert!(!out.is_error, "{}", out.text_content());
            assert_eq!(soft(&out.text_content()), starting);
            std::fs::write(dir.join("checked"), "").unwrap();
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// `kill -9` of the agent while a command runs (`sleep 31`), with a background process
/// (`sleep 97`) started before: both process groups die with it, shells and sleeps alike.
#[test]
fn commands_die_with_a_killed_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = helper("kill", dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pids = |name: &str| -> Option<Vec<u32>> {
        let text = std::fs::read_to_string(dir.path().join(name)).ok()?;
        let pids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        (pids.len() == 2).then_some(pids)
    };
    let started = Instant::now();
    let commands: Vec<u32> = loop {
        if let (Some(background), Some(foreground)) = (pids("background"), pids("foreground")) {
            break background.into_iter().chain(foreground).collect();
        }
        if let Some(status) = agent.try_wait().unwrap() {
            panic!("the agent ended before its commands started: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the agent did not start its commands"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(commands.iter().all(|&pid| alive(pid)), "{commands:?}");

    agent.kill().unwrap(); // SIGKILL: nothing of the agent runs after this.
    agent.wait().unwrap();
    let killed = Instant::now();
    loop {
        let left: Vec<u32> = commands.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "still running 10 s after the agent was killed: {left:?} of {commands:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A command sees neither provider keys nor other secret-looking variables of the agent's
/// environment, except those the project lets through.
#[test]
fn commands_do_not_inherit_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let mut helper = helper("env", dir.path());
    helper
        .env("CODEWRIGHT_TEST_API_KEY", "sk-must-not-leak")
        .env("CODEWRIGHT_TEST_PASSWORD", "hunter2")
        .env("CODEWRIGHT_TEST_TOKEN", "let-through")
        .env("HTTPS_PROXY", "http://me:proxy-pw@127.0.0.1:9");
    passes(helper, dir.path());
}

/// Runs `helper` to its end and checks that it passed and did its check (in `dir`).
fn passes(mut helper: Command, dir: &Path) {
    let out = helper.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("checked").exists(), "the helper did not run");
}

/// The desktop lowers its own real-time limit for WebKit's threads; a command gets the limit the
/// process started with, as it would in a terminal.
#[test]
fn commands_get_the_real_time_limit_the_agent_started_with() {
    let dir = tempfile::tempdir().unwrap();
    passes(helper("limits", dir.path()), dir.path());
}
