//! Message store benchmarks: append (p50/p99), opening the newest 100 messages of a 10,000-message
//! task, FTS queries over 1,000,000 messages (p50/p99), and database size per 10,000 messages.
//! `cargo run --release -p codewright-store --example bench_messages [MESSAGES]` (default 1,000,000)

use codewright_protocol::{Message, Part, Role};
use codewright_store::Store;
use rusqlite::params;
use std::time::{Duration, Instant};

/// A Zipf-distributed vocabulary of 20,000 pronounceable pseudo-words, like natural text: a few
/// words are everywhere, most are rare.
struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocabulary {
    fn new() -> Vocabulary {
        const SYLLABLES: &[&str] = &[
            "ka", "ro", "mi", "te", "su", "la", "no", "vi", "de", "po", "zu", "ar", "en", "or",
            "is",
        ];
        let words: Vec<String> = (0..20_000usize)
            .map(|i| {
                let (mut n, mut w) = (i + 1, String::new());
                while n > 0 {
                    w.push_str(SYLLABLES[n % SYLLABLES.len()]);
                    n /= SYLLABLES.len();
                }
                w
            })
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    fn word(&self, seed: &mut u64) -> &str {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let x = (*seed % 1_000_000_007) as f64 / 1_000_000_007.0 * self.cumulative.last().unwrap();
        &self.words[self
            .cumulative
            .partition_point(|c| *c < x)
            .min(self.words.len() - 1)]
    }

    fn sentence(&self, seed: &mut u64, words: usize) -> String {
        (0..words)
            .map(|_| self.word(seed))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

/// Bytes on disk after folding the WAL into the database (so the WAL's size does not count).
fn db_size(dir: &std::path::Path) -> u64 {
    let conn = rusqlite::Connection::open(dir.join(codewright_store::DB_FILE_NAME)).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("MESSAGES"))
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in(dir.path()).unwrap();
    let folder = dir.path().join("p");
    std::fs::create_dir_all(&folder).unwrap();
    let project = store.add_project(&folder, None).unwrap();
    let task = store.add_task(project.id, "long task").unwrap();
    let vocab = Vocabulary::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;

    // Append through the store's API: 10,000 messages, one transaction each (as in real use).
    let mut appends = Vec::with_capacity(10_000);
    let size_before = db_size(dir.path());
    for i in 0..10_000 {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let message = Message::new(
            role,
            vec![Part::Text {
                text: vocab.sentence(&mut seed, 60),
            }],
        );
        let start = Instant::now();
        store.append_message(task.id, &message).unwrap();
        appends.push(start.elapsed());
    }
    let size_10k = db_size(dir.path()) - size_before;

    // Open the newest 100 of those 10,000.
    let mut opens = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let page = store.messages(task.id, None, 100).unwrap();
        opens.push(start.elapsed());
        assert_eq!(page.len(), 100);
    }

    // Bulk-fill up to `total` messages across 100 more tasks (same triggers, one transaction).
    let fill_start = Instant::now();
    {
        let mut conn = rusqlite::Connection::open(store.path()).unwrap();
        let tx = conn.transaction().unwrap();
        let mut tasks = Vec::new();
        for t in 0..100 {
            tx.execute(
                "INSERT INTO tasks (project_id, title, created_at, updated_at) VALUES (?1, ?2, 0, 0)",
                params![project.id.0, format!("task {t}")],
            )
            .unwrap();
            tasks.push(tx.last_insert_rowid());
        }
        let mut insert = tx
            .prepare("INSERT INTO messages (task_id, seq, role, parts, created_at, updated_at) VALUES (?1, ?2, 'user', ?3, 0, 0)")
            .unwrap();
        for i in 0..total.saturating_sub(10_000) {
            let parts = serde_json::to_string(&[Part::Text {
                text: vocab.sentence(&mut seed, 60),
            }])
            .unwrap();
            insert
                .execute(params![tasks[i % 100], (i / 100) as i64 + 1, parts])
                .unwrap();
        }
        drop(insert);
        tx.commit().unwrap();
    }
    let fill = fill_start.elapsed();

    // Typical queries: two words of middling frequency (ranks 200-5,000), as people search for
    // names and terms; and the worst case, one of the most common words.
    let mut searches = Vec::new();
    let mut common = Vec::new();
    let mut hits = 0;
    for i in 0..200u64 {
        let pick = |k: u64| vocab.words[200 + ((i * 7919 + k * 104_729) % 4800) as usize].clone();
        let query = format!("{} {}", pick(1), pick(2));
        let start = Instant::now();
        hits += store.search_messages(&query, 20).unwrap().len();
        searches.push(start.elapsed());
        if i < 20 {
            let start = Instant::now();
            store
                .search_messages(&vocab.words[(i % 3) as usize], 20)
                .unwrap();
            common.push(start.elapsed());
        }
    }

    println!(
        "{total} messages of 60 Zipf-distributed words; bulk fill {:.0} s; database {} MB",
        fill.as_secs_f64(),
        db_size(dir.path()) / 1_000_000
    );
    println!("| operation | p50 | p99 |\n| --- | ---: | ---: |");
    let row = |name: &str, s: &mut Vec<Duration>| {
        println!(
            "| {name} | {:.3} ms | {:.3} ms |",
            percentile(s, 0.5).as_secs_f64() * 1e3,
            percentile(s, 0.99).as_secs_f64() * 1e3
        )
    };
    row(
        "append a message (own transaction; FTS and totals by trigger)",
        &mut appends,
    );
    row("newest 100 of a 10,000-message task", &mut opens);
    row(
        "FTS, 2 mid-frequency words, top 20, all messages",
        &mut searches,
    );
    row(
        "FTS, 1 of the 3 most common words (worst case)",
        &mut common,
    );
    println!(
        "database growth per 10,000 messages: {:.1} MB; {:.1} hits per typical query",
        size_10k as f64 / 1e6,
        hits as f64 / 200.0
    );
}
