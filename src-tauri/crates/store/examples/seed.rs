//! Fills a data folder with many projects, tasks and messages, for benchmarks:
//! `cargo run --release -p codewright-store --example seed -- DIR PROJECTS TASKS [MESSAGES]`
//! Projects point at subfolders of DIR/folders (created); tasks are spread evenly over them, and
//! messages over the tasks: 40 words each, drawn from a 20,000-word vocabulary with Zipf-like
//! frequencies (word `w{n}` is about n times rarer than `w1`), so searches hit common and rare words.

use codewright_store::Store;
use rusqlite::params;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: seed DIR PROJECTS TASKS";
    let home = PathBuf::from(args.next().expect(usage));
    let projects: i64 = args.next().expect(usage).parse().expect(usage);
    let tasks: i64 = args.next().expect(usage).parse().expect(usage);
    let messages: i64 = args.next().map_or(0, |m| m.parse().expect(usage));
    // Open once through the store so the schema is current, then bulk-insert in one transaction.
    let path = Store::open_in(&home)
        .expect("open store")
        .path()
        .to_path_buf();
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    let now = 1_700_000_000_000i64;
    for p in 0..projects {
        let folder = home.join("folders").join(format!("project-{p:04}"));
        std::fs::create_dir_all(&folder).unwrap();
        tx.execute(
            "INSERT INTO projects (name, root_path, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
            params![format!("Project {p:04}"), folder.to_str().unwrap(), now + p],
        )
        .unwrap();
    }
    let first: i64 = tx
        .query_row("SELECT min(id) FROM projects", [], |r| r.get(0))
        .unwrap();
    for t in 0..tasks {
        tx.execute(
            "INSERT INTO tasks (project_id, title, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
            params![
                first + t % projects.max(1),
                format!("Task {t}: refactor the module and add tests"),
                now + t
            ],
        )
        .unwrap();
    }
    let first_task: i64 = tx
        .query_row("SELECT coalesce(min(id), 0) FROM tasks", [], |r| r.get(0))
        .unwrap();
    // Zipf-like: the cumulative weights of 1/n, sampled with a small linear congruential generator.
    let weights: Vec<f64> = (1..=20_000)
        .scan(0.0, |sum, n| {
            *sum += 1.0 / n as f64;
            Some(*sum)
        })
        .collect();
    let total = *weights.last().unwrap();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut word = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let x = (state >> 11) as f64 / (1u64 << 53) as f64 * total;
        format!("w{}", weights.partition_point(|w| *w < x) + 1)
    };
    for m in 0..messages {
        let task = first_task + m % tasks.max(1);
        let text: Vec<String> = (0..40).map(|_| word()).collect();
        let parts = serde_json::json!([{"type": "text", "text": text.join(" ")}]).to_string();
        tx.execute(
            "INSERT INTO messages (task_id, seq, role, parts, complete, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)",
            params![
                task,
                m / tasks.max(1) + 1,
                if m % 2 == 0 { "user" } else { "assistant" },
                parts,
                now + m
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    drop(conn);
    Store::open_in(&home).expect("reopen"); // prunes the change feed the bulk insert filled
    println!(
        "seeded {projects} projects, {tasks} tasks and {messages} messages into {}",
        path.display()
    );
}
