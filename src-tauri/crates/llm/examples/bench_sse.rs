//! SSE decode throughput on the largest recorded stream, in memory (framing + JSON + assembly),
//! next to a plain `serde_json` parse of the same events as a floor.
//! `cargo run --release -p codewright-llm --example bench_sse`

use codewright_llm::{decode_recording, Protocol};
use std::time::Instant;

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo"))
        .join("tests/fixtures/sse");
    let file = dir.join("openai-responses/reasoning_summary_long.sse");
    let body = std::fs::read(&file).expect("the fixture");
    // The decoder times its reads (idle timeouts): the runtime needs timers.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let rounds = 200;
    let mb = body.len() as f64 * rounds as f64 / 1e6;

    // Floor: only parse each event's JSON.
    let events: Vec<&str> = std::str::from_utf8(&body)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let start = Instant::now();
    for _ in 0..rounds {
        for e in &events {
            std::hint::black_box(serde_json::from_str::<serde_json::Value>(e).unwrap());
        }
    }
    let floor = mb / start.elapsed().as_secs_f64();

    let start = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(
            runtime
                .block_on(decode_recording(Protocol::OpenAiResponses, &body))
                .unwrap(),
        );
    }
    let ours = mb / start.elapsed().as_secs_f64();
    println!(
        "fixture: {} ({} KB, {} events), {rounds} rounds",
        file.file_name().unwrap().to_string_lossy(),
        body.len() / 1024,
        events.len()
    );
    println!("| decode | MB/s | × floor |\n| --- | ---: | ---: |");
    println!("| serde_json parse of each event (floor) | {floor:.1} | 1.00 |");
    println!(
        "| Codewright: SSE framing + decode + assembly | {ours:.1} | {:.2} |",
        ours / floor
    );
}
