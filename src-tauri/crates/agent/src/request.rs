//! What a run is asked to do: the task, the user's message, the model and its key, the mode.

use codewright_llm::{ModelInfo, Provider};
use codewright_protocol::{PermissionMode, TaskId};
use std::sync::Arc;

/// The task setting that lists the skills switched off for the task (names).
pub const SKILLS_OFF: &str = "skillsOff";
/// The task setting that ranks skills for the task (name → priority, higher first; 0 unset).
pub const SKILL_PRIORITY: &str = "skillPriority";
/// The task setting that names the task's agent (see [`codewright_extensions::agents`]).
pub const AGENT: &str = "agent";

/// Finds the model an agent file names (MODEL@PROVIDER, or a role), with its key: the front
/// end knows the user's providers and roles ([`Agent::set_model_resolver`]).
pub type ModelResolver = Arc<dyn Fn(&str) -> Result<Model, crate::AgentError> + Send + Sync>;

/// The model a run uses. Its `Debug` never shows the key (it may end up in a log or a panic).
#[derive(Clone)]
pub struct Model {
    pub info: ModelInfo,
    pub provider: Provider,
    pub key: Option<String>,
}

impl Model {
    /// Whether its requests carry the tools' schemas for calls of its own. Not for a model
    /// without native tool calling (it is told the tools in its prompt), nor for a small local
    /// one: measured with Qwen2.5-Coder-1.5B (issue 34), the ~2,000 tokens of schemas made it
    /// write calls where code was asked, call the task's function as a tool, or run on to its
    /// output limit — darts passed 0 of 8 samples of the first answer with them, and 2 to 7 of 8
    /// with the files shown in the message and the short prompt ([`crate::prompt::is_small`]).
    /// Such a model writes whole files, and any call, as text.
    pub fn sends_tools(&self) -> bool {
        self.info.native_tools() && !crate::prompt::is_small(self)
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("info", &self.info)
            .field("provider", &self.provider)
            .field("key", &self.key.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub task: TaskId,
    /// The user's new message; `None` continues the task as it is (after a pause or a crash).
    pub prompt: Option<String>,
    pub model: Model,
    pub mode: PermissionMode,
    /// Run commands under the Landlock sandbox (also when the project's settings say so; always
    /// in yolo mode).
    pub sandbox: bool,
    /// The model that writes compaction summaries (the compaction role); `None`: `model`.
    pub compaction: Option<Model>,
    /// What this run does differently from the task's own settings.
    pub this_run: ThisRun,
}

/// What one run does differently from its task's own settings: a slash command that names the
/// agent to run it, or the only tools it may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThisRun {
    /// The agent that runs instead of the task's.
    pub agent: Option<String>,
    /// The only tools the run may use (and only those its agent may).
    pub tools: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_llm::Protocol;

    #[test]
    fn a_models_debug_never_shows_its_key() {
        let model = Model {
            info: codewright_llm::resolve_model("m@p", &[]),
            provider: Provider::new("p", Protocol::OpenAiChat, "http://127.0.0.1:9/v1", None),
            key: Some("sk-never-shown".into()),
        };
        let request = format!("{model:?}");
        assert!(!request.contains("sk-never-shown"), "{request}");
        assert!(request.contains("[hidden]"), "{request}");
    }
}
