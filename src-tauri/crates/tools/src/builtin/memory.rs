//! `memory_read` and `memory_write`: the notes kept across tasks (see
//! `codewright_extensions::memory`). A write is an edit of `.codewright/memory.md` in the project,
//! or of `~/.codewright/memory.md` outside it: it takes the one path every file change takes
//! (approval with the diff, checkpoint, atomic write).

use super::resolve_path;
use super::write_file::{apply_change, current};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_extensions::memory::{self, Scope};
use codewright_protocol::ToolCategory;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct MemoryRead;
pub struct MemoryWrite;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Which {
    /// This project's memory (`.codewright/memory.md`).
    Project,
    /// The user's memory, for every project (`~/.codewright/memory.md`).
    User,
}

impl From<Which> for Scope {
    fn from(w: Which) -> Scope {
        match w {
            Which::Project => Scope::Project,
            Which::User => Scope::User,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    /// Which memory; omit it for both.
    scope: Option<Which>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteInput {
    scope: Which,
    /// The whole new memory (it replaces the old): short Markdown notes worth keeping across tasks.
    content: String,
}

fn places(cx: &CallContext) -> Result<codewright_extensions::Places, ToolOutput> {
    cx.session
        .extensions()
        .places
        .clone()
        .ok_or_else(|| ToolOutput::error("memory is not available outside a task's run"))
}

#[async_trait]
impl Tool for MemoryRead {
    fn name(&self) -> &str {
        "memory_read"
    }
    fn description(&self) -> &str {
        "Read the notes kept across tasks: this project's memory and the user's own (both are also in the system prompt, cut at 16 KB)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReadInput>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: ReadInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let places = match places(cx) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let scopes = match input.scope {
            Some(which) => vec![Scope::from(which)],
            None => vec![Scope::Project, Scope::User],
        };
        let mut out = Vec::new();
        for scope in scopes {
            match memory::read(&places, scope) {
                Ok(text) if text.trim().is_empty() => {
                    out.push(format!("# {}\n\n(empty)", scope.label()))
                }
                Ok(text) => out.push(format!("# {}\n\n{}", scope.label(), text.trim_end())),
                // (One that cannot be read does not hide the other.)
                Err(e) => out.push(format!("# {}\n\n(not read: {e})", scope.label())),
            }
        }
        ToolOutput::text(out.join("\n\n"))
    }
}

#[async_trait]
impl Tool for MemoryWrite {
    fn name(&self) -> &str {
        "memory_write"
    }
    fn description(&self) -> &str {
        "Replace this project's memory or the user's own with new notes (short Markdown; keep what is still true). Use it for facts worth keeping across tasks: how to build and test, conventions, the user's preferences. The user approves the change."
    }
    fn input_schema(&self) -> Value {
        schema_of::<WriteInput>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: WriteInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let places = match places(cx) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Some(file) = memory::path(&places, input.scope.into()) else {
            return ToolOutput::error("the user's memory has no place: their home folder is unknown; keep the note in the project's memory");
        };
        let path = match resolve_path(cx, &file.to_string_lossy(), true).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        let old = match current(cx, &path) {
            Ok(old) => old,
            Err(e) => return e,
        };
        let mut content = input.content;
        if !content.ends_with('\n') {
            content.push('\n');
        }
        apply_change(cx, &path, old, content.into_bytes(), None).await
    }
}
