//! The types that cross Codewright's boundaries — between the engine crates, the desktop shell,
//! the CLI and the UI. Everything here is plain data with a stable serde shape, plus the pure
//! functions that define their invariants ([`answer_every_call`]); no I/O lives in this crate.

mod agent;
pub mod conversation;
mod events;
mod ids;
mod message;
mod records;
mod tools;
pub mod visible;

pub use agent::{AgentEvent, AgentState, ErrorKind, RunOutcome, Work};
pub use conversation::{answer_every_call, Repairs};
pub use events::StoreEvent;
pub use ids::{MessageId, ProjectId, TaskId};
pub use message::{
    omitted_arguments, omitted_bytes, Attachment, AttachmentKind, Message, Part, Role, StopReason,
    ToolCallRef, ToolContent, Usage, MAX_CALL_ARGUMENTS,
};
pub use records::{
    Compaction, MessageRecord, ParentCall, Project, ProjectSettings, SearchHit, SnippetPart, Task,
    TaskSettings, TaskStatus, TaskWorktree, WorktreeState,
};
pub use tools::{
    Action, ApprovalRequest, Checkpoint, CheckpointFile, CheckpointKind, Decision, DecisionKind,
    DiffLine, DirEntry, FileMatches, Hunk, LineKind, MatchLine, PermissionMode, PermissionRule,
    ProcessInfo, Question, RuleAction, SavedRule, Todo, TodoStatus, ToolCategory, ToolDetail,
    ToolSpec, EDITABLE_BYTES,
};
