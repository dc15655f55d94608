//! What the agent loop reports while it runs a task. The desktop shell and the CLI are both just
//! consumers of these events (the CLI's `exec --json` prints them one per line); the store is
//! updated by the engine itself.

use crate::{ApprovalRequest, Decision, Question, TaskId, ToolDetail, Usage};
use serde::{Deserialize, Serialize};

/// Where the loop is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AgentState {
    /// Waiting for a free slot (too many tasks are running).
    Queued,
    /// A request is out; the answer is streaming.
    Streaming,
    /// A tool call waits for the user.
    AwaitingApproval,
    /// Tool calls are running.
    RunningTools,
    /// The history is being summarized to fit the context window.
    Compacting,
    /// Not running.
    Idle,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunOutcome {
    /// The model answered without calling more tools.
    Done,
    /// The user stopped it.
    Stopped,
    /// The iteration limit was reached; a summary was written and the task paused.
    Paused,
    /// An error ended it (the error event says which).
    Failed,
}

/// One thing that happened in a running task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AgentEvent {
    /// A run began (`turn` numbers the user's messages; checkpoints are kept per turn).
    #[serde(rename_all = "camelCase")]
    RunStarted { task_id: TaskId, turn: i64 },
    #[serde(rename_all = "camelCase")]
    State { task_id: TaskId, state: AgentState },
    /// A request to the model is about to be sent (iteration counts from 1 within the run).
    #[serde(rename_all = "camelCase")]
    Request {
        task_id: TaskId,
        iteration: u32,
        model: String,
    },
    #[serde(rename_all = "camelCase")]
    TextDelta { task_id: TaskId, text: String },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta { task_id: TaskId, text: String },
    /// The model started a tool call; its arguments follow as they stream.
    #[serde(rename_all = "camelCase")]
    ToolCallStarted {
        task_id: TaskId,
        call_id: String,
        name: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArguments {
        task_id: TaskId,
        call_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalRequested { request: ApprovalRequest },
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        task_id: TaskId,
        id: u64,
        decision: Decision,
    },
    #[serde(rename_all = "camelCase")]
    QuestionAsked { question: Question },
    /// Output a running tool produced (command output as it arrives).
    #[serde(rename_all = "camelCase")]
    ToolProgress {
        task_id: TaskId,
        call_id: String,
        text: String,
    },
    /// A tool call's result (its full text is in the stored message).
    #[serde(rename_all = "camelCase")]
    ToolFinished {
        task_id: TaskId,
        call_id: String,
        name: String,
        is_error: bool,
        /// The result text, cut to a few KB.
        preview: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<Box<ToolDetail>>,
    },
    /// Tokens of the last response, and how full the context window is.
    #[serde(rename_all = "camelCase")]
    Usage {
        task_id: TaskId,
        usage: Usage,
        context_tokens: u64,
        context_window: u64,
    },
    /// The history was summarized.
    #[serde(rename_all = "camelCase")]
    Compaction {
        task_id: TaskId,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Something the user should know that is not an error.
    #[serde(rename_all = "camelCase")]
    Notice { task_id: TaskId, message: String },
    /// Something went wrong; `kind` is stable for front ends to branch on.
    #[serde(rename_all = "camelCase")]
    Error {
        task_id: TaskId,
        kind: String,
        message: String,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        task_id: TaskId,
        outcome: RunOutcome,
    },
}
