//! SSE decode throughput on the largest recorded stream, in memory (framing + JSON + assembly),
//! next to a plain `serde_json` parse of the same events as a floor; then the SSE framing alone
//! (`sse_events`) next to `eventsource-stream` fed the same pieces directly, for several ways the
//! body can arrive.
//! `cargo run --release -p codewright-llm --example bench_sse`

use bytes::Bytes;
use codewright_llm::{decode_recording, sse_events, Protocol};
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use std::time::{Duration, Instant};

type Piece = Result<Bytes, std::convert::Infallible>;

/// Events framed from `pieces` by `frame`, and how long it took (best of `rounds`).
fn time_framing<S: Stream<Item = Result<E, X>>, E, X: std::fmt::Debug>(
    runtime: &tokio::runtime::Runtime,
    pieces: &[Bytes],
    rounds: u32,
    frame: impl Fn(futures_util::stream::Iter<std::vec::IntoIter<Piece>>) -> S,
) -> (usize, Duration) {
    let mut best = Duration::MAX;
    let mut count = 0;
    for _ in 0..rounds {
        let body = futures_util::stream::iter(pieces.iter().cloned().map(Ok).collect::<Vec<_>>());
        let start = Instant::now();
        count = runtime.block_on(async {
            let mut events = std::pin::pin!(frame(body));
            let mut n = 0;
            while let Some(event) = events.next().await {
                event.expect("a well-formed stream");
                n += 1;
            }
            n
        });
        best = best.min(start.elapsed());
    }
    (count, best)
}

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

    // The framing alone, whatever cuts the body.
    let cuts: Vec<(&str, Vec<Bytes>)> = vec![
        (
            "the recording in one piece",
            vec![Bytes::from(body.clone())],
        ),
        (
            "… in 16 KB pieces (a fast connection)",
            pieces(&body, 16 * 1024),
        ),
        ("… in 64-byte pieces", pieces(&body, 64)),
        ("a 64 KB event in 1-byte pieces (a hostile server)", {
            let long = format!("data: {}\n\n", "x".repeat(64 * 1024));
            pieces(long.as_bytes(), 1)
        }),
    ];
    println!("\n| framing | eventsource-stream alone | `sse_events` | ratio |\n| --- | ---: | ---: | ---: |");
    for (name, cut) in cuts {
        let rounds = 5;
        let (theirs_n, theirs) = time_framing(&runtime, &cut, rounds, |b| b.eventsource());
        let (ours_n, ours) = time_framing(&runtime, &cut, rounds, sse_events);
        assert_eq!(theirs_n, ours_n, "{name}: the same events");
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.1}× |",
            theirs.as_secs_f64() * 1e3,
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    }
}

fn pieces(body: &[u8], size: usize) -> Vec<Bytes> {
    body.chunks(size).map(Bytes::copy_from_slice).collect()
}
