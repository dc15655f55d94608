//! Running one answer's tool calls: consecutive calls that are safe to run together (reads,
//! searches) run in parallel, bounded; the rest run one at a time in the model's order. Results
//! come back in call order, exactly one per call, whatever happens.

use crate::Events;
use codewright_protocol::{AgentEvent, Part, TaskId, ToolContent};
use codewright_store::{CallState, Store};
use codewright_tools::{CallContext, Registry, Session, ToolOutput};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Calls running at once at most.
const PARALLEL: usize = 4;
/// Characters of a result repeated in its event.
const PREVIEW_CHARS: usize = 2000;

/// A tool call to run.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub truncated: bool,
}

/// Runs `calls`, returning one result part per call, in order. Where each call got to is
/// recorded in `store` as it happens (see [`CallState`]).
pub(crate) async fn run_calls(
    registry: &Registry,
    session: &Arc<Session>,
    store: &Arc<Mutex<Store>>,
    calls: Vec<Call>,
    cancel: &CancellationToken,
    events: &Events,
) -> Vec<Part> {
    let mut results = Vec::with_capacity(calls.len());
    let mut i = 0;
    while i < calls.len() {
        let parallel =
            |c: &Call| !c.truncated && registry.get(&c.name).is_some_and(|t| t.concurrent());
        let end = if parallel(&calls[i]) {
            i + calls[i..].iter().take_while(|c| parallel(c)).count()
        } else {
            i + 1
        };
        for chunk in calls[i..end].chunks(PARALLEL) {
            let outputs = futures_util::future::join_all(
                chunk
                    .iter()
                    .map(|call| run_one(registry, session, store, call, cancel, events)),
            )
            .await;
            results.extend(outputs);
        }
        i = end;
    }
    results
}

async fn run_one(
    registry: &Registry,
    session: &Arc<Session>,
    store: &Arc<Mutex<Store>>,
    call: &Call,
    cancel: &CancellationToken,
    events: &Events,
) -> Part {
    let task = session.task;
    let record = |state: &CallState| {
        let _ = store
            .lock()
            .expect("store lock")
            .set_call_state(task, &call.id, state);
    };
    let output = if let Some(bytes) = codewright_protocol::omitted_bytes(&call.arguments) {
        ToolOutput::error(format!(
            "This call's arguments were {:.1} MB, over the {} MB one call may carry, so it was not run and they were not kept. Make smaller calls: create a large file with its first part and add the rest with edit_file, or generate it with a command.",
            bytes as f64 / (1024.0 * 1024.0),
            codewright_protocol::MAX_CALL_ARGUMENTS / (1024 * 1024)
        ))
    } else if call.truncated {
        ToolOutput::error(
            "This call was cut off by the output limit, so its arguments are incomplete and it was not run. Make smaller calls (split a large write into a create and several edits).",
        )
    } else if cancel.is_cancelled() {
        ToolOutput::error(codewright_llm::request::INTERRUPTED)
    } else {
        let progress_events = events.clone();
        let call_id = call.id.clone();
        let cx = CallContext {
            session: session.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            cancel: cancel.child_token(),
            progress: Some(Arc::new(move |text: &str| {
                let _ = progress_events.send(AgentEvent::ToolProgress {
                    task_id: task,
                    call_id: call_id.clone(),
                    text: text.to_string(),
                });
            })),
        };
        record(&CallState::Running);
        let _ = events.send(AgentEvent::ToolRunning {
            task_id: task,
            call_id: call.id.clone(),
        });
        registry.call(&call.name, &call.arguments, &cx).await
    };
    finished(events, task, call, &output);
    let result = Part::ToolResult {
        call_id: call.id.clone(),
        content: output.content,
        is_error: output.is_error,
        detail: output.detail.map(Box::new),
    };
    record(&CallState::Finished(result.clone()));
    result
}

fn finished(events: &Events, task: TaskId, call: &Call, output: &ToolOutput) {
    let text = output
        .content
        .iter()
        .map(ToolContent::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    let _ = events.send(AgentEvent::ToolFinished {
        task_id: task,
        call_id: call.id.clone(),
        name: call.name.clone(),
        is_error: output.is_error,
        preview: text.chars().take(PREVIEW_CHARS).collect(),
        detail: output.detail.clone().map(Box::new),
    });
}
