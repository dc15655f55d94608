//! Benchmarks the search tools against ripgrep on the same tree, side by side in one run, and
//! `edit_file` on a 5 MB file. Run through `scripts/bench-tools.py`, which builds the tree.
//!
//! Usage: bench_tools TREE RUNS

use codewright_protocol::PermissionMode;
use codewright_store::Store;
use codewright_tools::{CallContext, NonInteractive, Registry, Session, SessionConfig};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tree = Path::new(&args[1]).canonicalize().expect("tree exists");
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let session = open_session(home.path(), &tree, PermissionMode::Normal);
    let registry = Registry::builtin();
    let call = |tool: &str, input: serde_json::Value| {
        let cx = CallContext::new(session.clone(), tool);
        let out = runtime.block_on(registry.call(tool, &input.to_string(), &cx));
        assert!(!out.is_error, "{}", out.text_content());
        out
    };

    let pattern = r"needle_[0-9]+\(";
    let grep_rg = || {
        let out = Command::new("rg")
            .args(["-n", pattern])
            .arg(&tree)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let grep_ours = || {
        let out = call("grep", json!({"pattern": pattern, "max_results": 5000}));
        out.text_content()
            .lines()
            .filter(|l| l.starts_with("  "))
            .count()
    };
    assert_eq!(grep_rg(), grep_ours(), "both find the same lines");
    let glob_rg = || {
        let out = Command::new("rg")
            .args(["--files", "-g", "file99*.rs"])
            .arg(&tree)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let glob_ours = || {
        let out = call("glob", json!({"pattern": "**/file99*.rs"}));
        out.text_content().lines().count()
    };

    println!(
        "tree: {} ({runs} runs each, interleaved; median)",
        tree.display()
    );
    for (name, cold) in [("grep, warm cache", false), ("grep, cold cache", true)] {
        let (ours, rg) = compare(runs, cold, &tree, &grep_ours, &grep_rg);
        report(name, ours, rg);
    }
    assert_eq!(glob_rg(), glob_ours(), "both find the same files");
    let (ours, rg) = compare(runs, false, &tree, &glob_ours, &glob_rg);
    report(
        "glob **/file99*.rs vs rg --files -g 'file99*.rs', warm",
        ours,
        rg,
    );

    // edit_file on a 5 MB file: read it, then replace one line near the end (yolo: no approval).
    let project = tempfile::tempdir().unwrap();
    let big = project.path().join("big.rs");
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 5 * 1024 * 1024 {
        text.push_str(&format!(
            "    let value_{i} = compute({i}, \"some text here\");\n"
        ));
        i += 1;
    }
    std::fs::write(&big, &text).unwrap();
    let edit_session = open_session(home.path(), project.path(), PermissionMode::Yolo);
    let edit_call = |tool: &str, input: serde_json::Value| {
        let cx = CallContext::new(edit_session.clone(), tool);
        let out = runtime.block_on(registry.call(tool, &input.to_string(), &cx));
        assert!(!out.is_error, "{}", out.text_content());
    };
    edit_call(
        "read_file",
        json!({"path": "big.rs", "offset": 1, "limit": 1}),
    );
    let mut times = Vec::new();
    for run in 0..runs.max(5) {
        let (from, to) = if run % 2 == 0 {
            ("compute(", "calculate(")
        } else {
            ("calculate(", "compute(")
        };
        let line = i - 10;
        let start = Instant::now();
        edit_call(
            "edit_file",
            json!({"path": "big.rs", "old_string": format!("value_{line} = {from}"), "new_string": format!("value_{line} = {to}")}),
        );
        times.push(start.elapsed());
    }
    println!(
        "edit_file, one line of a {:.1} MB file: median {:.1} ms (read, match, diff, checkpoint, atomic write)",
        text.len() as f64 / 1048576.0,
        ms(median(times))
    );
}

fn open_session(home: &Path, root: &Path, mode: PermissionMode) -> Arc<Session> {
    let store = Store::open_in(home).unwrap();
    let project = match store.add_project(root, None) {
        Ok(p) => p,
        Err(_) => store
            .projects()
            .unwrap()
            .into_iter()
            .find(|p| Path::new(&p.root_path) == root)
            .unwrap(),
    };
    let task = store.add_task(project.id, "bench").unwrap();
    Session::new(
        SessionConfig {
            task: task.id,
            project: project.id,
            root: root.to_path_buf(),
            home: home.to_path_buf(),
            mode,
            sandbox: false,
            allow_private_network: false,
            rules: vec![],
        },
        Arc::new(Mutex::new(store)),
        Arc::new(NonInteractive),
    )
    .unwrap()
}

/// Runs both, alternating which goes first; returns the medians.
fn compare(
    runs: usize,
    cold: bool,
    tree: &Path,
    ours: &dyn Fn() -> usize,
    theirs: &dyn Fn() -> usize,
) -> (Duration, Duration) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let order: [(&dyn Fn() -> usize, &mut Vec<Duration>); 2] = if run % 2 == 0 {
            [(ours, &mut a), (theirs, &mut b)]
        } else {
            [(theirs, &mut b), (ours, &mut a)]
        };
        for (f, times) in order {
            if cold {
                evict(tree);
            }
            let start = Instant::now();
            f();
            times.push(start.elapsed());
        }
    }
    (median(a), median(b))
}

fn report(name: &str, ours: Duration, rg: Duration) {
    println!(
        "{name}: codewright {:.0} ms, rg {:.0} ms, ratio {:.2}x",
        ms(ours),
        ms(rg),
        ours.as_secs_f64() / rg.as_secs_f64()
    );
}

/// Drops the tree's files from the page cache (posix_fadvise DONTNEED; no root needed).
fn evict(tree: &Path) {
    use std::os::fd::AsRawFd;
    for entry in ignore::WalkBuilder::new(tree)
        .hidden(false)
        .ignore(false)
        .git_ignore(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(f) = std::fs::File::open(entry.path()) {
                // SAFETY: plain syscall on an open descriptor.
                unsafe {
                    libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
                }
            }
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
