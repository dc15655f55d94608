//! The commands of a task window (async ones run off the main thread, so a slow disk or a long
//! message never stalls the window system): read its conversation, send, stop, answer approvals and
//! questions, choose model and mode, restore checkpoints, render Markdown, find files for an `@`
//! mention, open a link; slash commands (the list, skills, memory, compact, a new task). Those
//! that read the project's files are async. Each is a
//! thin call into the host; the guard (`guard.rs`) has already checked that a task window names
//! only its own task.

use crate::error::{CommandError, Result};
use crate::markdown::{self, MarkdownText, Rendered};
use crate::AppState;
use codewright_host::commands::{self, Typed};
use codewright_host::files::FileMatch;
use codewright_host::mcp::TaskServer;
use codewright_host::tasks::{SubAgentWork, TaskView};
use codewright_host::{memory, skills, RunOptions, Sent, TaskOptions};
use codewright_protocol::{
    Attachment, Checkpoint, Decision, ErrorKind, Message, MessageRecord, PermissionMode, TaskId,
};
use serde::Serialize;
use tauri::{Manager, State};

/// Messages a window loads at a time (the newest first, older ones as the user scrolls up).
const PAGE: usize = 50;

/// Everything a task window shows when it opens.
#[tauri::command]
pub async fn task_view(state: State<'_, AppState>, task_id: TaskId) -> Result<TaskView> {
    Ok(state.host()?.task_view(task_id, PAGE)?)
}

/// Older messages than `before_seq`, oldest first.
#[tauri::command]
pub async fn older_messages(
    state: State<'_, AppState>,
    task_id: TaskId,
    before_seq: i64,
    limit: Option<usize>,
) -> Result<Vec<MessageRecord>> {
    Ok(state
        .host()?
        .messages(task_id, Some(before_seq), limit.unwrap_or(PAGE).min(500))?)
}

/// What sending did: started or steered a run, or, for a slash command that is an action
/// (`/compact`, `/undo` …), nothing yet: the window performs `action`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendOutcome {
    steered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<ActionCall>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionCall {
    action: commands::Action,
    arguments: String,
}

/// Sends the user's message (its text and attached images): starts a run, or steers the
/// running one. Text that is a slash command is resolved first: a prompt command sends its
/// prompt, an action comes back to the window, an unknown one is an error naming the closest.
#[tauri::command]
pub async fn send_message(
    state: State<'_, AppState>,
    task_id: TaskId,
    text: Option<String>,
    attachments: Option<Vec<Attachment>>,
) -> Result<SendOutcome> {
    let host = state.host()?.clone();
    let mut options = RunOptions::default();
    let text = match text {
        Some(typed) if typed.trim_start().starts_with('/') => {
            let project = host.task(task_id)?.project_id;
            match host.resolve_command(project, &typed).await? {
                Typed::Send {
                    text,
                    model,
                    this_run,
                } => {
                    options.model_once = model.is_some();
                    options.model = model;
                    options.this_run = this_run;
                    Some(text)
                }
                Typed::Action { action, arguments } => {
                    return Ok(SendOutcome {
                        steered: false,
                        action: Some(ActionCall { action, arguments }),
                    })
                }
            }
        }
        text => text,
    };
    // A window attaches what it read itself: a path it names is not taken.
    let attachments: Vec<Attachment> = attachments
        .unwrap_or_default()
        .into_iter()
        .map(|a| Attachment { path: None, ..a })
        .collect();
    // `None` with nothing attached continues the task as it is.
    let message = match (text, attachments.is_empty()) {
        (None, true) => None,
        (text, _) => Some(Message::user_with(text.unwrap_or_default(), attachments)),
    };
    let Sent { steered } = host.send(task_id, message, options).await?;
    state.changed();
    Ok(SendOutcome {
        steered,
        action: None,
    })
}

/// The slash commands the task can use (built-in, custom, and its MCP servers' prompts once they
/// have started), for the composer's palette.
#[tauri::command]
pub async fn task_commands(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<commands::CommandList> {
    let host = state.host()?;
    Ok(host.commands(host.task(task_id)?.project_id)?)
}

/// The skills of the task's project, each on or off for the task (`/skills`).
#[tauri::command]
pub async fn task_skills(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<skills::TaskSkills> {
    Ok(state.host()?.task_skills(task_id)?)
}

/// Switches a skill on or off for the task, from its next message.
#[tauri::command]
pub async fn switch_skill(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
    on: bool,
) -> Result<skills::TaskSkills> {
    Ok(state.host()?.switch_skill(task_id, &name, on)?)
}

/// The work of the sub-agent the task's call `call_id` started, to show under its panel.
#[tauri::command]
pub async fn sub_agent_work(
    state: State<'_, AppState>,
    task_id: TaskId,
    call_id: String,
) -> Result<Option<SubAgentWork>> {
    Ok(state.host()?.sub_agent_work(task_id, &call_id)?)
}

/// The agents of the task's project, and which one the task runs as (`/agent`).
#[tauri::command]
pub async fn task_agents(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<codewright_host::agents::TaskAgents> {
    Ok(state.host()?.task_agents(task_id)?)
}

/// Makes `name` the task's agent, from its next message.
#[tauri::command]
pub async fn choose_agent(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
) -> Result<codewright_host::agents::TaskAgents> {
    Ok(state.host()?.choose_agent(task_id, &name)?)
}

/// Ranks a skill for the task (higher first, 0 the default), from its next message.
#[tauri::command]
pub async fn rank_skill(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
    priority: i64,
) -> Result<skills::TaskSkills> {
    Ok(state.host()?.rank_skill(task_id, &name, priority)?)
}

/// Summarizes the task's older messages now (`/compact`); false when there is too little.
#[tauri::command]
pub async fn compact_task(state: State<'_, AppState>, task_id: TaskId) -> Result<bool> {
    let host = state.host()?.clone();
    Ok(host.compact(task_id, None).await?.is_some())
}

/// The MCP servers the task's runs use (every project's and its project's own), for `/mcp`.
#[tauri::command]
pub async fn task_mcp_servers(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<Vec<TaskServer>> {
    Ok(state.host()?.task_mcp_servers(task_id)?)
}

/// The task's project memory and the user's (`/memory`).
#[tauri::command]
pub async fn task_memory(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<Vec<memory::MemoryFile>> {
    Ok(state.host()?.memory_files(task_id)?)
}

/// Saves a memory file as the user edited it.
#[tauri::command]
pub async fn save_memory(
    state: State<'_, AppState>,
    task_id: TaskId,
    scope: memory::Scope,
    text: String,
) -> Result<memory::MemoryFile> {
    Ok(state.host()?.save_memory(task_id, scope, &text)?)
}

/// Starts a new task in the task's project and opens its window (`/new`, `/clear`).
#[tauri::command]
pub async fn new_sibling_task<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<()> {
    let host = state.host()?;
    let task = host.add_task(host.task(task_id)?.project_id, "New task")?;
    state.changed();
    crate::windows::open_task_window(&app, &task, Default::default()).await?;
    app.state::<crate::tree::TreeState>().focused(task.id);
    Ok(())
}

#[tauri::command]
pub fn stop_task(state: State<'_, AppState>, task_id: TaskId) -> Result<()> {
    Ok(state.host()?.stop(task_id)?)
}

#[tauri::command]
pub fn decide_approval(
    state: State<'_, AppState>,
    task_id: TaskId,
    id: u64,
    decision: Decision,
) -> Result<()> {
    Ok(state.host()?.decide(task_id, id, decision)?)
}

#[tauri::command]
pub fn answer_question(
    state: State<'_, AppState>,
    task_id: TaskId,
    id: u64,
    answer: Option<String>,
) -> Result<()> {
    Ok(state.host()?.answer(task_id, id, answer)?)
}

/// Remembers the task's model and mode.
#[tauri::command]
pub async fn set_task_options(
    state: State<'_, AppState>,
    task_id: TaskId,
    model: Option<String>,
    mode: PermissionMode,
) -> Result<TaskOptions> {
    let model = model.filter(|m| !m.trim().is_empty());
    let options = state.host()?.set_options(task_id, model, mode)?;
    state.changed();
    Ok(options)
}

/// Puts back the files of a checkpoint; returns the checkpoint that undoes it.
#[tauri::command]
pub async fn restore_checkpoint(
    state: State<'_, AppState>,
    task_id: TaskId,
    checkpoint_id: i64,
) -> Result<Checkpoint> {
    let undo = state.host()?.restore(task_id, checkpoint_id)?;
    state.changed();
    Ok(undo)
}

/// Renders Markdown texts (parts of assistant messages, or what is new in them) as sanitized
/// HTML, in order: a window sends every part due in a frame in one call.
#[tauri::command]
pub async fn render_markdown(parts: Vec<MarkdownText>) -> Vec<Rendered> {
    parts
        .iter()
        .map(|part| markdown::render(&part.text, part.done))
        .collect()
}

/// The files of the task's project that best match what the user typed after `@`.
#[tauri::command]
pub async fn find_files<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    task_id: TaskId,
    query: String,
) -> Result<Vec<FileMatch>> {
    let root = app.state::<AppState>().host()?.task_root(task_id)?;
    // Walking a large project takes a while: not on the window's thread.
    let found = tauri::async_runtime::spawn_blocking(move || {
        let files = app.state::<AppState>().project_files(&root);
        codewright_host::files::find_files(&files, &query, MENTION_LIMIT)
    })
    .await;
    found.map_err(|e| CommandError {
        kind: ErrorKind::Setup,
        message: format!("the project's files could not be listed: {e}"),
        fatal: false,
        saved: false,
    })
}

/// Matches the `@` picker shows at most.
const MENTION_LIMIT: usize = 50;

/// Opens an http(s) or mailto link in the system browser (the window asked the user first).
#[tauri::command]
pub fn open_link(task_id: TaskId, url: String) -> Result<()> {
    let _ = task_id; // for the guard: only the window of this task asks
    let lower = url.to_ascii_lowercase();
    let allowed = ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme));
    // A mailto link opens with its address only: a query may ask the mail client to attach a file.
    let url = match url.split_once('?') {
        Some((address, _)) if lower.starts_with("mailto:") => address.to_string(),
        _ => url,
    };
    if !allowed {
        return Err(CommandError {
            kind: ErrorKind::BadInput,
            message: format!("only web and mail links can be opened, not {url}"),
            fatal: false,
            saved: false,
        });
    }
    crate::error::system_open(url.as_ref()).map_err(|e| CommandError {
        kind: ErrorKind::BadInput,
        message: format!("the browser could not be started ({e}); copy the link instead: {url}"),
        fatal: false,
        saved: false,
    })
}
