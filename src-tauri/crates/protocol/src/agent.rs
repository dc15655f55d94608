//! What the agent loop reports while it runs a task. The desktop shell and the CLI are both just
//! consumers of these events (the CLI's `exec --json` prints them one per line); the store is
//! updated by the engine itself.

use crate::{ApprovalRequest, Decision, MessageId, Question, TaskId, ToolDetail, Usage};
use serde::{Deserialize, Serialize};

/// Where the loop is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::EnumIter)]
#[serde(rename_all = "camelCase")]
pub enum AgentState {
    /// Waiting for a free slot (too many tasks are running).
    Queued,
    /// Waiting for the project's MCP servers to start (the first run in a project), so the
    /// first request offers their tools; a stop ends the wait.
    StartingServers,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::EnumIter)]
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

/// What kind of error ended a run or refused a request: front ends branch on it (which hint to
/// show, whether to offer a retry); the message that comes with it is written for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::EnumIter)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    /// The provider refused the key.
    Auth,
    /// The provider has no key to send.
    MissingKey,
    /// No model was chosen and no main model is set.
    NoModel,
    /// The model or provider name is not known.
    UnknownModel,
    RateLimit,
    Overloaded,
    ContextOverflow,
    InvalidRequest,
    NotFound,
    Network,
    /// The provider sent nothing for longer than its first-byte or idle timeout.
    Timeout,
    /// The provider answered with something that is not a valid event stream (a web page, a
    /// malformed event).
    BadResponse,
    StreamEndedEarly,
    Provider,
    /// The task is already running elsewhere (another window or process).
    Busy,
    /// The task is not running (stop, approve or answer came too late).
    NotRunning,
    /// The approval or question was already answered (another window, a stale dialog).
    AlreadyAnswered,
    /// The answer is not one the request offered (a broader rule than the user was shown).
    NotOffered,
    /// The message was empty, or there is nothing to continue.
    BadInput,
    /// A checkpoint could not be restored.
    Checkpoint,
    /// Compaction failed.
    Compaction,
    /// The database failed.
    Store,
    /// Anything else that kept the run from starting (a project folder gone, a lock file).
    Setup,
    /// The data folder or its database cannot be used (unwritable, locked, the disk full).
    DataDir,
    /// The database is not a readable Codewright database.
    Corrupt,
    /// The database was written by a newer Codewright.
    TooNew,
    /// A folder the user gave does not exist, is a file, or cannot be read.
    BadPath,
    /// The folder is already a project.
    AlreadyAdded,
    /// A window asked for what it may not have (another task's data).
    Denied,
    /// The window system failed (a window, a native dialog).
    Window,
    /// git is missing, or a git command failed.
    Git,
    /// Work would be overwritten or lost (a merge that conflicts, a checkout with changes of
    /// its own): nothing was changed.
    Conflict,
    /// An MCP server could not be started or reached, or answered with an error.
    Mcp,
    /// A tool run by hand (`tool run`) ended in an error; its output says why.
    ToolFailed,
}

impl ErrorKind {
    /// The data cannot be used at all: a window shows an error screen, not a passing message.
    pub fn is_fatal(self) -> bool {
        matches!(
            self,
            ErrorKind::DataDir | ErrorKind::Corrupt | ErrorKind::TooNew
        )
    }
}

/// One thing that happened in a running task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::VariantNames)]
#[serde(tag = "type", rename_all = "camelCase")]
#[strum(serialize_all = "camelCase")]
pub enum AgentEvent {
    /// A run began (`turn` numbers the user's messages; checkpoints are kept per turn).
    #[serde(rename_all = "camelCase")]
    RunStarted { task_id: TaskId, turn: i64 },
    /// The files the run's system prompt was made from: instructions (AGENTS.md…), memory, and
    /// the `SKILL.md` of each skill it lists (project-relative, or `~/…`).
    #[serde(rename_all = "camelCase")]
    PromptRead { task_id: TaskId, files: Vec<String> },
    #[serde(rename_all = "camelCase")]
    State { task_id: TaskId, state: AgentState },
    /// A request to the model is about to be sent (iteration counts from 1 within the run).
    #[serde(rename_all = "camelCase")]
    Request {
        task_id: TaskId,
        iteration: u32,
        model: String,
    },
    /// The answer's message was created in the store (`message_id`); its deltas follow.
    #[serde(rename_all = "camelCase")]
    AnswerStarted {
        task_id: TaskId,
        message_id: MessageId,
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
    /// A call was handed to its tool: it runs now, or first asks the user (an
    /// `ApprovalRequested` follows). Sent whether or not the call's streaming was seen.
    #[serde(rename_all = "camelCase")]
    ToolRunning { task_id: TaskId, call_id: String },
    #[serde(rename_all = "camelCase")]
    ApprovalRequested { request: ApprovalRequest },
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        task_id: TaskId,
        id: u64,
        /// The call it was for: an approved one runs now.
        call_id: String,
        decision: Decision,
    },
    #[serde(rename_all = "camelCase")]
    QuestionAsked { question: Question },
    /// A question was answered (or dropped by a stop).
    #[serde(rename_all = "camelCase")]
    QuestionAnswered { task_id: TaskId, id: u64 },
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
        /// What the model sees now instead of the messages before `first_kept_seq`.
        summary: String,
        first_kept_seq: i64,
    },
    /// Something the user should know that is not an error.
    #[serde(rename_all = "camelCase")]
    Notice { task_id: TaskId, message: String },
    /// Something went wrong; `kind` is stable for front ends to branch on.
    #[serde(rename_all = "camelCase")]
    Error {
        task_id: TaskId,
        kind: ErrorKind,
        message: String,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        task_id: TaskId,
        outcome: RunOutcome,
        /// What the run's tools did (calls that ran without an error).
        #[serde(default)]
        work: Work,
    },
}

/// What a run's tools did: calls that ran without an error, by what they do. A run that read,
/// changed and ran nothing says so ([`Work::is_nothing`]): its answer is all it did; one that
/// ended with a check of the user's failing says which ([`Work::failing`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Work {
    /// Files read, listed or searched; pages fetched; skills, memory and plans (read-only tools).
    pub reads: u32,
    /// Files created or changed.
    pub edits: u32,
    /// Commands run.
    pub commands: u32,
    /// Calls of a tool the run no longer offered.
    pub other: u32,
    /// The check commands the user's message named (`python3 -m pytest -q`) that failed when
    /// they last ran, with nothing changed since: the task is not done. (Followed for small
    /// models and models without native tools, whose checks Codewright runs.)
    #[serde(default)]
    pub failing: Vec<String>,
}

impl Work {
    /// Nothing read, changed or run: the answer is all the run did.
    pub fn is_nothing(&self) -> bool {
        self.reads == 0 && self.edits == 0 && self.commands == 0 && self.other == 0
    }
}

impl AgentEvent {
    /// The task the event is about.
    pub fn task_id(&self) -> TaskId {
        use AgentEvent::*;
        match self {
            ApprovalRequested { request } => request.task_id,
            QuestionAsked { question } => question.task_id,
            RunStarted { task_id, .. }
            | PromptRead { task_id, .. }
            | State { task_id, .. }
            | Request { task_id, .. }
            | AnswerStarted { task_id, .. }
            | TextDelta { task_id, .. }
            | ThinkingDelta { task_id, .. }
            | ToolCallStarted { task_id, .. }
            | ToolCallArguments { task_id, .. }
            | ToolRunning { task_id, .. }
            | ApprovalResolved { task_id, .. }
            | QuestionAnswered { task_id, .. }
            | ToolProgress { task_id, .. }
            | ToolFinished { task_id, .. }
            | Usage { task_id, .. }
            | Compaction { task_id, .. }
            | Notice { task_id, .. }
            | Error { task_id, .. }
            | RunFinished { task_id, .. } => *task_id,
        }
    }
}
