//! Fills a data folder with many projects and tasks, for benchmarks:
//! `cargo run --release -p codewright-store --example seed -- DIR PROJECTS TASKS`
//! Projects point at subfolders of DIR/folders (created); tasks are spread evenly over them.

use codewright_store::Store;
use rusqlite::params;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: seed DIR PROJECTS TASKS";
    let home = PathBuf::from(args.next().expect(usage));
    let projects: i64 = args.next().expect(usage).parse().expect(usage);
    let tasks: i64 = args.next().expect(usage).parse().expect(usage);
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
    tx.commit().unwrap();
    drop(conn);
    Store::open_in(&home).expect("reopen"); // prunes the change feed the bulk insert filled
    println!(
        "seeded {projects} projects and {tasks} tasks into {}",
        path.display()
    );
}
