//! The agent loop against a scripted provider that checks every request it receives.

mod common;

use codewright_agent::{AgentConfig, TaskHandle};
use codewright_protocol::{
    AgentEvent, AgentState, Decision, Message, Part, PermissionMode, Role, RunOutcome, TaskId,
    TaskStatus,
};
use common::{calls, has_tools, last_text, recorded, text, tool_results, End, Reply, World};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// Consumes a run's events to the end; `on` sees each one with the handle (to answer approvals,
/// stop, steer).
async fn drive(
    handle: TaskHandle,
    mut rx: UnboundedReceiver<AgentEvent>,
    mut on: impl FnMut(&AgentEvent, &TaskHandle),
) -> (RunOutcome, Vec<AgentEvent>) {
    let mut seen = Vec::new();
    let mut outcome = None;
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
        on(&event, &handle);
        if let AgentEvent::RunFinished { outcome: o, .. } = event {
            outcome = Some(o);
        }
        seen.push(event);
    }
    assert_eq!(handle.wait().await, outcome.expect("the run finished"));
    (outcome.unwrap(), seen)
}

fn approve_all(event: &AgentEvent, handle: &TaskHandle) {
    if let AgentEvent::ApprovalRequested { request } = event {
        handle.decide(request.id, Decision::Approve).unwrap();
    }
}

fn script(f: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> common::Script {
    Arc::new(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_edit_approved_bash_answer() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[("read_file", json!({"path": "src/lib.rs"}))]),
        1 => calls(&[(
            "edit_file",
            json!({"path": "src/lib.rs", "old_string": "1 + 1", "new_string": "2"}),
        )]),
        2 => calls(&[("bash", json!({"command": "grep -c 2 src/lib.rs"}))]),
        _ => text("Done: simplified the constant and checked it."),
    }))
    .await;
    std::fs::create_dir(world.path("src")).unwrap();
    std::fs::write(world.path("src/lib.rs"), "pub const X: i32 = 1 + 1;\n").unwrap();
    let (handle, rx) = world.start(world.task, Some("Simplify X"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, approve_all).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    assert_eq!(
        std::fs::read_to_string(world.path("src/lib.rs")).unwrap(),
        "pub const X: i32 = 2;\n"
    );

    let requests = world.server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(has_tools));
    let results = tool_results(&requests[3]);
    assert_eq!(results.len(), 3);
    assert!(results[0].1.contains("pub const X: i32 = 1 + 1;"));
    assert!(results[1].1.starts_with("Edited src/lib.rs"));
    assert!(results[2].1.contains("[exit code 0]"));
    // Two approvals (edit, bash), both resolved; states moved through the machine.
    let approvals = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ApprovalRequested { .. }))
        .count();
    assert_eq!(approvals, 2);
    // Every call is said to run (a window whose panel came from the store shows it runs), before
    // it asks and before its result.
    let ran: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolRunning { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    for id in ran {
        let at = |f: &dyn Fn(&AgentEvent) -> bool| events.iter().position(f);
        let running =
            at(&|e| matches!(e, AgentEvent::ToolRunning { call_id, .. } if call_id == id));
        let asked = at(
            &|e| matches!(e, AgentEvent::ApprovalRequested { request } if request.call_id == id),
        );
        let finished =
            at(&|e| matches!(e, AgentEvent::ToolFinished { call_id, .. } if call_id == id));
        assert!(running < finished && finished.is_some(), "{id}");
        assert!(asked.is_none_or(|asked| running < Some(asked)), "{id}");
    }
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::State {
            state: AgentState::AwaitingApproval,
            ..
        }
    )));
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::TextDelta { .. })));
    let text_out: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text_out, "Done: simplified the constant and checked it.");

    // Stored: user, assistant, tool ×3 pairs, final assistant; the task is idle again.
    let stored = world.messages(world.task);
    let roles: Vec<Role> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(stored.iter().all(|m| m.complete));
    let task = world.store.lock().unwrap().task(world.task).unwrap();
    assert_eq!(task.status, TaskStatus::Done);
    let counted: i64 = requests
        .iter()
        .map(|r| (r.to_string().len() / 4) as i64)
        .sum();
    assert!(
        (task.input_tokens - counted).abs() < 50,
        "{} vs {counted}",
        task.input_tokens
    );
    // The edit is checkpointed under turn 1.
    let checkpoints = world.store.lock().unwrap().checkpoints(world.task).unwrap();
    assert_eq!(checkpoints[0].turn, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_reads_come_back_in_call_order() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[
            ("read_file", json!({"path": "a.txt"})),
            ("grep", json!({"pattern": "needle"})),
            ("read_file", json!({"path": "missing.txt"})),
            ("read_file", json!({"path": "b.txt"})),
        ]),
        _ => text("Read them."),
    }))
    .await;
    std::fs::write(world.path("a.txt"), "alpha needle\n").unwrap();
    std::fs::write(world.path("b.txt"), "beta\n").unwrap();
    let (handle, rx) = world.start(world.task, Some("Read"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let results = tool_results(&world.server.requests()[1]);
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, ["call_0_0", "call_0_1", "call_0_2", "call_0_3"]);
    assert!(results[0].1.contains("alpha") && results[3].1.contains("beta"));
    assert!(results[2].1.contains("does not exist"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { .. })),
        "reads need no approval"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_edit_feedback_reaches_the_model_and_hunks_can_be_partial() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[("read_file", json!({"path": "f.txt"}))]),
        1 => calls(&[(
            "edit_file",
            json!({"path": "f.txt", "old_string": "one", "new_string": "ONE"}),
        )]),
        2 => calls(&[(
            "edit_file",
            json!({"path": "f.txt", "edits": [
                {"old_string": "two", "new_string": "TWO"},
                {"old_string": "nine", "new_string": "NINE"}
            ]}),
        )]),
        _ => text("ok"),
    }))
    .await;
    let content: String = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "x", "x", "x", "x", "x",
        "x", "nine",
    ]
    .iter()
    .map(|w| format!("{w}\n"))
    .collect();
    std::fs::write(world.path("f.txt"), &content).unwrap();
    let (handle, rx) = world.start(world.task, Some("Shout"), PermissionMode::Normal);
    let mut answered = 0;
    let (outcome, _) = drive(handle, rx, |e, h| {
        if let AgentEvent::ApprovalRequested { request } = e {
            answered += 1;
            let decision = if answered == 1 {
                Decision::Reject {
                    feedback: Some("Keep lowercase; only the numbers after one.".into()),
                }
            } else {
                Decision::ApproveHunks { hunks: vec![1] }
            };
            h.decide(request.id, decision).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    let rejected = &tool_results(&requests[2])[1].1;
    assert!(
        rejected.ends_with("The user said:\nKeep lowercase; only the numbers after one."),
        "{rejected}"
    );
    let partial = &tool_results(&requests[3])[2].1;
    assert!(
        partial.contains("applied hunk #2") && partial.contains("rejected hunk #1"),
        "{partial}"
    );
    assert_eq!(
        std::fs::read_to_string(world.path("f.txt")).unwrap(),
        content.replace("nine", "NINE")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_streaming_keeps_the_partial_answer_and_the_next_message_works() {
    let world = World::new(script(|i, _| match i {
        0 => Reply::Hang("I am thinking about this ".into()),
        _ => text("Fresh answer."),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Start"), PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |e, h| {
        if matches!(e, AgentEvent::TextDelta { text, .. } if text.contains("about")) {
            h.stop();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Stopped);
    let stored = world.messages(world.task);
    assert!(
        stored[1].message.text().starts_with("I am thinking about"),
        "{}",
        stored[1].message.text()
    );
    assert!(stored[1].complete);

    let (handle, rx) = world.start(world.task, Some("Go on"), PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let second = &world.server.requests()[1];
    let texts: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("I am thinking about")),
        "the partial answer is history"
    );
    assert_eq!(last_text(second), "Go on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_waiting_for_approval_rejects_it() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[
            ("bash", json!({"command": "touch should-not-exist"})),
            ("read_file", json!({"path": "x"})),
        ]),
        _ => text("Understood."),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Touch"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |e, h| {
        if matches!(e, AgentEvent::ApprovalRequested { .. }) {
            h.stop();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Stopped);
    // The front end hears that the request no longer waits.
    let asked = events.iter().find_map(|e| match e {
        AgentEvent::ApprovalRequested { request } => Some(request.id),
        _ => None,
    });
    assert!(
        events.iter().any(|e| matches!(e, AgentEvent::ApprovalResolved { id, decision: Decision::Reject { .. }, .. } if Some(*id) == asked)),
        "{events:?}"
    );
    assert!(!world.path("should-not-exist").exists());
    let stored = world.messages(world.task);
    let results: Vec<&Part> = stored.last().unwrap().message.parts.iter().collect();
    assert_eq!(results.len(), 2, "every call answered");
    let (handle, rx) = world.start(world.task, Some("Never mind"), PermissionMode::Normal);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    world.server.assert_clean();
    let results = tool_results(&world.server.requests()[1]);
    assert!(
        results[0].1.contains("stopped the task before approving"),
        "{results:?}"
    );
    assert!(results[1].1.contains("interrupted"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_long_command_kills_it() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[(
            "bash",
            json!({"command": "echo $$ > pid; echo started; sleep 30"}),
        )]),
        _ => text("Next."),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Sleep"), PermissionMode::Yolo);
    let started = Instant::now();
    let (outcome, _) = drive(handle, rx, |e, h| {
        // The command is running once it printed.
        if matches!(e, AgentEvent::ToolProgress { text, .. } if text.contains("started")) {
            h.stop();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Stopped);
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid: i32 = std::fs::read_to_string(world.path("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap()
                .contains(") Z")
    );
    let (handle, rx) = world.start(world.task, Some("Continue"), PermissionMode::Yolo);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    world.server.assert_clean();
    let results = tool_results(&world.server.requests()[1]);
    assert!(results[0].1.contains("stopped by the user"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_is_delivered_at_the_next_boundary() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[("bash", json!({"command": "sleep 0.5"}))]),
        1 => text("Noted your message."),
        _ => text("unexpected"),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Wait"), PermissionMode::Yolo);
    let (outcome, _) = drive(handle, rx, |e, h| {
        if matches!(
            e,
            AgentEvent::State {
                state: AgentState::RunningTools,
                ..
            }
        ) {
            h.steer("Also update the README.").unwrap();
            // Taken means kept: in the store's queue before the sender hears it was taken.
            let queued = world
                .store
                .lock()
                .unwrap()
                .queued_messages(world.task)
                .unwrap();
            assert_eq!(queued.len(), 1);
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let second = &world.server.requests()[1];
    assert_eq!(last_text(second), "Also update the README.");
    let stored = world.messages(world.task);
    assert_eq!(stored[3].message.role, Role::User);
    assert_eq!(stored[3].message.text(), "Also update the README.");
    assert!(world
        .store
        .lock()
        .unwrap()
        .queued_messages(world.task)
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_queued_when_its_process_died_is_delivered_by_the_next_run() {
    let world = World::new(script(|_, _| text("Noted."))).await;
    // What a process killed mid-run leaves: a message it had taken for its next turn boundary.
    {
        let store = world.store.lock().unwrap();
        store
            .append_message(world.task, &Message::user("Start"))
            .unwrap();
        store
            .queue_message(world.task, &Message::user("Sent while it ran"))
            .unwrap();
        store
            .set_task_status(world.task, TaskStatus::Interrupted)
            .unwrap();
    }
    let (handle, rx) = world.start(world.task, Some("And now this"), PermissionMode::Normal);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    // Delivered in the order it was sent: before the new message.
    let users: Vec<String> = world
        .messages(world.task)
        .iter()
        .filter(|r| r.message.role == Role::User)
        .map(|r| r.message.text())
        .collect();
    assert_eq!(users, ["Start", "Sent while it ran", "And now this"]);
    assert!(world
        .store
        .lock()
        .unwrap()
        .queued_messages(world.task)
        .unwrap()
        .is_empty());
    // (User messages in a row are sent as one, in order: strict chat templates refuse two.)
    assert_eq!(
        last_text(&world.server.requests()[0]),
        "Start\n\nSent while it ran\n\nAnd now this"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_answer_is_retried_once_with_a_nudge() {
    let world = World::new(script(|i, _| match i {
        0 => Reply::Empty,
        1 => text("Here it is."),
        2 | 3 => Reply::Empty,
        _ => text("unexpected"),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Answer"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    assert!(last_text(&world.server.requests()[1]).contains("Your last answer was empty"));
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::Notice { message, .. } if message.contains("empty answer"))
    ));

    let (handle, rx) = world.start(world.task, Some("Again"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    assert_eq!(world.server.requests().len(), 4);
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Notice { message, .. } if message.contains("again"))));
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_iteration_limit_pauses_with_a_summary() {
    let world = World::with_config(
        script(|_, body| {
            if last_text(body).contains("iteration limit") {
                text("Goal: explore. Progress: listed the folder three times. Next steps: stop looping.")
            } else {
                calls(&[("list_dir", json!({}))])
            }
        }),
        AgentConfig { max_iterations: 3, ..AgentConfig::default() },
    )
    .await;
    let (handle, rx) = world.start(world.task, Some("Loop"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Paused);
    world.server.assert_clean();
    let requests = world.server.requests();
    assert_eq!(requests.len(), 4);
    // The tools stay offered: providers refuse a history of calls without them.
    assert!(has_tools(&requests[3]));
    assert!(last_text(&requests[3]).contains("iteration limit"));
    let stored = world.messages(world.task);
    assert!(stored
        .last()
        .unwrap()
        .message
        .text()
        .starts_with("Goal: explore."));
    assert_eq!(
        world.store.lock().unwrap().task(world.task).unwrap().status,
        TaskStatus::Paused
    );
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::Notice { message, .. } if message.contains("Paused after 3"))
    ));
    // Continuing works.
    let (handle, rx) = world.start(world.task, None, PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Paused);
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_run_at_once() {
    // Each task's command waits (up to 5 s) for the other's to have started: they only meet if
    // the two runs overlap.
    let world = World::new(script(|_, body| {
        let results = tool_results(body);
        if results.is_empty() {
            let (me, other) = if body.to_string().contains("\"one\"") {
                ("one", "two")
            } else {
                ("two", "one")
            };
            let command = format!(
                "touch {me}.started; for i in $(seq 50); do [ -e {other}.started ] && echo met && exit 0; sleep 0.1; done; echo alone"
            );
            calls(&[("bash", json!({ "command": command }))])
        } else {
            text("finished")
        }
    }))
    .await;
    let other = world.new_task();
    let (h1, rx1) = world.start(world.task, Some("one"), PermissionMode::Yolo);
    let (h2, rx2) = world.start(other, Some("two"), PermissionMode::Yolo);
    let (a, b) = tokio::join!(drive(h1, rx1, |_, _| {}), drive(h2, rx2, |_, _| {}));
    assert_eq!((a.0, b.0), (RunOutcome::Done, RunOutcome::Done));
    world.server.assert_clean();
    let requests = world.server.requests();
    assert_eq!(requests.len(), 4);
    let outputs: Vec<String> = requests
        .iter()
        .flat_map(|r| tool_results(r).into_iter().map(|(_, t)| t))
        .collect();
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(outputs.iter().all(|t| t.contains("met")), "{outputs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_errors_end_the_run_with_a_clear_error() {
    let world = World::new(script(|_, _| {
        Reply::Status(400, r#"{"error": {"message": "This model's maximum context length is 128000 tokens", "code": "context_length_exceeded"}}"#.into())
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Big"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Failed);
    let error = events.iter().find_map(|e| match e {
        AgentEvent::Error { kind, message, .. } => Some((*kind, message.clone())),
        _ => None,
    });
    let (kind, message) = error.unwrap();
    assert_eq!(kind, codewright_protocol::ErrorKind::ContextOverflow);
    assert!(message.contains("new task"), "{message}");
    assert_eq!(
        world.store.lock().unwrap().task(world.task).unwrap().status,
        TaskStatus::Failed
    );
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You compact the history"))
}

fn sees_summary(body: &Value) -> bool {
    body.to_string().contains("was compacted. Summary of it:")
}

const SUMMARY: &str = "## Goal\nRead the files.\n## Constraints and preferences\nnone\n## Progress\n### Done\nread a\n### In progress\nnone\n## Key decisions\nnone\n## Next steps\nanswer\n## Files touched\na.txt\n## Critical context\nnone";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_compacts_and_retries_once() {
    let world = World::new(script(|_, body| {
        if is_summary_request(body) {
            text(SUMMARY)
        } else if sees_summary(body) {
            text("Fits now.")
        } else if tool_results(body).len() < 3 {
            calls(&[("read_file", json!({"path": "a.txt"}))])
        } else {
            Reply::Status(400, r#"{"error": {"message": "This model's maximum context length is 128000 tokens.", "code": "context_length_exceeded"}}"#.into())
        }
    }))
    .await;
    std::fs::write(
        world.path("a.txt"),
        format!("{}\n", "x".repeat(99)).repeat(300),
    )
    .unwrap();
    let (handle, rx) = world.start(world.task, Some("Read a lot"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done, "{events:#?}");
    world.server.assert_clean();
    let compaction = events.iter().find_map(|e| match e {
        AgentEvent::Compaction {
            tokens_before,
            tokens_after,
            summary,
            first_kept_seq,
            ..
        } => Some((*tokens_before, *tokens_after, summary, *first_kept_seq)),
        _ => None,
    });
    let (before, after, summary, first_kept) = compaction.expect("a compaction event");
    assert!(after < before, "{before} → {after}");
    // The event carries what was stored: a window shows the summary where it starts.
    let stored = world.store.lock().unwrap().compactions(world.task).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(&stored[0].summary, summary);
    assert_eq!(stored[0].first_kept_seq, first_kept);
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::State {
            state: AgentState::Compacting,
            ..
        }
    )));
    // The originals stay, marked; the model saw the summary and the kept messages.
    let stored = world.messages(world.task);
    assert!(stored.iter().any(|m| m.compacted));
    assert!(!stored.last().unwrap().compacted);
    let last = world.server.requests().pop().unwrap();
    assert!(sees_summary(&last));
    assert!(last.to_string().contains("## Next steps"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_window_is_compacted_before_the_request() {
    let world = World::new(script(|i, body| {
        if is_summary_request(body) {
            text(SUMMARY)
        } else if i < 3 {
            // (Three files: a small model's read of one it has, unchanged, is not made again.)
            calls(&[("read_file", json!({"path": format!("{i}.txt")}))])
        } else {
            text("done")
        }
    }))
    .await;
    for i in 0..3 {
        std::fs::write(
            world.path(&format!("{i}.txt")),
            format!("{}\n", "y".repeat(79)).repeat(120),
        )
        .unwrap();
    }
    let mut model = world.model();
    // A small window: 3 reads of ~2,600 tokens each, with the system prompt (a small local
    // model is sent no tools' schemas), pass 10,000 − reserve (2,000 for the answer + 1,250).
    model.info.context_window = 10_000;
    model.info.max_output = 2_000;
    // Summaries come from the compaction role's model.
    let mut summarizer = world.model();
    summarizer.info.id = "summarizer@scripted".into();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let handle = world.agent.start(
        codewright_agent::RunRequest {
            task: world.task,
            prompt: Some("Read the three files".into()),
            model,
            mode: PermissionMode::Normal,
            sandbox: false,
            compaction: Some(summarizer),
            this_run: Default::default(),
        },
        tx,
    );
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Compaction { .. })));
    let requests = world.server.requests();
    let summary = requests.iter().find(|r| is_summary_request(r)).unwrap();
    assert_eq!(summary["model"], "summarizer");
    assert!(requests
        .iter()
        .filter(|r| !is_summary_request(r))
        .all(|r| r["model"] == "test-model"));
    assert!(sees_summary(requests.last().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_without_native_tools_write_calls_as_text() {
    let world = World::new(script(|i, _| match i {
        0 => text("<think>Check the file first.</think>\nLet me read it.\n<tool_call>\n<function=read_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=limit>5</parameter>\n</function>\n</tool_call>"),
        _ => text("The notes say hello."),
    }))
    .await;
    std::fs::write(world.path("notes.txt"), "hello\n").unwrap();
    let mut model = world.model();
    model.info.tools = false;
    let (handle, rx) = world.start_with(
        world.task,
        Some("Read notes"),
        PermissionMode::Normal,
        model,
    );
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    assert!(!has_tools(&requests[0]));
    assert!(requests[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("<function=TOOL_NAME>"));
    let second = &requests[1];
    let result = last_text(second);
    assert!(
        result.starts_with("<tool_result>") && result.contains("     1\thello"),
        "{result}"
    );
    // Stored natively: thinking, text, the call, and its result.
    let stored = world.messages(world.task);
    let parts = &stored[1].message.parts;
    assert!(matches!(&parts[0], Part::Thinking { text, .. } if text == "Check the file first."));
    assert!(
        matches!(&parts[2], Part::ToolCall { name, arguments, .. } if name == "read_file" && arguments == r#"{"limit":5,"path":"notes.txt"}"#),
        "{parts:?}"
    );
    assert_eq!(stored[2].message.role, Role::Tool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constrained_model_answers_in_json_a_call_or_its_final_words() {
    let world = World::new(script(|i, _| match i {
        0 => text(r#"{"name": "read_file", "parameters": {"path": "notes.txt"}}"#),
        _ => text(r#"{"answer": "The notes say hello."}"#),
    }))
    .await;
    std::fs::write(world.path("notes.txt"), "hello\n").unwrap();
    let mut model = world.model();
    model.info.sampling.constrained = true;
    let (handle, rx) = world.start_with(
        world.task,
        Some("Read notes"),
        PermissionMode::Normal,
        model,
    );
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    // No native tools: the answer's schema instead, naming the tools offered, and the format
    // in the prompt.
    assert!(!has_tools(&requests[0]));
    let schema = &requests[0]["response_format"]["json_schema"]["schema"];
    let names = schema["anyOf"][0]["properties"]["name"]["enum"]
        .as_array()
        .unwrap();
    assert!(names.contains(&json!("read_file")), "{schema}");
    assert_eq!(schema["anyOf"][1]["required"], json!(["answer"]));
    assert!(requests[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains(r#"{"answer": SUMMARY}"#));
    assert!(last_text(&requests[1]).contains("     1\thello"));
    // The call is stored as a call; the final answer as its words.
    let stored = world.messages(world.task);
    assert!(stored[1]
        .message
        .parts
        .iter()
        .any(|p| matches!(p, Part::ToolCall { name, .. } if name == "read_file")));
    assert_eq!(
        stored.last().unwrap().message.text(),
        "The notes say hello."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_over_the_limit_wait_visibly_and_can_be_stopped_while_queued() {
    let world = World::with_config(
        script(|_, body| {
            if tool_results(body).is_empty() {
                calls(&[("bash", json!({"command": "sleep 0.4"}))])
            } else {
                text("finished")
            }
        }),
        AgentConfig {
            max_running: 1,
            ..AgentConfig::default()
        },
    )
    .await;
    let second = world.new_task();
    let third = world.new_task();
    let (h1, rx1) = world.start(world.task, Some("one"), PermissionMode::Yolo);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (h2, rx2) = world.start(second, Some("two"), PermissionMode::Yolo);
    let (h3, rx3) = world.start(third, Some("three"), PermissionMode::Yolo);
    h3.stop();
    let (a, b, c) = tokio::join!(
        drive(h1, rx1, |_, _| {}),
        drive(h2, rx2, |_, _| {}),
        drive(h3, rx3, |_, _| {})
    );
    assert_eq!(
        (a.0, b.0, c.0),
        (RunOutcome::Done, RunOutcome::Done, RunOutcome::Stopped)
    );
    assert!(
        matches!(
            b.1[0],
            AgentEvent::State {
                state: AgentState::Queued,
                ..
            }
        ),
        "{:?}",
        b.1[0]
    );
    // The second started only after the first finished.
    let requests = world.server.requests();
    assert_eq!(requests.len(), 4);
    assert!(common::last_text(&requests[2]).contains("two"));
    // The stopped one never sent anything, and its message is kept in the task.
    let kept = world.messages(third);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].message.text(), "three");
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_parallel_calls_each_get_one_result() {
    let world = World::new(script(|i, _| match i {
        0 => recorded("openai-chat/parallel_tool_calls_args_split.sse"),
        _ => text("Both answered."),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Weather?"), PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let results = tool_results(&world.server.requests()[1]);
    assert_eq!(results.len(), 2);
    // The recorded model called a tool Codewright does not have: the model is told so.
    assert!(
        results
            .iter()
            .all(|r| r.1.contains("there is no tool named")),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_anthropic_thinking_signatures_are_sent_back() {
    let world = World::new(script(|i, _| match i {
        0 => recorded("anthropic/thinking_then_tool_use.sse"),
        _ => recorded("anthropic/after_tool_result_text.sse"),
    }))
    .await;
    let mut model = world.model();
    model.provider = codewright_llm::Provider::new(
        "scripted",
        codewright_llm::Protocol::Anthropic,
        &world.server.url,
        None,
    );
    model.info = codewright_llm::resolve_model("claude-haiku-4-5@anthropic", &[]);
    let (handle, rx) = world.start_with(
        world.task,
        Some("Think, then use a tool"),
        PermissionMode::Normal,
        model,
    );
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let second = world.server.requests()[1].to_string();
    assert!(
        second.contains("\"type\":\"thinking\"") && second.contains("\"signature\""),
        "{second}"
    );
}

/// A tool that arrives mid-run (an MCP server said its tools changed).
struct Late;

#[async_trait::async_trait]
impl codewright_tools::Tool for Late {
    fn name(&self) -> &str {
        "late__tool"
    }
    fn description(&self) -> &str {
        "A tool added while the task runs."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn category(&self) -> codewright_protocol::ToolCategory {
        codewright_protocol::ToolCategory::Read
    }
    async fn run(
        &self,
        _: Value,
        _: &codewright_tools::CallContext,
    ) -> codewright_tools::ToolOutput {
        codewright_tools::ToolOutput::text("late result")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_change_mid_run_are_offered_from_the_next_request() {
    let world = World::new(script(|i, _| match i {
        0 => calls(&[("bash", json!({"command": "true"}))]),
        1 => calls(&[("late__tool", json!({}))]),
        _ => text("Done."),
    }))
    .await;
    let agent = world.agent.clone();
    let (project, root) = {
        let store = world.store.lock().unwrap();
        let project = store.task(world.task).unwrap().project_id;
        (
            project,
            PathBuf::from(store.project(project).unwrap().root_path),
        )
    };
    // Tools of the project's servers started in another folder (another task's worktree) are
    // not this task's.
    let elsewhere = root.join("elsewhere");
    assert!(agent
        .set_tools(project, &elsewhere, vec![Arc::new(Late)])
        .is_empty());
    let (handle, rx) = world.start(world.task, Some("Go"), PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |e, h| {
        if let AgentEvent::ApprovalRequested { request } = e {
            // While the first call waits, the tools change.
            assert!(agent
                .set_tools(project, &root, vec![Arc::new(Late)])
                .is_empty());
            h.decide(request.id, Decision::Approve).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    let offered = |r: &Value| r["tools"].to_string().contains("late__tool");
    assert!(!offered(&requests[0]));
    assert!(offered(&requests[1]) && offered(&requests[2]));
    assert_eq!(tool_results(&requests[2])[1].1, "late result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_of_a_running_task_is_refused_and_changes_nothing() {
    let world = World::new(script(|i, _| match i {
        0 => Reply::Hang("Working on it ".into()),
        _ => text("Later answer."),
    }))
    .await;
    let (first, mut first_rx) = world.start(world.task, Some("First"), PermissionMode::Normal);
    // Wait until the first run streams.
    while let Some(e) = first_rx.recv().await {
        if matches!(e, AgentEvent::TextDelta { .. }) {
            break;
        }
    }
    let (second, rx) = world.start(world.task, Some("Second"), PermissionMode::Normal);
    let (outcome, events) = drive(second, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Failed);
    assert!(
        events.iter().any(|e| matches!(e, AgentEvent::Error { message, .. } if message.contains("already running"))),
        "{events:?}"
    );
    let stored = world.messages(world.task);
    assert_eq!(
        stored.len(),
        2,
        "the first run's message and its streaming answer only"
    );
    assert_eq!(stored[0].message.text(), "First");
    first.stop();
    assert_eq!(first.wait().await, RunOutcome::Stopped);
    // Once it has ended, the task takes the next message.
    let (handle, rx) = world.start(world.task, Some("Third"), PermissionMode::Normal);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steered_messages_are_never_lost() {
    let world = World::new(script(|i, _| match i {
        0 => Reply::Hang("Thinking ".into()),
        _ => text("Both read."),
    }))
    .await;
    // Queued while the model streams, then the user stops: the message stays in the task.
    let (handle, mut rx) = world.start(world.task, Some("First"), PermissionMode::Normal);
    while let Some(e) = rx.recv().await {
        if matches!(e, AgentEvent::TextDelta { .. }) {
            break;
        }
    }
    handle.steer("Queued before the stop").unwrap();
    handle.stop();
    while rx.recv().await.is_some() {}
    // After the run ended, a message is handed back to be sent as a new run.
    assert_eq!(
        handle.steer("Too late"),
        Err(Box::new(codewright_protocol::Message::user("Too late")))
    );
    assert_eq!(handle.wait().await, RunOutcome::Stopped);
    let stored = world.messages(world.task);
    assert_eq!(
        stored.last().unwrap().message.text(),
        "Queued before the stop"
    );
    let (handle, rx) = world.start(world.task, Some("Too late"), PermissionMode::Normal);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    world.server.assert_clean();
    let texts = world.server.requests()[1]["messages"].to_string();
    assert!(texts.contains("Queued before the stop") && texts.contains("Too late"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_the_pause_summary_are_answered_not_run() {
    let world = World::with_config(
        script(|_, _| calls(&[("bash", json!({"command": "touch ran"}))])),
        AgentConfig {
            max_iterations: 1,
            ..AgentConfig::default()
        },
    )
    .await;
    let (handle, rx) = world.start(world.task, Some("Loop"), PermissionMode::Yolo);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Paused);
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Notice { message, .. }
        if message.contains("Paused after 1") && !message.contains("summary"))));
    let stored = world.messages(world.task);
    let last = &stored.last().unwrap().message;
    assert_eq!(last.role, Role::Tool);
    assert!(format!("{:?}", last.parts).contains("paused at the iteration limit"));
    // Only the first call ran.
    let (handle, rx) = world.start(world.task, Some("ok"), PermissionMode::Plan);
    drive(handle, rx, |_, _| {}).await;
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_sandbox_setting_confines_commands() {
    let world = World::new(script(|_, body| {
        if last_text(body) == "Run" {
            calls(&[("bash", json!({"command": "true"}))])
        } else {
            text("done")
        }
    }))
    .await;
    let project = world
        .store
        .lock()
        .unwrap()
        .task(world.task)
        .unwrap()
        .project_id;
    let ask = |world: &World| {
        let (handle, rx) = world.start(world.task, Some("Run"), PermissionMode::Normal);
        async move {
            let asked = std::sync::Mutex::new(None);
            drive(handle, rx, |e, h| {
                if let AgentEvent::ApprovalRequested { request } = e {
                    *asked.lock().unwrap() = Some(request.clone());
                    let _ = h.decide(request.id, Decision::Reject { feedback: None });
                }
            })
            .await;
            asked
                .into_inner()
                .unwrap()
                .expect("the command was asked for")
        }
    };
    let sandboxed = |r: &codewright_protocol::ApprovalRequest| {
        matches!(
            r.action,
            codewright_protocol::Action::Command {
                sandboxed: true,
                ..
            }
        )
    };
    assert!(!sandboxed(&ask(&world).await));
    world
        .store
        .lock()
        .unwrap()
        .set_project_settings(
            project,
            &codewright_protocol::ProjectSettings {
                sandbox: true,
                ..Default::default()
            },
        )
        .unwrap();
    let request = ask(&world).await;
    // Where the kernel cannot confine it, the request says so instead.
    assert!(
        sandboxed(&request) || request.reason.contains("sandbox"),
        "{request:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_processes_outlive_the_run_until_the_task_closes() {
    let world = World::new(script(|_, body| {
        let last = last_text(body);
        match last.as_str() {
            "Serve" => calls(&[("bash", json!({"command": "sleep 60", "background": true}))]),
            "Still there?" => calls(&[("process_list", json!({}))]),
            _ => text("ok"),
        }
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Serve"), PermissionMode::Yolo);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    let started = tool_results(&world.server.requests()[1])[0].1.clone();
    let pid: u32 = started
        .split_whitespace()
        .find_map(|w| w.trim_end_matches('.').parse().ok())
        .unwrap_or_else(|| panic!("{started}"));
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit(')').next().unwrap().trim_start().starts_with('Z'))
    };
    assert!(alive(pid), "the server still runs after the answer");
    // The next run of the task sees it.
    let (handle, rx) = world.start(world.task, Some("Still there?"), PermissionMode::Yolo);
    assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
    let listed = tool_results(world.server.requests().last().unwrap());
    assert!(
        listed.iter().any(|(_, t)| t.contains("sleep 60")),
        "{listed:?}"
    );
    // Closing the task ends it.
    world.agent.close_task(world.task);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "{pid} outlived its task"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    world.server.assert_clean();
}

/// What a crash leaves mid-answer: an answer of three commands (`touch one`, `touch two`,
/// `touch three`, ids c1–c3) whose results were not stored yet, each call where `states` says it
/// got to (the first finished, with "made one").
fn crashed_mid_answer(world: &World, states: &[(&str, codewright_store::CallState)]) {
    use codewright_protocol::{Message, ToolContent};
    use codewright_store::CallState;
    let store = world.store.lock().unwrap();
    store
        .append_message(world.task, &Message::user("Make three files"))
        .unwrap();
    let call = |id: &str, command: &str| Part::ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({ "command": command }).to_string(),
        truncated: false,
        signature: None,
    };
    let answer = Message::new(
        Role::Assistant,
        vec![
            call("c1", "touch one"),
            call("c2", "touch two"),
            call("c3", "touch three"),
        ],
    );
    store.append_message(world.task, &answer).unwrap();
    let made_one = Part::ToolResult {
        call_id: "c1".into(),
        content: vec![ToolContent::Text {
            text: "made one".into(),
        }],
        is_error: false,
        detail: None,
    };
    store
        .set_call_state(world.task, "c1", &CallState::Finished(made_one))
        .unwrap();
    for (id, state) in states {
        store.set_call_state(world.task, id, state).unwrap();
    }
    store
        .set_task_status(world.task, TaskStatus::Interrupted)
        .unwrap();
}

fn interrupted_notice(events: &[AgentEvent]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Notice { message, .. } if message.contains("interrupted") => {
                Some(message.clone())
            }
            _ => None,
        })
        .expect("a notice that the last run was interrupted")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_after_a_crash_asks_again_what_waited_and_runs_what_had_not_started() {
    use codewright_store::CallState;
    let world = World::new(script(|_, _| text("Carried on."))).await;
    // c2 waited for approval; c3 had not started.
    crashed_mid_answer(&world, &[("c2", CallState::Asking)]);
    let (handle, rx) = world.start(world.task, None, PermissionMode::Normal);
    let mut asked = Vec::new();
    let (outcome, events) = drive(handle, rx, |e, h| {
        if let AgentEvent::ApprovalRequested { request } = e {
            asked.push(request.call_id.clone());
            h.decide(request.id, Decision::Approve).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    assert_eq!(
        asked,
        ["c2", "c3"],
        "what had not run is asked again, in order"
    );
    assert!(
        !world.path("one").exists(),
        "a finished call is not run again"
    );
    assert!(world.path("two").exists() && world.path("three").exists());
    assert!(!interrupted_notice(&events).contains("may or may not"));
    let results = tool_results(&world.server.requests()[0]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], ("c1".into(), "made one".into()));
    assert!(
        results[1..].iter().all(|(_, r)| !r.contains("interrupted")),
        "{results:?}"
    );
    world.server.assert_clean();
    let store = world.store.lock().unwrap();
    assert!(store.call_states(world.task).unwrap().is_empty());
    assert!(store.tasks_asking().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_call_that_may_have_run_nothing_runs_without_the_model() {
    use codewright_store::CallState;
    let world = World::new(script(|_, _| text("I will check first."))).await;
    // c2 was running: it may have taken effect, and c3 (which waited) may depend on it.
    crashed_mid_answer(
        &world,
        &[("c2", CallState::Running), ("c3", CallState::Asking)],
    );
    let (handle, rx) = world.start(world.task, None, PermissionMode::Yolo);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    assert!(!world.path("two").exists() && !world.path("three").exists());
    let notice = interrupted_notice(&events);
    assert!(
        notice.contains("may or may not have taken effect"),
        "{notice}"
    );
    assert!(
        notice.contains("touch two") && !notice.contains("touch three"),
        "{notice}"
    );
    let results = tool_results(&world.server.requests()[0]);
    assert_eq!(results[0].1, "made one");
    assert!(results[1].1.contains("may or may not"), "{results:?}");
    assert!(
        results[2].1.contains("not run: Codewright stopped"),
        "{results:?}"
    );
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_message_after_a_crash_answers_what_had_not_run_and_says_what_may_have() {
    use codewright_agent::RunRequest;
    use codewright_store::CallState;
    let world = World::new(script(|_, _| text("Fine."))).await;
    crashed_mid_answer(
        &world,
        &[("c2", CallState::Running), ("c3", CallState::Asking)],
    );
    // As a front end sends it: the message is taken first, then the run starts.
    let lock = world.agent.hold(world.task).unwrap();
    world
        .agent
        .take_message(
            &lock,
            &codewright_protocol::Message::user("Forget the files"),
        )
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let handle = world.agent.start_held(
        Some(lock),
        RunRequest {
            task: world.task,
            prompt: None,
            model: world.model(),
            mode: PermissionMode::Normal,
            sandbox: false,
            compaction: None,
            this_run: Default::default(),
        },
        tx,
        None,
    );
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { .. })),
        "nothing is asked: the user moved on"
    );
    assert!(!world.path("three").exists());
    assert!(interrupted_notice(&events).contains("touch two"));
    let request = &world.server.requests()[0];
    let results = tool_results(request);
    assert_eq!(results[0].1, "made one");
    assert!(results[1].1.contains("may or may not"), "{results:?}");
    assert!(
        results[2].1.contains("not run: Codewright stopped"),
        "{results:?}"
    );
    assert_eq!(last_text(request), "Forget the files");
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_take_images_is_told_their_names_instead() {
    use codewright_protocol::{Attachment, AttachmentKind, Message};
    let world = World::new(script(|_, _| text("I cannot see it."))).await;
    let image = Attachment {
        kind: AttachmentKind::Image,
        name: "screen.png".into(),
        mime: "image/png".into(),
        size: 8,
        path: None,
        data: Some("iVBORw0KGgo=".into()),
    };
    world
        .store
        .lock()
        .unwrap()
        .append_message(
            world.task,
            &Message::user_with("What is this?", vec![image]),
        )
        .unwrap();
    // The scripted model is not in the catalog: as far as Codewright knows, it takes no images.
    assert!(!world.model().info.images);
    let (handle, rx) = world.start(world.task, None, PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let sent = world.server.requests()[0].to_string();
    assert!(!sent.contains("iVBORw0KGgo"), "the image was sent: {sent}");
    assert!(
        sent.contains("screen.png, which this model cannot see"),
        "{sent}"
    );
    assert!(
        events.iter().any(|e| matches!(e, AgentEvent::Notice { message, .. } if message.contains("does not take images"))),
        "the user is told"
    );
    // Stored as attached: a model that takes images sees it later.
    let stored = world.messages(world.task);
    assert!(stored[0]
        .message
        .parts
        .iter()
        .any(|p| matches!(p, Part::Attachment(_))));
    world.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_longer_than_a_small_window_fail_before_anything_is_sent() {
    let world = World::new(script(|_, _| text("never asked"))).await;
    // A 19.5 KB AGENTS.md made a 5,265-token request to a 4,096-token model.
    std::fs::write(
        world.path("AGENTS.md"),
        "Follow the house style. ".repeat(820),
    )
    .unwrap();
    let mut model = world.model();
    model.info.context_window = 4_096;
    model.info.max_output = 512;
    let (handle, rx) = world.start_with(world.task, Some("Hello"), PermissionMode::Normal, model);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Failed);
    assert!(world.server.requests().is_empty(), "nothing was sent");
    let (kind, message) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Error { kind, message, .. } => Some((*kind, message.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(kind, codewright_protocol::ErrorKind::ContextOverflow);
    assert!(
        message.contains("AGENTS.md") && message.contains("4096 tokens"),
        "{message}"
    );
    // The prompt is kept to continue with another model.
    assert_eq!(world.messages(world.task)[0].message.text(), "Hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_stream_is_not_retried_and_says_how_long_the_request_was() {
    let world = World::new(script(|_, _| {
        Reply::Raw(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 0\r\n\r\n"
                .into(),
            End::Close,
        )
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Hello"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Failed);
    assert_eq!(
        world.server.requests().len(),
        1,
        "the same request is not sent again"
    );
    let message = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        message.contains("without sending anything")
            && message.contains("This request was about")
            && message.contains("context window of"),
        "{message}"
    );
    // The answer keeps what the user was told, under the model id the run asked for.
    let stored = world.messages(world.task);
    let answer = &stored.last().unwrap().message;
    assert_eq!(answer.error.as_deref(), Some(message.as_str()));
    assert_eq!(answer.model, Some(world.model().info.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_a_server_did_not_report_is_estimated_and_marked_so() {
    // llama-cpp-python sends no usage chunk even when asked for one.
    let world = World::new(script(|_, _| {
        recorded("local-servers/llamacpp_python_smollm2_text_no_usage.sse")
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Bonjour"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let (usage, context) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Usage {
                usage,
                context_tokens,
                ..
            } => Some((*usage, *context_tokens)),
            _ => None,
        })
        .unwrap();
    assert!(usage.estimated, "{usage:?}");
    // The system prompt and the tools alone are over a thousand tokens.
    assert!(usage.input > 1_000 && usage.output > 10, "{usage:?}");
    assert_eq!(context, usage.input + usage.output);
    let stored = world.messages(world.task);
    assert_eq!(stored[1].message.usage, Some(usage), "stored as estimated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_windows_first_request_has_room_for_an_answer() {
    let world = World::new(script(|_, _| text("Bonjour"))).await;
    let first_request = |window: u64, max_output: u64| {
        let world = &world;
        async move {
            let mut model = world.model();
            model.info.context_window = window;
            model.info.max_output = max_output;
            let task = world.new_task();
            let (handle, rx) = world.start_with(task, Some("Hello"), PermissionMode::Normal, model);
            assert_eq!(drive(handle, rx, |_, _| {}).await.0, RunOutcome::Done);
            world.server.requests().pop().unwrap()
        }
    };
    let full = first_request(128_000, 512).await;
    // A model that may write as much as its window: the answer gets what the request leaves.
    // (A local one this small is sent no tools' schemas: it writes its calls in words.)
    let small = first_request(4_096, 4_096).await;
    let size = |body: &Value| body.to_string().len();
    eprintln!(
        "first request of a run: {} B with the tools, {} B for a small local model (~{} and ~{} tokens)",
        size(&full),
        size(&small),
        size(&full) / 4,
        size(&small) / 4
    );
    assert!(has_tools(&full));
    assert!(!has_tools(&small), "{small}");
    // The whole first request leaves the answer room in a 4k window, and asks for no more.
    let asked = small["max_tokens"].as_u64().unwrap() as usize;
    assert!(asked >= 1_024, "at least the answer's reserve: {asked}");
    assert!(
        size(&small) / 4 + asked <= 4_096,
        "{} B, {asked}",
        size(&small)
    );
    assert_eq!(full["max_tokens"], 512);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_slow_to_start_is_waited_for_visibly() {
    // A local model reading a long prompt: nothing for a while, then the answer.
    let world = World::with_config(
        script(|_, _| Reply::Late(Box::new(text("Read it all.")), 1_500)),
        AgentConfig {
            quiet_notice_after: Duration::from_millis(150),
            ..AgentConfig::default()
        },
    )
    .await;
    let (handle, rx) = world.start(world.task, Some("Summarize"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let notices: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { message, .. } if message.contains("has sent nothing yet") => {
                Some(message)
            }
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "told once: {notices:?}");
    assert!(
        notices[0].contains("reads the whole prompt") && notices[0].contains("300 s"),
        "{}",
        notices[0]
    );
}

/// The system prompt a request carried (OpenAI Chat: the first message).
fn system_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn offers(body: &Value, tool: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == tool))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_by_name_and_loaded_with_their_files_when_the_model_asks() {
    let world = World::new(Arc::new(|i, _body: &Value| match i {
        0 => calls(&[("skill", json!({"name": "deploy"}))]),
        1 => calls(&[(
            "skill",
            json!({"name": "deploy", "file": "scripts/deploy.sh"}),
        )]),
        2 => calls(&[("skill", json!({"name": "deplyo"}))]),
        _ => text("Deployed."),
    }))
    .await;
    let skill = world.path(".codewright/skills/deploy");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app to staging\n---\n\n# Deploying\nRun scripts/deploy.sh, then check the health page.\n",
    )
    .unwrap();
    std::fs::write(skill.join("scripts/deploy.sh"), "echo deploying\n").unwrap();
    world.user_file(
        ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Read and fill PDF forms\n---\nUse pdftotext.\n",
    );
    world.user_file(".claude/skills/broken/SKILL.md", "---\nname: [\n---\n");
    world.trust_project();
    let (handle, rx) = world.start(world.task, Some("Ship it"), PermissionMode::Normal);
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    let system = system_of(&requests[0]);
    // Names and descriptions only, after the project's rules and before the environment.
    assert!(
        system.contains("\n\n# Skills\n\n") && system.contains("\n- deploy: Deploy the app to staging\n- pdf: Read and fill PDF forms\n\n# Environment"),
        "{system}"
    );
    assert!(!system.contains("pdftotext") && !system.contains("Deploying"));
    assert!(offers(&requests[0], "skill"));
    let result = |i: usize| tool_results(&requests[i]).pop().unwrap().1;
    let loaded = result(1);
    assert!(
        loaded.starts_with("# Skill: deploy\n\nIts folder: "),
        "{loaded}"
    );
    assert!(
        loaded.contains("# Deploying\nRun scripts/deploy.sh")
            && loaded.ends_with("\n- scripts/deploy.sh")
    );
    assert_eq!(result(2), "echo deploying\n");
    assert!(result(3).contains("There is no skill named \"deplyo\". Did you mean deploy?"));

    // Switched off for the task: not listed. Without skills: no tool, no section.
    world
        .store
        .lock()
        .unwrap()
        .set_task_setting(world.task, "skillsOff", json!(["pdf"]))
        .unwrap();
    let (handle, rx) = world.start(world.task, Some("Again"), PermissionMode::Normal);
    drive(handle, rx, |_, _| {}).await;
    let system = system_of(world.server.requests().last().unwrap());
    assert!(
        system.contains("- deploy: ") && !system.contains("- pdf: "),
        "{system}"
    );
    std::fs::remove_dir_all(world.path(".codewright")).unwrap();
    world
        .store
        .lock()
        .unwrap()
        .set_task_setting(world.task, "skillsOff", json!(["pdf", "deploy"]))
        .unwrap();
    let (handle, rx) = world.start(world.task, Some("Once more"), PermissionMode::Normal);
    drive(handle, rx, |_, _| {}).await;
    let last = world.server.requests().last().unwrap().clone();
    assert!(
        !system_of(&last).contains("# Skills")
            && !offers(&last, "skill")
            && offers(&last, "read_file")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_in_the_prompt_and_written_only_with_approval() {
    let world = World::new(Arc::new(|i, _body: &Value| match i {
        0 => calls(&[(
            "memory_write",
            json!({"scope": "project", "content": "Build with make; tests with make test."}),
        )]),
        1 => calls(&[(
            "memory_write",
            json!({"scope": "user", "content": "The user prefers short answers."}),
        )]),
        2 => calls(&[("memory_read", json!({}))]),
        _ => text("Noted."),
    }))
    .await;
    world.user_file(".codewright/memory.md", "Prefers tabs.\n");
    let (handle, rx) = world.start(
        world.task,
        Some("Remember how to build"),
        PermissionMode::Normal,
    );
    let mut asked = Vec::new();
    let (outcome, _) = drive(handle, rx, |event, handle| {
        if let AgentEvent::ApprovalRequested { request } = event {
            asked.push(request.summary.clone());
            // The project's memory is approved; the user's is rejected.
            let decision = if asked.len() == 1 {
                Decision::Approve
            } else {
                Decision::Reject {
                    feedback: Some("not that".into()),
                }
            };
            handle.decide(request.id, decision).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let requests = world.server.requests();
    let system = system_of(&requests[0]);
    assert!(
        system.contains("# Memory\n\n")
            && system.contains("## Your memory (every project)\n\nPrefers tabs."),
        "{system}"
    );
    assert_eq!(
        std::fs::read_to_string(world.path(".codewright/memory.md")).unwrap(),
        "Build with make; tests with make test.\n"
    );
    let user = world.home.path().join("user/.codewright/memory.md");
    assert_eq!(
        std::fs::read_to_string(user).unwrap(),
        "Prefers tabs.\n",
        "rejected: unchanged"
    );
    let read = tool_results(&requests[3]).pop().unwrap().1;
    assert!(
        read.contains("# project memory\n\nBuild with make; tests with make test.")
            && read.contains("# your memory (every project)\n\nPrefers tabs."),
        "{read}"
    );
    // The next run's prompt carries the new project memory.
    let (handle, rx) = world.start(world.task, Some("Again"), PermissionMode::Normal);
    drive(handle, rx, |_, _| {}).await;
    let system = system_of(world.server.requests().last().unwrap());
    assert!(
        system.contains("## Project memory\n\nBuild with make"),
        "{system}"
    );
}

/// A task's agent: its role goes into the system prompt and only its tools are offered; a call
/// to another tool is answered as one to a tool that does not exist, and nothing changes. A
/// user's agent from `.claude/agents` (Claude Code's format) works unchanged; an agent whose
/// file broke fails the run saying why, rather than run with more tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_agent_gets_its_role_and_only_its_tools() {
    let world = World::new(Arc::new(|i, _body: &Value| match i {
        0 => calls(&[(
            "write_file",
            json!({"path": "plan.txt", "content": "sneaky"}),
        )]),
        _ => text("Here is the plan. Switch to the coder (/agent coder) to carry it out."),
    }))
    .await;
    let agent = |name: &str| {
        world
            .store
            .lock()
            .unwrap()
            .set_task_setting(world.task, codewright_agent::AGENT, json!(name))
            .unwrap();
    };
    agent("planner");
    let (handle, rx) = world.start(
        world.task,
        Some("Plan the login page"),
        PermissionMode::Yolo,
    );
    let (outcome, _) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let requests = world.server.requests();
    let system = system_of(&requests[0]);
    assert!(
        system.contains("\n\n# Your role: the planner agent\n\nYou are the planner"),
        "{system}"
    );
    assert!(offers(&requests[0], "read_file") && offers(&requests[0], "todo_write"));
    assert!(
        !offers(&requests[0], "write_file")
            && !offers(&requests[0], "edit_file")
            && !offers(&requests[0], "bash"),
        "a planner changes nothing"
    );
    let refused = tool_results(&requests[1]).pop().unwrap().1;
    assert!(
        refused.contains("there is no tool named \"write_file\""),
        "{refused}"
    );
    assert!(!world.path("plan.txt").exists(), "even in yolo mode");

    // Claude Code's agent file, unchanged: its tools by Claude's names.
    world.user_file(
        ".claude/agents/test-runner.md",
        "---\nname: test-runner\ndescription: Runs the tests and reports failures\ntools: Read, Grep, Bash\nmodel: inherit\n---\nRun the tests; report each failure with its file.\n",
    );
    agent("test-runner");
    let (handle, rx) = world.start(world.task, Some("Run them"), PermissionMode::Normal);
    drive(handle, rx, |_, _| {}).await;
    let last = world.server.requests().last().unwrap().clone();
    assert!(system_of(&last).contains("# Your role: the test-runner agent\n\nRun the tests;"));
    assert!(offers(&last, "bash") && offers(&last, "grep") && !offers(&last, "edit_file"));

    // Its file broken (emptied): the run fails saying why and what to do, before any request;
    // it never falls back to an agent with more tools.
    world.user_file(".claude/agents/test-runner.md", "");
    let sent = world.server.requests().len();
    let (handle, rx) = world.start(world.task, Some("Again"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Failed);
    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Error { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        errors
            .iter()
            .any(|n| n.contains("there is no agent named test-runner")
                && n.contains("test-runner.md: it does not start with front matter")
                && n.contains("Choose another with /agent")),
        "{errors:?}"
    );
    assert_eq!(world.server.requests().len(), sent, "nothing was sent");
}

/// Who a request of the sub-agent test is from: its agent's role, if any.
fn role_of(body: &Value) -> &'static str {
    let system = system_of(body);
    ["explorer", "reviewer"]
        .into_iter()
        .find(|r| system.contains(&format!("# Your role: the {r} agent")))
        .unwrap_or("parent")
}

/// The `agent` tool: the coder hands two jobs at once (an explorer's search, a reviewer's run of
/// the tests); each works in a task of its own with its own tools (never `agent`), the
/// reviewer's command is asked in the parent's events as the reviewer's and answered through the
/// parent's handle, the two reports come back as the calls' results, and what the sub-agents
/// cost is in the parent's totals. The sub-agents' tasks are listed under no project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_handed_to_sub_agents_run_in_tasks_of_their_own_and_come_back_as_reports() {
    let world = World::new(Arc::new(|_i, body: &Value| {
        let answered = !tool_results(body).is_empty();
        match (role_of(body), answered) {
            ("explorer", _) => text("Found: the login form is in src/login.rs:12."),
            ("reviewer", false) => Reply::Calls(
                "I will run the tests.".into(),
                vec![("bash".into(), json!({"command": "echo tests pass"}))],
            ),
            ("reviewer", true) => text("Reviewed: the tests pass."),
            (_, false) => calls(&[
                (
                    "agent",
                    json!({"agent": "explorer", "prompt": "Find the login form; report its file and line."}),
                ),
                (
                    "agent",
                    json!({"agent": "reviewer", "prompt": "Run the tests and report."}),
                ),
            ]),
            (_, true) => text("Both reports are in."),
        }
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Add a login page"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |event, handle| {
        if let AgentEvent::ApprovalRequested { request } = event {
            // Where the reviewer's call got to is its own task's (a crash asks it there, and
            // the parent's calls are the parent's alone).
            let store = world.store.lock().unwrap();
            let reviewer = store
                .child_tasks(world.task)
                .unwrap()
                .into_iter()
                .find(|c| c.title.starts_with("reviewer: "))
                .unwrap();
            let theirs = store.call_states(reviewer.id).unwrap();
            assert!(
                matches!(
                    theirs.get(&request.call_id),
                    Some(codewright_store::CallState::Asking)
                ),
                "{theirs:?}"
            );
            assert!(!store
                .call_states(world.task)
                .unwrap()
                .contains_key(&request.call_id));
            drop(store);
            handle.decide(request.id, Decision::Approve).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    world.server.assert_clean();
    let requests = world.server.requests();
    let parent: Vec<&Value> = requests.iter().filter(|b| role_of(b) == "parent").collect();
    assert!(offers(parent[0], "agent"));
    for child in requests.iter().filter(|b| role_of(b) != "parent") {
        assert!(!offers(child, "agent"), "a sub-agent hands nothing on");
    }
    let explorer = requests.iter().find(|b| role_of(b) == "explorer").unwrap();
    assert!(!offers(explorer, "bash") && offers(explorer, "grep"));
    assert_eq!(
        last_text(explorer),
        "Find the login form; report its file and line.",
        "the job is the sub-agent's whole conversation"
    );
    let reports: Vec<String> = tool_results(parent[1]).into_iter().map(|r| r.1).collect();
    assert_eq!(
        reports,
        [
            "Found: the login form is in src/login.rs:12.",
            "Reviewed: the tests pass."
        ]
    );
    // The reviewer's command was asked as the parent's, saying who asks.
    let asked: Vec<(TaskId, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequested { request } => {
                Some((request.task_id, request.summary.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, world.task);
    assert!(asked[0].1.starts_with("reviewer agent: "), "{asked:?}");

    // While it worked, what the reviewer wrote and its calls were its panel's progress, as
    // they came (the explorer's panel had only what it wrote).
    let mut progress = std::collections::BTreeMap::<&str, String>::new();
    for e in &events {
        if let AgentEvent::ToolProgress {
            task_id,
            call_id,
            text,
        } = e
        {
            if *task_id == world.task {
                progress.entry(call_id).or_default().push_str(text);
            }
        }
    }
    let mut progress: Vec<String> = progress.into_values().collect();
    progress.sort();
    assert_eq!(
        progress,
        [
            "Found: the login form is in src/login.rs:12.",
            "I will run the tests.\n\nbash …\nbash → tests pass\n\nReviewed: the tests pass."
        ]
    );
    let store = world.store.lock().unwrap();
    let children = store.child_tasks(world.task).unwrap();
    assert_eq!(children.len(), 2);
    assert!(children
        .iter()
        .all(|c| c.status == TaskStatus::Done
            && c.parent.as_ref().is_some_and(|p| p.task == world.task)));
    let project = store.task(world.task).unwrap().project_id;
    assert_eq!(
        store.tasks(project).unwrap().len(),
        1,
        "only the parent is listed"
    );
    let own: u64 = store
        .history(world.task)
        .unwrap()
        .iter()
        .filter_map(|m| m.message.usage.map(|u| u.input))
        .sum();
    let theirs: i64 = children.iter().map(|c| c.input_tokens).sum();
    assert!(theirs > 0);
    assert_eq!(
        store.task(world.task).unwrap().input_tokens,
        own as i64 + theirs,
        "the parent's total includes its sub-agents'"
    );
}

/// Stopping the parent stops a sub-agent in the middle of its answer; the call says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_parent_stops_its_sub_agents() {
    let world = World::new(Arc::new(|_i, body: &Value| match role_of(body) {
        "explorer" => Reply::Hang("Searching the whole tree".into()),
        _ => calls(&[(
            "agent",
            json!({"agent": "explorer", "prompt": "Search everything."}),
        )]),
    }))
    .await;
    let (handle, rx) = world.start(world.task, Some("Look around"), PermissionMode::Normal);
    let started = Instant::now();
    let (outcome, _) = drive(handle, rx, |event, handle| {
        if matches!(event, AgentEvent::TextDelta { task_id, .. } if *task_id != world.task) {
            handle.stop();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Stopped);
    assert!(started.elapsed() < Duration::from_secs(20));
    let store = world.store.lock().unwrap();
    let child = &store.child_tasks(world.task).unwrap()[0];
    assert_ne!(child.status, TaskStatus::Running, "{child:?}");
    let history = store.history(world.task).unwrap();
    let result = history
        .iter()
        .flat_map(|m| m.message.parts.iter())
        .find_map(|p| match p {
            Part::ToolResult { content, .. } => Some(format!("{content:?}")),
            _ => None,
        })
        .unwrap();
    assert!(result.contains("stopped"), "{result}");
}

/// A slash command's agent and tools hold for its run only: `/review` runs as the reviewer, a
/// command with `allowed-tools` offers only those (within its agent's), and the next message is
/// the task's own agent with every tool again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_agent_and_tools_hold_for_its_run_only() {
    let world = World::new(Arc::new(|_i, _body: &Value| text("Done."))).await;
    let run = |this_run| world.start_this_run("Go", this_run);
    let (handle, rx) = run(codewright_agent::ThisRun {
        agent: Some("reviewer".into()),
        tools: None,
    });
    drive(handle, rx, |_, _| {}).await;
    let last = world.server.requests().last().unwrap().clone();
    assert!(system_of(&last).contains("# Your role: the reviewer agent"));
    assert!(offers(&last, "bash") && !offers(&last, "edit_file") && !offers(&last, "agent"));

    let (handle, rx) = run(codewright_agent::ThisRun {
        agent: None,
        tools: Some(vec!["bash".into(), "read_file".into()]),
    });
    drive(handle, rx, |_, _| {}).await;
    let last = world.server.requests().last().unwrap().clone();
    let offered: Vec<&str> = last["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["read_file", "bash"]);
    assert!(!system_of(&last).contains("# Your role"));

    let (handle, rx) = run(codewright_agent::ThisRun::default());
    drive(handle, rx, |_, _| {}).await;
    let last = world.server.requests().last().unwrap().clone();
    assert!(offers(&last, "edit_file") && offers(&last, "agent"));
}

/// A sub-agent never gets a tool its parent's run may not use: a command that allows only
/// reading, running and handing on gives its explorer reading alone; and a sub-agent that fails
/// says why in the call's result (its error event reaches no window of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_gets_no_tool_its_parent_may_not_use() {
    let world = World::new(Arc::new(|_i, body: &Value| {
        let answered = !tool_results(body).is_empty();
        match (role_of(body), answered) {
            ("explorer", _) => Reply::Status(503, "busy".into()),
            (_, false) => calls(&[(
                "agent",
                json!({"agent": "explorer", "prompt": "Look around."}),
            )]),
            (_, true) => text("Done."),
        }
    }))
    .await;
    let (handle, rx) = world.start_this_run(
        "Go",
        codewright_agent::ThisRun {
            agent: None,
            tools: Some(vec!["agent".into(), "read_file".into(), "bash".into()]),
        },
    );
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let requests = world.server.requests();
    let explorer = requests.iter().rfind(|b| role_of(b) == "explorer").unwrap();
    let offered: Vec<&str> = explorer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(
        offered,
        ["read_file"],
        "the explorer's tools within the parent's"
    );
    let failed = events.iter().any(|e| {
        matches!(e, AgentEvent::ToolFinished { task_id, preview, .. }
            if *task_id == world.task
                && preview.starts_with("The explorer agent failed: scripted is overloaded"))
    });
    assert!(failed, "{events:?}");
    let result = tool_results(requests.last().unwrap()).pop().unwrap().1;
    assert!(result.contains("(HTTP 503): busy"), "{result}");
}

/// A sub-agent whose agent names a model runs with it (as the front end finds it); one the
/// front end cannot find is the call's error, and nothing is started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_runs_with_its_agents_own_model() {
    let world = World::new(Arc::new(|_i, body: &Value| {
        let answered = !tool_results(body).is_empty();
        let system = system_of(body);
        match (system.contains("# Your role: the"), answered) {
            (true, _) => text("Found it."),
            (false, false) => calls(&[
                (
                    "agent",
                    json!({"agent": "fast-finder", "prompt": "Find it."}),
                ),
                ("agent", json!({"agent": "lost", "prompt": "Find it too."})),
            ]),
            (false, true) => text("Done."),
        }
    }))
    .await;
    world.user_file(
        ".codewright/agents/fast-finder.md",
        "---\ndescription: Finds fast\nmodel: tiny@scripted\n---\nFind.\n",
    );
    world.user_file(
        ".codewright/agents/lost.md",
        "---\ndescription: Its model is gone\nmodel: gone@nowhere\n---\nFind.\n",
    );
    let base = world.model();
    world.agent.set_model_resolver(Arc::new(move |named: &str| {
        if named != "tiny@scripted" {
            return Err(codewright_agent::AgentError::new(
                codewright_protocol::ErrorKind::UnknownModel,
                format!("there is no provider for {named}"),
            ));
        }
        let mut model = base.clone();
        model.info.id = named.into();
        Ok(model)
    }));
    let (handle, rx) = world.start(world.task, Some("Go"), PermissionMode::Normal);
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    let models: Vec<(TaskId, &str)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Request { task_id, model, .. } => Some((*task_id, model.as_str())),
            _ => None,
        })
        .collect();
    assert!(
        models
            .iter()
            .any(|(t, m)| *t != world.task && *m == "tiny@scripted"),
        "{models:?}"
    );
    assert!(models
        .iter()
        .filter(|(t, _)| *t == world.task)
        .all(|(_, m)| *m == "test-model@scripted"));
    let results: Vec<String> = tool_results(world.server.requests().last().unwrap())
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(results[0], "Found it.");
    assert!(
        results[1]
            .contains("the lost agent's model gone@nowhere cannot be used: there is no provider"),
        "{results:?}"
    );
    assert_eq!(
        world
            .store
            .lock()
            .unwrap()
            .child_tasks(world.task)
            .unwrap()
            .len(),
        1,
        "the lost one started nothing"
    );
}

/// The project's MCP servers starting hold the run's first request, shown as starting servers
/// (the run has started: the front end that sent the message is free); a stop ends the wait and
/// the message stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_its_servers_visibly_and_a_stop_ends_the_wait() {
    use codewright_agent::RunRequest;
    let world = World::new(script(|_, _| text("Hello."))).await;
    let start = |prompt: &str, servers: futures_util::future::BoxFuture<'static, ()>| {
        let lock = world.agent.hold(world.task).unwrap();
        world
            .agent
            .take_message(&lock, &Message::user(prompt))
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let request = RunRequest {
            task: world.task,
            prompt: None,
            model: world.model(),
            mode: PermissionMode::Normal,
            sandbox: false,
            compaction: None,
            this_run: Default::default(),
        };
        let handle = world
            .agent
            .start_held(Some(lock), request, tx, Some(servers));
        (handle, rx)
    };
    let starting = |e: &AgentEvent| {
        matches!(
            e,
            AgentEvent::State {
                state: AgentState::StartingServers,
                ..
            }
        )
    };

    // Servers that come up: the request follows.
    let (up, is_up) = tokio::sync::oneshot::channel::<()>();
    let (handle, rx) = start("Hi", Box::pin(async move { is_up.await.unwrap() }));
    let mut up = Some(up);
    let mut asked_before = None;
    let (outcome, events) = drive(handle, rx, |e, _| {
        if starting(e) {
            asked_before = Some(world.server.requests().len());
            up.take().unwrap().send(()).unwrap();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Done);
    assert_eq!(
        asked_before,
        Some(0),
        "no request before the servers were up"
    );
    assert_eq!(world.server.requests().len(), 1);
    assert!(events.iter().any(starting));
    assert_eq!(
        world.store.lock().unwrap().task(world.task).unwrap().status,
        TaskStatus::Done
    );

    // Servers that never come up: a stop ends the wait; nothing is asked, the message stays.
    let (handle, rx) = start("Again", Box::pin(std::future::pending()));
    let (outcome, events) = drive(handle, rx, |e, handle| {
        if starting(e) {
            handle.stop();
        }
    })
    .await;
    assert_eq!(outcome, RunOutcome::Stopped);
    assert!(events.iter().any(starting));
    assert_eq!(world.server.requests().len(), 1);
    let stored = world.messages(world.task);
    assert_eq!(stored.last().unwrap().message.text(), "Again");
    assert_eq!(
        world.store.lock().unwrap().task(world.task).unwrap().status,
        TaskStatus::Idle
    );

    // Servers already up: no wait is shown.
    let (handle, rx) = start("Once more", Box::pin(async {}));
    let (outcome, events) = drive(handle, rx, |_, _| {}).await;
    assert_eq!(outcome, RunOutcome::Done);
    assert!(!events.iter().any(starting));
}
