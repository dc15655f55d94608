//! The records the store keeps and every front end shows.

use crate::{Message, MessageId, ProjectId, TaskId};
use serde::{Deserialize, Serialize};

/// A folder the user opened. Removing a project never touches the folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: ProjectId,
    pub name: String,
    pub description: String,
    /// Canonical absolute path of the folder (symlinks resolved); unique across projects.
    pub root_path: String,
    /// Extra context the user gives the agent about this project.
    pub context: String,
    /// Rules the agent must follow in this project.
    pub rules: String,
    /// Milliseconds since the Unix epoch (UTC).
    pub created_at: i64,
    pub updated_at: i64,
}

/// How the agent may work in a project. Missing fields take their defaults (all off, nothing
/// let through).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProjectSettings {
    /// Run `bash` commands under the Landlock sandbox (writes only inside the project and temp
    /// folders). Always on in yolo mode.
    pub sandbox: bool,
    /// Let `web_fetch` reach loopback and private network addresses (local servers, an intranet).
    pub allow_private_network: bool,
    /// Environment variables that commands and MCP servers get although their names look like
    /// secrets (`GITHUB_TOKEN`, `NPM_TOKEN`; see `codewright_tools::EnvFilter`), by exact name.
    pub pass_env: Vec<String>,
    /// The mode of a task that has none of its own (`None`: normal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<crate::PermissionMode>,
    /// The user trusts the project: the agents, commands and skills its folder defines
    /// (`.codewright/`, `.claude/`) are used. Off until they say so.
    pub trusted: bool,
    /// New tasks work in a git worktree of their own (the new-task box starts so).
    pub worktrees: bool,
    /// A command run in each new worktree before its task's first run does anything else
    /// (`npm ci`, `cp ../.env .`); empty: none. The user's own words, approved by writing them.
    pub worktree_set_up: String,
}

/// Where a task stands, in the one vocabulary of the store, the events, the command line and the
/// UI. New tasks are `Idle`; the agent loop moves them through the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::EnumIter)]
#[serde(rename_all = "camelCase")]
pub enum TaskStatus {
    Idle,
    /// Waiting for a free slot (too many tasks run at once).
    Queued,
    Running,
    AwaitingApproval,
    Paused,
    /// The last run finished (`RunOutcome::Done`).
    Done,
    /// The last run finished, but a check its message named (`python3 -m pytest -q`) failed
    /// when it last ran, with nothing changed since (`RunFinished`'s `work.failing`).
    NotDone,
    Failed,
    /// A run was going when Codewright quit or crashed; continuing the task picks it up.
    Interrupted,
}

impl TaskStatus {
    /// The name stored in the database, sent to windows and shown on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Idle => "idle",
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::AwaitingApproval => "awaitingApproval",
            TaskStatus::Paused => "paused",
            TaskStatus::Done => "done",
            TaskStatus::NotDone => "notDone",
            TaskStatus::Failed => "failed",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    /// A run is going in some window or process: waiting for a slot, working, or waiting for
    /// the user.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::AwaitingApproval
        )
    }

    /// Every status.
    pub fn all() -> impl Iterator<Item = TaskStatus> {
        <TaskStatus as strum::IntoEnumIterator>::iter()
    }

    /// Parses a stored name; `None` for names this build does not know. The names builds before
    /// migration 0019 wrote (`awaiting_approval`, `completed`) are still read: an older app that is
    /// still open keeps writing them until it is closed.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "awaiting_approval" => Some(TaskStatus::AwaitingApproval),
            "completed" => Some(TaskStatus::Done),
            _ => TaskStatus::all().find(|status| status.as_str() == s),
        }
    }
}

/// Per-task settings (model, approval mode, …) as a JSON object. Keys this build does not know are
/// kept as they are, so an older build never drops a newer build's settings.
pub type TaskSettings = serde_json::Map<String, serde_json::Value>;

/// One conversation with the agent, inside a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: TaskId,
    pub project_id: ProjectId,
    pub title: String,
    pub status: TaskStatus,
    pub settings: TaskSettings,
    pub message_count: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Total cost in US dollars.
    pub cost: f64,
    /// Share of the model's context window the task uses now, 0.0–1.0.
    pub context_usage: f64,
    pub created_at: i64,
    pub updated_at: i64,
    /// The task's plan, as the agent last wrote it (`todo_write`).
    #[serde(default)]
    pub todos: Vec<crate::Todo>,
    /// It ended (done or failed) and nobody has looked at it since.
    #[serde(default)]
    pub unread: bool,
    /// A sub-agent's task: the task and the call that handed it its job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentCall>,
    /// The task works in a git worktree of its own (else in the project's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<TaskWorktree>,
}

impl Task {
    /// The folder the task works in: its worktree's copy of the project folder while it has
    /// one, else the project's folder itself.
    pub fn root(&self, project_root: &std::path::Path) -> std::path::PathBuf {
        match self.active_worktree() {
            Some(tree) => tree.root(),
            None => project_root.to_path_buf(),
        }
    }

    /// Its worktree while it is on disk (not discarded).
    pub fn active_worktree(&self) -> Option<&TaskWorktree> {
        self.worktree
            .as_ref()
            .filter(|tree| tree.state == WorktreeState::Active)
    }
}

/// A task's own git worktree, on its own branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskWorktree {
    /// The worktree's top folder (in the data folder's `worktrees/`).
    pub path: String,
    /// Where the project's folder is inside the repository (`/`-separated; empty at its top).
    #[serde(default)]
    pub subdir: String,
    pub branch: String,
    /// What it was made from, as the user named it (a branch, usually).
    pub base: String,
    pub base_commit: String,
    pub state: WorktreeState,
    /// The pull request opened for its branch, once one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    /// The project's set-up command (`npm ci`), still to run in it: the task's next run runs it
    /// first, and it is cleared once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_up: Option<String>,
}

impl TaskWorktree {
    /// The project's folder inside the worktree: where the task works.
    pub fn root(&self) -> std::path::PathBuf {
        let top = std::path::Path::new(&self.path);
        match self.subdir.is_empty() {
            true => top.to_path_buf(),
            false => top.join(&self.subdir),
        }
    }

    /// The ref its work is kept under once discarded.
    pub fn archive_ref(task: TaskId) -> String {
        format!("refs/codewright/archive/{}", task.0)
    }
}

/// Where a task's worktree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WorktreeState {
    /// On disk; the task works in it.
    Active,
    /// Removed; its branch and uncommitted files are kept under the archive ref until restored.
    Discarded,
}

/// The longest title made from a message (characters, before the "…").
const TITLE_CHARS: usize = 80;

impl Task {
    /// A title for a task started with `text`: its first line, control characters made spaces,
    /// cut at 80 characters with "…".
    pub fn title_from(text: &str) -> String {
        let line: String = text
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let line = line.trim();
        let mut title: String = line.chars().take(TITLE_CHARS).collect();
        if line.chars().count() > TITLE_CHARS {
            title.push('…');
        }
        title
    }
}

/// The task and tool call that started a sub-agent's task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentCall {
    pub task: TaskId,
    pub call: String,
}

/// A summary that stands for a task's earlier messages when talking to the model. The messages
/// stay, for the user; a window shows the summary where it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// Markdown, in fixed sections.
    pub summary: String,
    /// The first message the model still sees in full.
    pub first_kept_seq: i64,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Set by the store.
    pub created_at: i64,
}

/// A message as stored in a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    pub id: MessageId,
    pub task_id: TaskId,
    /// Position in the task, from 1.
    pub seq: i64,
    #[serde(flatten)]
    pub message: Message,
    /// False while the message is still streaming, or if its writer stopped before finishing it
    /// (a crash): what is there is kept and shown as incomplete.
    pub complete: bool,
    pub created_at: i64,
    pub updated_at: i64,
    /// Summarized by a compaction: shown to the user, no longer sent to the model.
    #[serde(default)]
    pub compacted: bool,
}

/// One full-text search match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub message_id: MessageId,
    pub task_id: TaskId,
    pub task_title: String,
    pub project_id: ProjectId,
    pub project_name: String,
    /// The message's place in its task (a window scrolls to it).
    pub seq: i64,
    pub role: crate::Role,
    pub created_at: i64,
    /// The matching passage, cut into pieces; the matched words are the pieces marked `hit`.
    pub snippet: Vec<SnippetPart>,
    /// Lower is better (bm25).
    pub rank: f64,
}

/// A piece of a search match's passage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnippetPart {
    pub text: String,
    /// One of the words searched for.
    pub hit: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_round_trip() {
        use strum::IntoEnumIterator;
        for status in TaskStatus::iter() {
            let name = status.as_str();
            assert_eq!(TaskStatus::parse(name), Some(status));
            assert_eq!(serde_json::to_value(status).unwrap(), name);
        }
        assert_eq!(TaskStatus::parse("bogus"), None);
        // What an older build, still open, writes.
        assert_eq!(
            TaskStatus::parse("awaiting_approval"),
            Some(TaskStatus::AwaitingApproval)
        );
        assert_eq!(TaskStatus::parse("completed"), Some(TaskStatus::Done));
    }
}
