//! What the agent can do to a user's project, and the guarantees that make that safe.
//!
//! - [`Registry`]: the tools the model may call. Arguments are checked against each tool's JSON
//!   Schema before anything runs; malformed JSON, unknown tools and schema violations become error
//!   results that quote the problem.
//! - [`Session`]: one task's tool state — project root, permission [`Policy`], the [`Approver`]
//!   that asks the user, which files the agent has read, background processes, checkpoints.
//! - Every path is resolved against the project root ([`paths`]); leaving it needs its own approval.
//! - Before a turn first changes a file, its pre-image is saved ([`checkpoint`]), so every turn
//!   can be undone, and so can the undo.
//! - Commands die with Codewright, however it ends ([`reaper`]), and do not inherit its secrets
//!   ([`EnvFilter`]).

// Tool errors are results for the model, made once per call; their size does not matter.
#![allow(clippy::result_large_err)]

pub mod builtin;
pub mod checkpoint;
mod diff;
pub mod files;
mod registry;
mod session;

pub use checkpoint::{CheckpointError, Checkpoints, Copies};
pub use codewright_exec::sandbox::{sandbox_support, SandboxSupport};
pub use codewright_exec::shell::{
    env_var, protect_own_environment, taken_secrets, warm_environment, EnvFilter,
};
pub use codewright_exec::ProcessTable;
pub use codewright_exec::{reaper, sandbox};
pub use codewright_policy::{
    check_rule, parse_command, paths, Policy, SimpleCommand, Subject, Verdict,
};
pub use diff::{apply_hunks, hunks};
pub use registry::{RegisterError, Registry};
pub use session::{
    Approver, CallContext, Grant, NonInteractive, Progress, Session, SessionConfig, SessionError,
};

use async_trait::async_trait;
use codewright_protocol::{ToolCategory, ToolContent, ToolDetail};
use serde_json::Value;

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`).
    fn name(&self) -> &str;
    /// What it does and when to use it, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of its input object.
    fn input_schema(&self) -> Value;
    /// What it does to the world (decides its default permission).
    fn category(&self) -> ToolCategory;
    /// Whether calls may run at the same time as other such calls.
    fn concurrent(&self) -> bool {
        self.category() == ToolCategory::Read
    }
    /// Runs one call. `input` already matches [`Tool::input_schema`]. Never panics on bad input:
    /// problems are error outputs the model can act on.
    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput;
}

/// What a tool call produced: content for the model, and detail for the tool panel.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ToolContent>,
    pub is_error: bool,
    pub detail: Option<ToolDetail>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![ToolContent::Text { text: text.into() }],
            is_error: false,
            detail: None,
        }
    }

    /// An error result: `message` says what went wrong and what to do instead.
    pub fn error(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            is_error: true,
            ..ToolOutput::text(message)
        }
    }

    /// Adds the panel detail.
    pub fn with_detail(mut self, detail: ToolDetail) -> ToolOutput {
        self.detail = Some(detail);
        self
    }

    /// The text content, joined (for tests and logs).
    pub fn text_content(&self) -> String {
        ToolContent::joined_text(&self.content)
    }
}

/// Parses a tool's input after schema validation (serde errors here mean the schema and the input
/// type disagree, which is still reported, never a panic).
pub(crate) fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input).map_err(|e| {
        ToolOutput::error(format!(
            "invalid arguments: {e}. Check the tool's schema and call it again."
        ))
    })
}

/// The JSON Schema of an input type, inlined (no `$ref`s) for providers.
pub(crate) fn schema_of<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("title");
        obj.remove("definitions");
    }
    value
}
