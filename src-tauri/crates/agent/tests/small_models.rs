//! What small local models really write (recorded from Qwen2.5-Coder-1.5B on llama-server, native
//! tools offered): a call as a fenced JSON object in the answer's text. It is taken as a call of
//! the offered tool — run, answered, and the run goes on — never as the final answer.

mod common;

use codewright_protocol::{PermissionMode, RunOutcome};
use common::{recorded, text, tool_results, World};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_written_as_fenced_json_is_run_not_taken_as_the_answer() {
    let world = World::new(Arc::new(|i, _: &serde_json::Value| match i {
        0 => recorded("local-servers/llamacpp_server_qwen25coder15b_text_call_1.sse"),
        _ => text("Done."),
    }))
    .await;
    std::fs::create_dir_all(world.path("src")).unwrap();
    std::fs::write(world.path("src/main.rs"), "pass\n").unwrap();
    let (handle, mut rx) =
        world.start(world.task, Some("Implement the stub"), PermissionMode::Yolo);
    while rx.recv().await.is_some() {}
    assert_eq!(handle.wait().await, RunOutcome::Done);
    let requests = world.server.requests();
    assert_eq!(requests.len(), 2, "the run ended on the call's text");
    // A local model nobody described is asked for a short answer, not 8,192 tokens.
    assert_eq!(
        requests[0]["max_tokens"],
        codewright_agent::LOCAL_UNKNOWN_MAX_OUTPUT,
        "{:.300}",
        requests[0]
    );
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    // The edit was tried on the file the model meant (`@src/main.rs` is `src/main.rs`); it had
    // not been read, and the model is told so.
    assert!(
        results[0].1.contains("you have not read src/main.rs"),
        "{results:?}"
    );
    let stored = world.messages(world.task);
    assert!(
        stored.iter().any(|m| m.message.parts.iter().any(
            |p| matches!(p, codewright_protocol::Part::ToolCall { name, .. } if name == "edit_file")
        )),
        "the call is stored as a call"
    );
}

/// A run whose model only writes (a plan, a refusal) reads, changes and runs nothing, and its end
/// says so; one that reads and edits counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_says_what_its_tools_did_and_an_answer_alone_is_said_as_such() {
    use codewright_protocol::{AgentEvent, Work};
    use serde_json::json;
    let world = World::new(Arc::new(|i, body: &serde_json::Value| {
        let asked = common::last_text(body);
        match i {
            _ if asked.contains("plan") => text("1. Read the file. 2. Implement it."),
            _ if common::tool_results(body).is_empty() => common::calls(&[
                ("read_file", json!({"path": "a.txt"})),
                ("read_file", json!({"path": "missing.txt"})),
            ]),
            _ => text("Read it."),
        }
    }))
    .await;
    std::fs::write(world.path("a.txt"), "x\n").unwrap();
    let finished = |mut rx: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>| async move {
        let mut work = None;
        while let Some(event) = rx.recv().await {
            if let AgentEvent::RunFinished { work: w, .. } = event {
                work = Some(w);
            }
        }
        work.expect("the run finished")
    };
    let (handle, rx) = world.start(world.task, Some("Just a plan"), PermissionMode::Yolo);
    let work = finished(rx).await;
    assert_eq!(handle.wait().await, RunOutcome::Done);
    assert!(work.is_nothing(), "{work:?}");
    let (handle, rx) = world.start(world.task, Some("Read a.txt"), PermissionMode::Yolo);
    let work = finished(rx).await;
    assert_eq!(handle.wait().await, RunOutcome::Done);
    // The read of a missing file failed: it does not count.
    assert_eq!(
        work,
        Work {
            reads: 1,
            ..Work::default()
        }
    );
}
