//! The agent loop: runs one task — builds the system prompt, sends the (repaired) history with the
//! tools, streams the answer into the store, runs the tool calls (reads in parallel, the rest in
//! order, each through the approval gate), and repeats until the model stops calling tools, the
//! user stops it, or the iteration limit pauses it. Everything it does is reported as
//! [`AgentEvent`]s; the desktop shell and the CLI only consume them and answer approvals. A
//! task's agent may hand self-contained jobs to sub-agents (the `agent` tool, [`subagent`]).
//!
//! States ([`AgentState`]): queued → streaming → (awaiting approval ⇄ running tools) → streaming
//! → … → idle. See [`state::next`] for the allowed transitions.

mod approvals;
mod attach;
mod compaction;
mod dispatch;
mod echo;
mod error;
mod failures;
mod focus;
mod handle;
mod lock;
mod merge;
mod prompt;
mod repetition;
mod request;
mod run;
pub mod state;
mod status;
mod subagent;
pub mod text_calls;
mod written;

pub use approvals::Refusal;
pub use error::AgentError;
pub use prompt::{system_prompt, SystemPrompt, SMALL_MODEL_TOOLS};
pub use run::{
    mark_interrupted, Agent, AgentConfig, Model, ModelResolver, RunRequest, TaskHandle, TaskLock,
    ThisRun, AGENT, LOCAL_UNKNOWN_MAX_OUTPUT, SKILLS_OFF, SKILL_PRIORITY,
};

use codewright_protocol::AgentEvent;

/// Where a run sends its events.
pub type Events = tokio::sync::mpsc::UnboundedSender<AgentEvent>;
