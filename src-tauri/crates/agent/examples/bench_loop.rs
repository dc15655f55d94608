//! Benchmarks the agent loop against the scripted provider with zero latency, side by side with
//! its parts measured alone, so the loop's own overhead per tool round trip is what is left:
//! for each round trip, overhead = round trip − (its own request replayed alone, median of 3) −
//! (the median of the same tool call alone); its p50 and p99 are reported.
//! With a path to a release `codewright-cli`, also measures `exec` cold start to the first
//! request and the peak RSS of a 50-turn `exec`.
//!
//! Usage: bench_loop [ROUND_TRIPS] [CODEWRIGHT_CLI]

#[path = "../tests/common/mod.rs"]
mod common;

use codewright_llm::{Client, RetryPolicy};
use codewright_protocol::{AgentEvent, PermissionMode};
use codewright_tools::{CallContext, NonInteractive, Registry, Session, SessionConfig};
use common::{calls, text, World};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let cli = args.get(2).cloned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let rounds = n;
        let world = World::with_config(
            Arc::new(move |i, _body: &Value| {
                if i < rounds {
                    calls(&[("list_dir", json!({}))])
                } else {
                    text("done")
                }
            }),
            codewright_agent::AgentConfig {
                max_iterations: rounds as u32 + 1,
                ..Default::default()
            },
        )
        .await;

        // The loop: one task, `n` round trips.
        let (handle, mut rx) = world.start(world.task, Some("go"), PermissionMode::Normal);
        let mut starts = Vec::new();
        while let Some(event) = rx.recv().await {
            if let AgentEvent::Request { .. } = event {
                starts.push(Instant::now());
            }
            if let AgentEvent::RunFinished { .. } = event {
                starts.push(Instant::now());
            }
        }
        handle.wait().await;
        let mut round_trips: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        round_trips.pop(); // the final answer, not a round trip

        // Each round trip's HTTP exchange alone: its own request body replayed (3 times, the
        // median kept), so a longer history costs the exchange, not the loop.
        let bodies = world.server.requests();
        let client = Client::new(RetryPolicy::default());
        let model = world.model();
        let mut http = Vec::new();
        for body in bodies.iter().take(round_trips.len()) {
            let mut times = Vec::new();
            for _ in 0..3 {
                let cancel = tokio_util::sync::CancellationToken::new();
                let start = Instant::now();
                let _ = client
                    .stream(
                        &model.provider,
                        None,
                        "test-model",
                        body,
                        &cancel,
                        &mut |_, _| {},
                    )
                    .await;
                times.push(start.elapsed());
            }
            times.sort();
            http.push(times[1]);
        }
        // The same tool call alone.
        let project = world.store.lock().unwrap().projects().unwrap()[0].id;
        let session = Session::new(
            SessionConfig {
                task: world.task,
                project,
                root: world.project.path().to_path_buf(),
                home: world.home.path().to_path_buf(),
                mode: PermissionMode::Normal,
                sandbox: false,
                allow_private_network: false,
                rules: vec![],
            },
            world.store.clone(),
            Arc::new(NonInteractive),
        )
        .unwrap();
        let registry = Registry::builtin();
        let mut tool = Vec::new();
        for _ in 0..n {
            let cx = CallContext::new(session.clone(), "list_dir");
            let start = Instant::now();
            registry.call("list_dir", "{}", &cx).await;
            tool.push(start.elapsed());
        }
        let (t50, t99) = (pct(&mut tool, 50), pct(&mut tool, 99));
        // Each round trip's overhead: what is left after its own HTTP exchange and the median
        // tool call (the tool's variation is charged to the loop).
        let mut overhead: Vec<Duration> = round_trips
            .iter()
            .zip(&http)
            .map(|(rt, h)| rt.saturating_sub(*h + t50))
            .collect();
        let (h50, h99) = (pct(&mut http, 50), pct(&mut http, 99));
        if std::env::var_os("BENCH_DEBUG").is_some() {
            for (i, o) in overhead.iter().enumerate() {
                eprintln!("{i} {:.3}", ms(*o));
            }
        }
        let (rt50, rt99) = (pct(&mut round_trips, 50), pct(&mut round_trips, 99));
        println!("round trips: {n} (list_dir against a zero-latency local provider)");
        println!(
            "  whole round trip   p50 {:>7.3} ms  p99 {:>7.3} ms",
            ms(rt50),
            ms(rt99)
        );
        println!(
            "  HTTP exchange alone p50 {:>7.3} ms  p99 {:>7.3} ms",
            ms(h50),
            ms(h99)
        );
        println!(
            "  tool call alone    p50 {:>7.3} ms  p99 {:>7.3} ms",
            ms(t50),
            ms(t99)
        );
        println!(
            "  loop overhead      p50 {:>7.3} ms  p99 {:>7.3} ms   (each round trip − its HTTP exchange − median tool)",
            ms(pct(&mut overhead, 50)),
            ms(pct(&mut overhead, 99))
        );

        if let Some(cli) = cli {
            exec_figures(&cli).await;
        }
    });
}

/// `exec` cold start to the first request, and peak RSS of a 50-turn run.
async fn exec_figures(cli: &str) {
    let arrived = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let seen = arrived.clone();
    let server = common::serve(Arc::new(move |_, body: &Value| {
        seen.lock().unwrap().push(Instant::now());
        let turns = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        if turns < 50 {
            calls(&[("list_dir", json!({}))])
        } else {
            text("done")
        }
    }))
    .await;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(cli)
            .arg("--home")
            .arg(home.path())
            .args(args)
            .current_dir(project.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
    };
    run(&[
        "providers",
        "add",
        "scripted",
        "--protocol",
        "openai",
        "--base-url",
        &server.url,
    ]);
    let mut cold = Vec::new();
    for _ in 0..7 {
        arrived.lock().unwrap().clear();
        let start = Instant::now();
        let mut child = std::process::Command::new(cli)
            .arg("--home")
            .arg(home.path())
            .args([
                "exec",
                "--model",
                "test-model@scripted",
                "--max-iterations",
                "1",
                "hello",
            ])
            .current_dir(project.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        loop {
            if let Some(first) = arrived.lock().unwrap().first() {
                cold.push(*first - start);
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    println!(
        "exec cold start → first request: median of 7 {:.1} ms",
        ms(pct(&mut cold, 50))
    );
    // GNU time measures the child alone (a child forked from this big process would count this
    // process's pages in its high-water mark).
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(cli)
        .arg("--home")
        .arg(home.path())
        .args([
            "exec",
            "--model",
            "test-model@scripted",
            "--mode",
            "yolo",
            "fifty turns",
        ])
        .current_dir(project.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .expect("GNU time (/usr/bin/time, Debian package `time`)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kb: f64 = String::from_utf8_lossy(&out.stderr)
        .trim()
        .lines()
        .last()
        .unwrap_or("0")
        .parse()
        .unwrap_or(0.0);
    let turns = server
        .requests()
        .iter()
        .filter(|r| r.to_string().contains("fifty turns"))
        .count();
    println!(
        "exec, {} requests / 50 tool round trips: peak RSS {:.1} MB",
        turns,
        kb / 1024.0
    );
}

fn pct(v: &mut [Duration], p: usize) -> Duration {
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
