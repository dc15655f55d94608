//! What writing a long streamed answer costs: one answer of MB megabytes (default 1.2, what each of
//! the load run's tasks streams in 300 s) arrives in 100-byte deltas and is written every
//! `FLUSH_BYTES`, as the agent does, with the change feed read after each write, as the desktop's
//! sync thread does. Run on the store as it is and, side by side, with the search index kept as
//! before migration 0018 (the whole answer indexed again on every write). Printed for each: the
//! whole answer's time, and one write's at the start and at the end (means of the first and the
//! last 20).
//! `cargo run --release -p codewright-store --example bench_streaming [MB]`

use codewright_protocol::Part;
use codewright_store::{Store, DB_FILE_NAME, FLUSH_BYTES};
use std::time::{Duration, Instant};

/// The search index's update trigger before migration 0018.
const INDEXED_ON_EVERY_WRITE: &str = "
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF parts ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts (rowid, text)
    SELECT new.id, coalesce(group_concat(json_extract(p.value, '$.text'), char(10)), '')
    FROM json_each(new.parts) AS p
    WHERE json_extract(p.value, '$.type') IN ('text', 'thinking');
END;";

fn main() {
    let mb: f64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("MB: a number"))
        .unwrap_or(1.2);
    let total = (mb * 1024.0 * 1024.0) as usize;
    println!("one answer of {mb} MB, written every {FLUSH_BYTES} bytes:");
    for (name, before) in [("now", false), ("before 0018", true), ("now, again", false)] {
        let (whole, first, last, writes) = stream(total, before);
        println!(
            "  {name:<12} {writes} writes in {:.2} s; one write at the start {:.2} ms, at the end {:.2} ms",
            whole.as_secs_f64(),
            first.as_secs_f64() * 1000.0,
            last.as_secs_f64() * 1000.0,
        );
    }
}

/// Streams one answer of `total` bytes into a new store: the whole time, one write's at the start
/// and at the end, and how many writes there were.
fn stream(total: usize, before: bool) -> (Duration, Duration, Duration, usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in(dir.path()).unwrap();
    if before {
        let raw = rusqlite::Connection::open(dir.path().join(DB_FILE_NAME)).unwrap();
        raw.execute_batch(INDEXED_ON_EVERY_WRITE).unwrap();
    }
    let project = store.add_project(dir.path(), None).unwrap();
    let task = store.add_task(project.id, "long answer").unwrap();
    let mut cursor = store.change_cursor().unwrap();
    let words = "stream the answer with `code`, **bold** words and 中文 text; ";
    let delta: String = words.chars().cycle().take(100).collect();
    let mut stream = store.start_streaming(task.id, "m@p").unwrap();
    let mut parts = [Part::Text {
        text: String::new(),
    }];
    let mut writes = Vec::new();
    let started = Instant::now();
    loop {
        let Part::Text { text } = &mut parts[0] else {
            unreachable!()
        };
        if text.len() >= total {
            break;
        }
        text.push_str(&delta);
        let at = Instant::now();
        if stream.update(&store, &parts, delta.len()).unwrap() {
            store.events_since(&mut cursor).unwrap();
            writes.push(at.elapsed());
        }
    }
    let whole = started.elapsed();
    let mean = |d: &[Duration]| d.iter().sum::<Duration>() / d.len().max(1) as u32;
    let n = writes.len();
    (
        whole,
        mean(&writes[..20.min(n)]),
        mean(&writes[n.saturating_sub(20)..]),
        n,
    )
}
