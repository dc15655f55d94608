//! The agent's errors at its door (holding a task, storing a message, compacting): a kind in
//! the engine's one vocabulary, and words for the user.

use codewright_protocol::ErrorKind;

/// An error of the agent's API: a stable `kind` to branch on and a `message` for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentError {
    pub kind: ErrorKind,
    pub message: String,
}

impl AgentError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> AgentError {
        AgentError {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AgentError {}

impl From<codewright_store::StoreError> for AgentError {
    fn from(e: codewright_store::StoreError) -> AgentError {
        AgentError::new(e.kind(), e.to_string())
    }
}

/// The loop inside reports errors in words (its error event carries the kind it chose).
impl From<AgentError> for String {
    fn from(e: AgentError) -> String {
        e.message
    }
}
