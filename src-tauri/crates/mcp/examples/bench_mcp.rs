//! `tools/call` round trips to the stdio everything server: Codewright's client and the official
//! TypeScript SDK client (`scripts/bench-mcp-sdk.mjs`), alternating, in one run; and the time to
//! connect 5 stdio servers at once.
//!
//! Usage: bench_mcp SERVERS_DIR [N]   (SERVERS_DIR: where scripts/setup --test installed them)

use codewright_mcp::{Connection, Endpoint};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args[1].clone();
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let endpoint = Endpoint::Stdio {
        command: "node".into(),
        args: vec![
            format!("{dir}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            "stdio".into(),
        ],
        env: std::env::vars().collect::<HashMap<_, _>>(),
        cwd: None,
    };
    let script = format!(
        "{}/../../../scripts/bench-mcp-sdk.mjs",
        std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo")
    );
    let mut ours_p50 = Vec::new();
    let mut ours_p99 = Vec::new();
    let mut sdk_p50 = Vec::new();
    let mut sdk_p99 = Vec::new();
    for round in 0..3 {
        let sdk = || {
            let out = std::process::Command::new("node")
                .args([&script, &dir, &n.to_string()])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            (v["p50"].as_f64().unwrap(), v["p99"].as_f64().unwrap())
        };
        let ours = || {
            runtime.block_on(async {
                let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
                let c = Connection::connect(&endpoint, vec![], tx, Duration::from_secs(30))
                    .await
                    .unwrap();
                let never = tokio_util::sync::CancellationToken::new();
                for _ in 0..20 {
                    c.call(
                        "echo",
                        json!({"message": "warm"}),
                        Duration::from_secs(10),
                        &never,
                        None,
                    )
                    .await
                    .unwrap();
                }
                let mut times = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = Instant::now();
                    c.call(
                        "echo",
                        json!({"message": "hello"}),
                        Duration::from_secs(10),
                        &never,
                        None,
                    )
                    .await
                    .unwrap();
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                c.close().await;
                times.sort_by(|a, b| a.partial_cmp(b).unwrap());
                (times[n / 2], times[(n * 99 / 100).min(n - 1)])
            })
        };
        let (a, b) = if round % 2 == 0 {
            let a = ours();
            (a, sdk())
        } else {
            let b = sdk();
            (ours(), b)
        };
        ours_p50.push(a.0);
        ours_p99.push(a.1);
        sdk_p50.push(b.0);
        sdk_p99.push(b.1);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let (o50, o99, s50, s99) = (
        med(&mut ours_p50),
        med(&mut ours_p99),
        med(&mut sdk_p50),
        med(&mut sdk_p99),
    );
    println!("tools/call echo over stdio, {n} calls × 3 rounds (median of rounds):");
    println!("  codewright (rmcp)   p50 {o50:.3} ms  p99 {o99:.3} ms");
    println!("  TypeScript SDK      p50 {s50:.3} ms  p99 {s99:.3} ms");
    println!(
        "  ratio               p50 {:.2}x  p99 {:.2}x",
        o50 / s50,
        o99 / s99
    );

    // Five servers at start-up, connected in parallel.
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        runtime.block_on(async {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let conns = futures_util::future::join_all((0..5).map(|_| {
                Connection::connect(&endpoint, vec![], tx.clone(), Duration::from_secs(30))
            }))
            .await;
            let elapsed = t.elapsed();
            for c in conns {
                c.unwrap().close().await;
            }
            times.push(elapsed.as_secs_f64() * 1000.0);
        });
    }
    println!(
        "connect 5 stdio everything servers at once: median of 3 {:.0} ms",
        med(&mut times)
    );
}
