//! What tools do, and what the user decides about them: categories, permission rules and modes,
//! approval requests and decisions, the structured detail a tool panel shows, the task's plan, and
//! checkpoints.

use crate::TaskId;
use serde::{Deserialize, Serialize};

/// A tool the model may call, as providers are told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: serde_json::Value,
}

impl ToolSpec {
    /// The same tool in fewer tokens, for models with small context windows: the description's
    /// first sentence, and the schema with each description cut to its first sentence, without
    /// titles, examples, formats, bounds and defaults (the tool still checks its input and says
    /// what is wrong), and optional values typed without `null`. Names, types, enums and what is
    /// required stay.
    pub fn compact(&self) -> ToolSpec {
        let mut input_schema = self.input_schema.clone();
        compact_schema(&mut input_schema);
        ToolSpec {
            name: self.name.clone(),
            description: first_sentence(&self.description),
            input_schema,
        }
    }
}

fn compact_schema(schema: &mut serde_json::Value) {
    use serde_json::Value;
    match schema {
        Value::Object(map) => {
            for key in [
                "title",
                "examples",
                "$schema",
                "format",
                "minimum",
                "maximum",
                "minLength",
                "maxLength",
                "minItems",
                "maxItems",
                "default",
            ] {
                map.remove(key);
            }
            if map
                .get("additionalProperties")
                .is_some_and(Value::is_boolean)
            {
                map.remove("additionalProperties");
            }
            // `["integer", "null"]` → `"integer"`: a property left out is the same as null.
            if let Some(Value::Array(types)) = map.get("type") {
                let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                if let [one] = kept[..] {
                    let one = one.clone();
                    map.insert("type".into(), one);
                }
            }
            if let Some(Value::String(d)) = map.get_mut("description") {
                *d = first_sentence(d);
            }
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    // Names of properties are the caller's: `description` may be one of them.
                    "properties" | "$defs" | "definitions" => {
                        if let Value::Object(named) = value {
                            named.values_mut().for_each(compact_schema);
                        }
                    }
                    "description" => {}
                    _ => compact_schema(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(compact_schema),
        _ => {}
    }
}

/// `text` up to the end of its first sentence (a `.` followed by white space or the end).
fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(i, c)| c == '.' && text[i + 1..].chars().next().is_none_or(char::is_whitespace))
        .map_or(text.len(), |(i, _)| i + 1);
    text[..end].to_string()
}

/// What a tool does to the world. Decides its default permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolCategory {
    /// Looks at the project (files, searches): allowed by default.
    Read,
    /// Changes files: asked by default.
    Write,
    /// Runs programs: asked by default.
    Execute,
    /// Reaches the network: asked by default.
    Network,
}

/// What a permission rule does to the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RuleAction {
    Allow,
    Ask,
    Deny,
}

impl RuleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<RuleAction> {
        match s {
            "allow" => Some(RuleAction::Allow),
            "ask" => Some(RuleAction::Ask),
            "deny" => Some(RuleAction::Deny),
            _ => None,
        }
    }
}

/// A permission rule. `tool` is a tool name or `*`. `pattern` says which calls of it match; empty
/// matches every call. For file tools it is a path glob relative to the project (`src/**`); for
/// `bash` a command prefix matched word by word on each part of the parsed command (`git status`
/// matches `git status -s`, not `git stash`); for `web_fetch` a host (`docs.rs`, `*.github.com`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    pub tool: String,
    #[serde(default)]
    pub pattern: String,
    pub action: RuleAction,
}

/// A rule saved for a project ("always allow").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedRule {
    pub id: i64,
    pub project_id: crate::ProjectId,
    pub rule: PermissionRule,
    pub created_at: i64,
}

/// How much a task may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads run; edits, commands and network access are asked.
    #[default]
    Normal,
    /// Like normal, but edits inside the project run without asking.
    AcceptEdits,
    /// Read only: edits and commands are refused with a message telling the model to plan.
    Plan,
    /// Everything runs without asking (deny rules still hold; commands are sandboxed if possible).
    Yolo,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Normal => "normal",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Yolo => "yolo",
        }
    }

    pub fn parse(s: &str) -> Option<PermissionMode> {
        match s {
            "normal" => Some(PermissionMode::Normal),
            "accept-edits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "yolo" => Some(PermissionMode::Yolo),
            _ => None,
        }
    }
}

/// The kind of a line in a diff hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LineKind {
    Context,
    Removed,
    Added,
}

/// One line of a hunk, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffLine {
    pub kind: LineKind,
    pub text: String,
}

/// One hunk of a proposed change to a file. Lines are 1-based; a count of 0 means an empty range
/// placed after line `start - 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    /// Position in the proposal, from 0: what [`Decision::ApproveHunks`] refers to.
    pub index: usize,
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub lines: Vec<DiffLine>,
}

/// The largest proposed file a user is offered to edit before approving it.
pub const EDITABLE_BYTES: usize = 256 * 1024;

/// Exactly what a tool call will do, shown to the user who approves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Action {
    /// Create or change a file (`path` as the user would write it: relative inside the project).
    #[serde(rename_all = "camelCase")]
    Edit {
        path: String,
        created: bool,
        hunks: Vec<Hunk>,
        /// The whole proposed content, for a text file of at most [`EDITABLE_BYTES`]: what the
        /// user changes before approving ([`Decision::ApproveEdited`] is offered only with it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
    },
    /// Run a shell command.
    #[serde(rename_all = "camelCase")]
    Command {
        command: String,
        /// The absolute folder it runs in.
        cwd: String,
        sandboxed: bool,
        background: bool,
    },
    /// Read or write a path outside the project.
    #[serde(rename_all = "camelCase")]
    ExternalPath { path: String, write: bool },
    /// Fetch a URL.
    #[serde(rename_all = "camelCase")]
    Fetch { url: String },
    /// Any other tool call (for example an MCP tool), with its input.
    #[serde(rename_all = "camelCase")]
    Call { input: serde_json::Value },
}

/// The answers an approval request allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DecisionKind {
    Approve,
    ApproveAlways,
    Reject,
    ApproveHunks,
    ApproveEdited,
}

/// A tool call waiting for the user. Only this call waits; the task's other work goes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// Unique among the requests of this process.
    pub id: u64,
    pub task_id: TaskId,
    pub call_id: String,
    pub tool: String,
    /// One line saying what will happen ("Edit src/main.rs (2 hunks)").
    pub summary: String,
    pub action: Action,
    pub decisions: Vec<DecisionKind>,
    /// The rules "always allow" would save for the project (the user may narrow or widen them).
    pub always: Vec<PermissionRule>,
    /// Why the call is asked rather than allowed (mode, a rule, an external path, the sandbox).
    pub reason: String,
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum Decision {
    Approve,
    /// Approve, and save these allow rules for the project.
    ApproveAlways {
        rules: Vec<PermissionRule>,
    },
    /// Refuse; `feedback` is sent to the model verbatim.
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Apply only these hunks (by [`Hunk::index`]) of an edit.
    ApproveHunks {
        hunks: Vec<usize>,
    },
    /// Write this content instead of the proposed one.
    ApproveEdited {
        content: String,
    },
}

/// A question the model asks the user (`ask_user`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub id: u64,
    pub task_id: TaskId,
    pub call_id: String,
    pub question: String,
    /// Suggested answers; the user may also type their own.
    pub choices: Vec<String>,
}

/// One item of the task's plan (`todo_write`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// A line of a search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchLine {
    pub line: u64,
    pub text: String,
    /// A context line around a match rather than a match.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context: bool,
}

/// The matches in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileMatches {
    pub path: String,
    pub lines: Vec<MatchLine>,
}

/// An entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirEntry {
    pub name: String,
    pub dir: bool,
    pub size: u64,
}

/// A background process started by `bash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    pub id: u32,
    pub command: String,
    pub running: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// What a tool panel shows: the structured side of a tool result (the model gets text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToolDetail {
    #[serde(rename_all = "camelCase")]
    File {
        path: String,
        first_line: u64,
        last_line: u64,
        total_lines: u64,
    },
    #[serde(rename_all = "camelCase")]
    Listing {
        path: String,
        entries: Vec<DirEntry>,
        truncated: bool,
    },
    #[serde(rename_all = "camelCase")]
    Paths { paths: Vec<String>, truncated: bool },
    #[serde(rename_all = "camelCase")]
    Matches {
        files: Vec<FileMatches>,
        truncated: bool,
    },
    /// A change to a file: the hunks proposed, and which of them were written.
    #[serde(rename_all = "camelCase")]
    Diff {
        path: String,
        created: bool,
        hunks: Vec<Hunk>,
        applied: Vec<usize>,
        rejected: Vec<usize>,
    },
    #[serde(rename_all = "camelCase")]
    Command {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Output (stdout and stderr interleaved), with the middle cut out when it was large.
        output: String,
        /// Bytes cut from the middle of the output.
        omitted_bytes: u64,
        timed_out: bool,
        sandboxed: bool,
        duration_ms: u64,
    },
    #[serde(rename_all = "camelCase")]
    Processes { processes: Vec<ProcessInfo> },
    #[serde(rename_all = "camelCase")]
    Todos { todos: Vec<Todo> },
    #[serde(rename_all = "camelCase")]
    Answer { question: String, answer: String },
    #[serde(rename_all = "camelCase")]
    Fetch {
        url: String,
        status: u16,
        content_type: String,
        bytes: u64,
        truncated: bool,
    },
}

/// Why a checkpoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckpointKind {
    /// The files a turn changed, as they were before it.
    Turn,
    /// The files a restore overwrote, as they were before it (restoring it undoes the restore).
    Restore,
}

/// A file in a checkpoint, as it was before the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointFile {
    pub path: String,
    /// False when the file did not exist (restoring removes it).
    pub existed: bool,
}

/// The pre-images of the files one turn (or one restore) changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub id: i64,
    pub task_id: TaskId,
    pub turn: i64,
    pub kind: CheckpointKind,
    pub files: Vec<CheckpointFile>,
    pub created_at: i64,
    /// A restore made by a review's Revert: the file it put back (its path in the project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_compact_spec_keeps_names_types_and_requirements() {
        let spec = ToolSpec {
            name: "todo".into(),
            description: "Write the plan. Each item has a status; mark one in progress at a time (v1.2 rules).".into(),
            input_schema: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "title": "Input",
                "type": "object",
                "required": ["items"],
                "additionalProperties": false,
                "properties": {
                    "items": {"type": "array", "description": "The items. Long text follows.",
                              "items": {"type": "object", "properties": {
                                  "description": {"type": "string", "description": "What to do. Say it briefly."},
                                  "status": {"enum": ["pending", "done"], "examples": ["done"]}}}},
                    "limit": {"type": ["integer", "null"], "format": "uint64", "minimum": 1, "default": 10}
                }
            }),
        };
        let compact = spec.compact();
        assert_eq!(compact.description, "Write the plan.");
        assert_eq!(
            compact.input_schema,
            json!({
                "type": "object",
                "required": ["items"],
                "properties": {
                    "items": {"type": "array", "description": "The items.",
                              "items": {"type": "object", "properties": {
                                  "description": {"type": "string", "description": "What to do."},
                                  "status": {"enum": ["pending", "done"]}}}},
                    "limit": {"type": "integer"}
                }
            })
        );
        assert_eq!(first_sentence("Version 1.2 is out"), "Version 1.2 is out");
    }

    #[test]
    fn decisions_and_actions_have_stable_shapes() {
        assert_eq!(
            serde_json::to_value(Decision::ApproveHunks { hunks: vec![0, 2] }).unwrap(),
            json!({"decision": "approveHunks", "hunks": [0, 2]})
        );
        assert_eq!(
            serde_json::to_value(Decision::Reject { feedback: None }).unwrap(),
            json!({"decision": "reject"})
        );
        let action = Action::Command {
            command: "ls".into(),
            cwd: ".".into(),
            sandboxed: false,
            background: false,
        };
        assert_eq!(
            serde_json::to_value(action).unwrap(),
            json!({"kind": "command", "command": "ls", "cwd": ".", "sandboxed": false, "background": false})
        );
        assert_eq!(
            serde_json::to_value(PermissionMode::AcceptEdits).unwrap(),
            json!("accept-edits")
        );
        for mode in ["normal", "accept-edits", "plan", "yolo"] {
            assert_eq!(PermissionMode::parse(mode).unwrap().as_str(), mode);
        }
    }
}
