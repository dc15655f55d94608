//! Messages: append, stream, page, search, totals, and surviving a writer killed mid-stream.

use codewright_protocol::{Message, Part, Role, StopReason, TaskId, Usage};
use codewright_store::{Store, UsageEvent, FLUSH_BYTES};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn task_in(home: &Path, store: &Store, title: &str) -> TaskId {
    let dir = home.join(format!("proj-{title}"));
    std::fs::create_dir_all(&dir).unwrap();
    let p = store
        .add_project(&dir, Some(&format!("Project {title}")))
        .unwrap();
    store.add_task(p.id, title).unwrap().id
}

fn text(role: Role, t: &str) -> Message {
    Message::new(role, vec![Part::Text { text: t.into() }])
}

#[test]
fn messages_page_newest_first() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "t");
    for i in 1..=25 {
        let m = store
            .append_message(task, &text(Role::User, &format!("message {i}")))
            .unwrap();
        assert_eq!(m.seq, i);
        assert!(m.complete);
    }
    let first = store.messages(task, None, 10).unwrap();
    assert_eq!(
        first.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (16..=25).rev().collect::<Vec<_>>()
    );
    let second = store
        .messages(task, Some(first.last().unwrap().seq), 10)
        .unwrap();
    assert_eq!(second[0].seq, 15);
    let third = store
        .messages(task, Some(second.last().unwrap().seq), 10)
        .unwrap();
    assert_eq!(third.len(), 5);
    assert_eq!(third.last().unwrap().message, text(Role::User, "message 1"));
    assert_eq!(store.task(task).unwrap().message_count, 25);
    assert!(store
        .append_message(TaskId(999), &text(Role::User, "x"))
        .is_err());
}

#[test]
fn task_totals_equal_the_sum_of_their_messages() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "t");
    let other = task_in(home.path(), &store, "other");
    let mut expected = Usage::default();
    let mut cost = 0.0;
    for i in 0..7u64 {
        store.append_message(task, &text(Role::User, "q")).unwrap();
        let stream = store.start_streaming(task, "m@p").unwrap();
        let usage = Usage {
            input: 100 + i,
            output: 20 * i,
            cache_read: i,
            cache_write: 1,
            reasoning: 3,
            estimated: false,
        };
        let mut answer = text(Role::Assistant, "a");
        answer.usage = Some(usage);
        answer.stop_reason = Some(StopReason::EndTurn);
        let event = UsageEvent {
            model: "m".into(),
            provider: "p".into(),
            usage,
            cost: 0.25 * i as f64,
        };
        let record = stream.finish(&store, &answer, Some(&event)).unwrap();
        assert_eq!(record.message.usage, Some(usage));
        assert_eq!(record.message.stop_reason, Some(StopReason::EndTurn));
        expected.add(&usage);
        cost += event.cost;
    }
    store
        .append_message(other, &text(Role::User, "unrelated"))
        .unwrap();
    let t = store.task(task).unwrap();
    assert_eq!(t.message_count, 14);
    assert_eq!(
        t.input_tokens as u64,
        expected.input + expected.cache_read + expected.cache_write
    );
    assert_eq!(t.output_tokens as u64, expected.output);
    assert!((t.cost - cost).abs() < 1e-9);
    let summed: u64 = store
        .messages(task, None, 100)
        .unwrap()
        .iter()
        .filter_map(|m| m.message.usage)
        .map(|u| u.input)
        .sum();
    assert_eq!(summed, expected.input);
}

#[test]
fn streaming_writes_at_a_bounded_interval_and_on_size() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "t");
    let mut stream = store.start_streaming(task, "m@p").unwrap();
    let row = store.message(stream.id()).unwrap();
    assert!(
        !row.complete && row.message.parts.is_empty(),
        "the row exists from the start"
    );

    let parts = vec![Part::Text { text: "Hel".into() }];
    assert!(
        !stream.update(&store, &parts, 3).unwrap(),
        "a tiny delta right away is not written"
    );
    let big = vec![Part::Text {
        text: "x".repeat(FLUSH_BYTES),
    }];
    assert!(
        stream.update(&store, &big, FLUSH_BYTES).unwrap(),
        "4 KB is written at once"
    );
    assert_eq!(store.message(stream.id()).unwrap().message.parts, big);
    let later = vec![Part::Text {
        text: "later".into(),
    }];
    assert!(!stream.update(&store, &later, 1).unwrap());
    std::thread::sleep(Duration::from_millis(260));
    assert!(
        stream.update(&store, &later, 1).unwrap(),
        "250 ms later it is written"
    );
    assert!(
        !stream.update(&store, &later, 0).unwrap(),
        "nothing new: nothing written"
    );
    // Content that arrived just before a stall is written by the idle call once it is due.
    let stalled = vec![Part::Text {
        text: "before the stall".into(),
    }];
    assert!(!stream.update(&store, &stalled, 5).unwrap());
    std::thread::sleep(Duration::from_millis(260));
    assert!(
        stream.update(&store, &stalled, 0).unwrap(),
        "the idle call writes it"
    );
    assert_eq!(store.message(stream.id()).unwrap().message.parts, stalled);
}

/// A long answer is not indexed again on every write while it streams (that cost grew with the
/// answer): it is found by its start meanwhile, and by all of it once finished or, after a crash,
/// marked interrupted or closed.
#[test]
fn a_long_streamed_answer_is_indexed_whole_once_complete() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "long");
    let long = |end: &str| {
        vec![Part::Text {
            text: format!("wombat {} {end}", "filler ".repeat(20_000)),
        }]
    };
    let found = |word: &str| store.search_messages(word, 10).unwrap().len();

    // Finished.
    let mut stream = store.start_streaming(task, "m@p").unwrap();
    stream
        .update(
            &store,
            &[Part::Text {
                text: "wombat filler".into(),
            }],
            FLUSH_BYTES,
        )
        .unwrap();
    assert_eq!(found("wombat"), 1, "a short answer is found as it streams");
    assert!(stream.update(&store, &long("numbat"), FLUSH_BYTES).unwrap());
    assert_eq!(found("wombat"), 1);
    assert_eq!(
        found("numbat"),
        0,
        "not indexed again while long and streaming"
    );
    let mut message = Message::new(Role::Assistant, long("quokka"));
    message.stop_reason = Some(StopReason::EndTurn);
    stream.finish(&store, &message, None).unwrap();
    assert_eq!(
        (found("quokka"), found("numbat")),
        (1, 0),
        "indexed whole when finished"
    );

    // Left streaming by a crash: indexed whole when the task is marked interrupted, and again
    // when it is closed.
    let mut stream = store.start_streaming(task, "m@p").unwrap();
    assert!(stream.update(&store, &long("bilby"), FLUSH_BYTES).unwrap());
    assert_eq!(found("bilby"), 0);
    store.index_interrupted(task).unwrap();
    assert_eq!(found("bilby"), 1, "indexed whole when interrupted");
    assert!(
        !store.message(stream.id()).unwrap().complete,
        "still incomplete: the window says so"
    );
    assert!(stream
        .update(&store, &long("dunnart"), FLUSH_BYTES)
        .unwrap());
    assert_eq!(store.close_interrupted(task).unwrap(), 1);
    assert_eq!(
        (found("dunnart"), found("bilby"), found("wombat")),
        (1, 0, 2),
        "indexed whole when closed, once"
    );
}

#[test]
fn search_finds_text_across_tasks_best_first_with_names() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let a = task_in(home.path(), &store, "alpha");
    let b = task_in(home.path(), &store, "beta");
    store
        .append_message(
            a,
            &text(
                Role::User,
                "the login page crashes when the password is empty",
            ),
        )
        .unwrap();
    store
        .append_message(
            b,
            &text(
                Role::Assistant,
                "login login login: fixed the login handler and added a login test",
            ),
        )
        .unwrap();
    store
        .append_message(b, &text(Role::User, "unrelated words only"))
        .unwrap();
    let thinking = Message::new(
        Role::Assistant,
        vec![Part::Thinking {
            text: "maybe the tokenizer is wrong".into(),
            signature: Some("sig".into()),
            redacted: None,
        }],
    );
    store.append_message(a, &thinking).unwrap();

    let hits = store.search_messages("login", 10).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[0].task_title, "beta",
        "more matches rank first: {hits:?}"
    );
    assert_eq!(hits[0].project_name, "Project beta");
    let hit_words: Vec<_> = hits[0]
        .snippet
        .iter()
        .filter(|p| p.hit)
        .map(|p| p.text.to_lowercase())
        .collect();
    assert!(
        !hit_words.is_empty() && hit_words.iter().all(|w| w == "login"),
        "{:?}",
        hits[0].snippet
    );
    let whole: String = hits[0].snippet.iter().map(|p| p.text.as_str()).collect();
    assert!(!whole.contains(['\u{2}', '\u{3}']), "{whole}");
    assert!(hits[0].seq >= 1);
    assert!(hits[0].rank <= hits[1].rank);
    assert_eq!(
        store.search_messages("tokeniz*", 10).unwrap().len(),
        1,
        "thinking is searchable, by prefix when asked"
    );
    assert!(store
        .search_messages("\"unbalanced -quote OR", 10)
        .unwrap()
        .is_empty());
    assert!(store.search_messages("", 10).unwrap().is_empty());

    // A streamed message is searchable as it grows, and deleted messages leave the index.
    let mut stream = store.start_streaming(a, "m@p").unwrap();
    stream
        .update(
            &store,
            &[Part::Text {
                text: "quokka ".repeat(1000),
            }],
            FLUSH_BYTES,
        )
        .unwrap();
    assert_eq!(store.search_messages("quokka", 10).unwrap().len(), 1);
    store.remove_task(a).unwrap();
    assert!(store.search_messages("quokka", 10).unwrap().is_empty());
    assert_eq!(store.search_messages("login", 10).unwrap().len(), 1);
}

/// Not a test on its own: the child process of `a_writer_killed_mid_stream_loses_at_most_one_interval`.
#[test]
#[ignore]
fn crash_child_streams_forever() {
    let Some(home) = std::env::var_os("CODEWRIGHT_CRASH_HOME") else {
        return;
    };
    let store = Store::open_in(Path::new(&home)).unwrap();
    let task = store.tasks(store.projects().unwrap()[0].id).unwrap()[0].id;
    let mut stream = store.start_streaming(task, "m@p").unwrap();
    let mut text = String::new();
    for i in 0.. {
        text.push_str(&format!("token{i} "));
        stream
            .update(&store, &[Part::Text { text: text.clone() }], 8)
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_writer_killed_mid_stream_loses_at_most_one_interval() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "t");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "crash_child_streams_forever",
            "--nocapture",
        ])
        .env("CODEWRIGHT_CRASH_HOME", home.path())
        .spawn()
        .unwrap();
    // Wait until the child has written some of its stream, then kill it without warning.
    let start = Instant::now();
    loop {
        let newest = store.messages(task, None, 1).unwrap();
        if newest
            .first()
            .is_some_and(|m| m.message.text().len() > 2000)
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the child never streamed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed_at = Instant::now();

    let reopened = Store::open_in(home.path()).unwrap();
    let partial = reopened.messages(task, None, 1).unwrap().remove(0);
    assert!(
        !partial.complete,
        "the interrupted message is marked incomplete"
    );
    assert_eq!(partial.message.role, Role::Assistant);
    let text = partial.message.text();
    assert!(
        text.starts_with("token0 token1 "),
        "{}",
        &text[..40.min(text.len())]
    );
    // Writes happen at least every 250 ms; the last one is at most one interval old.
    let age = now_ms() - partial.updated_at;
    assert!(
        age < 250 + killed_at.elapsed().as_millis() as i64 + 100,
        "last write {age} ms before reopening"
    );
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_word_in_too_many_messages_to_rank_returns_the_newest_matches() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "t");
    {
        let mut conn = rusqlite::Connection::open(store.path()).unwrap();
        let tx = conn.transaction().unwrap();
        for i in 0..=codewright_store::RANK_LIMIT {
            let parts = serde_json::to_string(&[Part::Text {
                text: format!("common word number {i}"),
            }])
            .unwrap();
            tx.execute(
                "INSERT INTO messages (task_id, seq, role, parts, created_at, updated_at) VALUES (?1, ?2, 'user', ?3, 0, 0)",
                rusqlite::params![task.0, i + 1, parts],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let hits = store.search_messages("common", 3).unwrap();
    assert_eq!(hits.len(), 3);
    let newest = codewright_store::RANK_LIMIT;
    assert!(
        hits[0]
            .snippet
            .iter()
            .any(|p| p.text.contains(&format!("number {newest}"))),
        "{hits:?}"
    );
    assert!(
        hits[0].message_id.0 > hits[1].message_id.0 && hits[1].message_id.0 > hits[2].message_id.0
    );
    // A rarer word is still ranked by relevance.
    assert_eq!(store.search_messages("12345", 5).unwrap().len(), 1);
}

#[test]
fn a_queued_message_survives_until_delivered_once() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let task = task_in(home.path(), &store, "Queue");
    store
        .append_message(task, &text(Role::User, "first"))
        .unwrap();
    let a = store
        .queue_message(task, &text(Role::User, "while it ran"))
        .unwrap();
    let b = store
        .queue_message(task, &text(Role::User, "and this"))
        .unwrap();
    // Another process (a restart) finds them, oldest first.
    drop(store);
    let store = Store::open_in(home.path()).unwrap();
    let queued = store.queued_messages(task).unwrap();
    assert_eq!(
        queued
            .iter()
            .map(|(id, m)| (*id, m.text()))
            .collect::<Vec<_>>(),
        vec![(a, "while it ran".to_string()), (b, "and this".to_string())]
    );
    // Delivered: moved into the conversation, once.
    let record = store.deliver_queued(a).unwrap().expect("delivered");
    assert_eq!(record.seq, 2);
    assert_eq!(store.deliver_queued(a).unwrap(), None);
    assert_eq!(store.queued_messages(task).unwrap().len(), 1);
    let texts: Vec<String> = store
        .history(task)
        .unwrap()
        .iter()
        .map(|r| r.message.text())
        .collect();
    assert_eq!(texts, ["first", "while it ran"]);
}

/// A sub-agent's task belongs to its parent: it is in no list, no search and nothing that needs
/// the user; its cost counts in the parent's totals as it is spent; it is deleted with the
/// parent.
#[test]
fn a_sub_agents_task_is_its_parents_alone() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let parent = task_in(home.path(), &store, "parent");
    let project = store.task(parent).unwrap().project_id;
    let child = store
        .add_child_task(
            parent,
            "call_1",
            "explorer: find the zebra",
            &text(Role::User, "find the zebra"),
            &serde_json::from_str(r#"{"agent": "explorer"}"#).unwrap(),
        )
        .unwrap();
    assert_eq!(child.settings["agent"], "explorer");
    // It works where its parent works: in the parent's worktree, once the parent has one.
    assert_eq!(
        store.task_root(child.id).unwrap(),
        store.task_root(parent).unwrap()
    );
    let tree = home.path().join("worktrees/p/parent");
    store
        .set_task_worktree(
            parent,
            Some(&codewright_protocol::TaskWorktree {
                path: tree.display().to_string(),
                subdir: String::new(),
                branch: "codewright/parent".into(),
                base: "main".into(),
                base_commit: "0".repeat(40),
                state: codewright_protocol::WorktreeState::Active,
                pull_request: None,
                set_up: None,
            }),
        )
        .unwrap();
    assert_eq!(store.task_root(child.id).unwrap(), tree);
    let linked = child.parent.clone().unwrap();
    assert_eq!((linked.task, linked.call.as_str()), (parent, "call_1"));
    assert_eq!(
        store.history(child.id).unwrap().len(),
        1,
        "its job is its first message"
    );
    store
        .append_message(child.id, &text(Role::Assistant, "the zebra is in zoo.rs"))
        .unwrap();
    store
        .set_task_status(child.id, codewright_protocol::TaskStatus::Done)
        .unwrap();
    let listed: Vec<TaskId> = store.tasks(project).unwrap().iter().map(|t| t.id).collect();
    assert_eq!(listed, [parent]);
    assert!(store.find_tasks("zebra", 10).unwrap().is_empty());
    assert!(store.search_messages("zebra", 10).unwrap().is_empty());
    assert!(
        store.tasks_needing_you().unwrap().is_empty(),
        "a finished sub-agent is not unread news"
    );
    assert_eq!(store.child_tasks(parent).unwrap()[0].id, child.id);

    let usage = UsageEvent {
        model: "m".into(),
        provider: "p".into(),
        usage: Usage {
            input: 1000,
            output: 50,
            ..Usage::default()
        },
        cost: 0.25,
    };
    // Counted in the parent's totals as it is spent.
    store.record_usage(child.id, &usage).unwrap();
    store.record_usage(parent, &usage).unwrap();
    assert_eq!(store.task(child.id).unwrap().input_tokens, 1000);
    let totals = store.task(parent).unwrap();
    assert_eq!((totals.input_tokens, totals.output_tokens), (2000, 100));
    assert!((totals.cost - 0.5).abs() < 1e-9);

    store.remove_task(parent).unwrap();
    assert!(store.task(child.id).is_err(), "deleted with its parent");
}
