//! The commands of a task window (async ones run off the main thread, so a slow disk or a long
//! message never stalls the window system): read its conversation, send, stop, answer approvals and
//! questions, choose model and mode, restore checkpoints, render Markdown, find files for an `@`
//! mention, open a link; slash commands (the list, skills, memory, compact, a new task). Those
//! that read the project's files are async. Each is a
//! thin call into the host; the guard (`guard.rs`) has already checked that a task window names
//! only its own task.

use crate::commands::{CommandError, Result};
use crate::markdown::{self, MarkdownText, Rendered};
use crate::AppState;
use codewright_host::commands::{self, Resolved};
use codewright_host::files::FileMatch;
use codewright_host::models::ModelChoice;
use codewright_host::{memory, skills, HostError, RunOptions, Running, Sent, TaskOptions};
use codewright_protocol::{
    ApprovalRequest, Attachment, Checkpoint, Compaction, Decision, Message, MessageRecord, Part,
    PermissionMode, Question, Task, TaskId,
};
use codewright_store::CallState;
use serde::Serialize;
use std::path::PathBuf;
use tauri::{Manager, State};

/// Messages a window loads at a time (the newest first, older ones as the user scrolls up).
const PAGE: usize = 50;

impl From<HostError> for CommandError {
    fn from(e: HostError) -> Self {
        let kind = serde_json::to_value(e.kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_else(|| "host".into());
        CommandError {
            kind,
            message: e.message,
            fatal: false,
            saved: e.saved,
        }
    }
}

/// Everything a task window shows when it opens.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    pub task: Task,
    /// The newest page, oldest first.
    pub messages: Vec<MessageRecord>,
    pub has_older: bool,
    /// Where the run is, when one is live in this app (`None`: not running here).
    pub state: Option<codewright_protocol::AgentState>,
    /// Approvals and questions waiting now: a reopened window shows them again.
    pub approvals: Vec<ApprovalRequest>,
    pub questions: Vec<Question>,
    pub checkpoints: Vec<Checkpoint>,
    /// Every summary of earlier messages, oldest first: each shows where it starts.
    pub compactions: Vec<Compaction>,
    pub options: TaskOptions,
    pub models: Vec<ModelChoice>,
    /// The main role's model: what the task uses while it has none of its own.
    pub main_model: Option<String>,
    /// Where each call of the latest answer got to, as recorded while it ran: a window opened
    /// mid-run or after a crash shows calls that finished, run, or were cut short.
    pub calls: Vec<CallView>,
    /// Messages sent while the agent worked and not delivered yet (kept through a crash: the
    /// task's next run delivers them), oldest first.
    pub queued: Vec<Message>,
}

/// Where one tool call got to (the store's `CallState`, for the view).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum CallView {
    /// Waiting for the user: it has not run.
    #[serde(rename_all = "camelCase")]
    Asking { call_id: String },
    /// Running, or allowed to run: after a crash, it may or may not have taken effect.
    #[serde(rename_all = "camelCase")]
    Running { call_id: String },
    /// Done: its result, before the answer's results are stored together.
    #[serde(rename_all = "camelCase")]
    Finished { call_id: String, result: Part },
}

#[tauri::command]
pub async fn task_view(state: State<'_, AppState>, task_id: TaskId) -> Result<TaskView> {
    let host = state.host()?;
    let (task, mut messages, checkpoints, compactions, calls, queued) = {
        let store = state.store()?;
        (
            store.task(task_id)?,
            store.messages(task_id, None, PAGE + 1)?,
            store.checkpoints(task_id)?,
            store.compactions(task_id)?,
            store.call_states(task_id)?,
            store.queued_messages(task_id)?,
        )
    };
    let queued = queued.into_iter().map(|(_, message)| message).collect();
    let calls = calls
        .into_iter()
        .map(|(call_id, state)| match state {
            CallState::Asking => CallView::Asking { call_id },
            CallState::Running => CallView::Running { call_id },
            CallState::Finished(result) => CallView::Finished { call_id, result },
        })
        .collect();
    let has_older = messages.len() > PAGE;
    messages.truncate(PAGE);
    messages.reverse();
    let running = host.running(task_id);
    let (models, main_model) = {
        let store = state.store()?;
        (
            codewright_host::models::choices(&store)?,
            codewright_host::models::main_model(&store)?,
        )
    };
    let (state_now, approvals, questions) = match running {
        Some(Running {
            state,
            approvals,
            questions,
        }) => (Some(state), approvals, questions),
        None => (None, Vec::new(), Vec::new()),
    };
    Ok(TaskView {
        task,
        messages,
        has_older,
        state: state_now,
        approvals,
        questions,
        checkpoints,
        compactions,
        options: host.options(task_id)?,
        models,
        main_model,
        calls,
        queued,
    })
}

/// Older messages than `before_seq`, oldest first.
#[tauri::command]
pub async fn older_messages(
    state: State<'_, AppState>,
    task_id: TaskId,
    before_seq: i64,
    limit: Option<usize>,
) -> Result<Vec<MessageRecord>> {
    let mut page =
        state
            .store()?
            .messages(task_id, Some(before_seq), limit.unwrap_or(PAGE).min(500))?;
    page.reverse();
    Ok(page)
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
            let (resolved, asked) = {
                let store = state.store()?;
                let project = store.task(task_id)?.project_id;
                let resolved = commands::resolve(&store, project, &typed)?;
                // A prompt of an MCP server: the server is asked for it below, the store free.
                let asked = match &resolved {
                    Resolved::McpPrompt {
                        server,
                        prompt,
                        arguments,
                    } => match codewright_host::mcp::prompt_server(&store, project, server)? {
                        Some(row) => Some(codewright_host::mcp::prompt_text(
                            &store, project, &row, prompt, arguments,
                        )?),
                        None => None,
                    },
                    _ => None,
                };
                (resolved, asked)
            };
            match resolved {
                Resolved::McpPrompt { server, .. } => match asked {
                    Some(asked) => Some(asked.await?),
                    None => {
                        return Err(HostError::new(
                            codewright_protocol::ErrorKind::NotFound,
                            format!("There is no MCP server {server} any more."),
                        )
                        .into())
                    }
                },
                Resolved::Message { text } => Some(text),
                Resolved::Prompt {
                    text,
                    model,
                    agent,
                    tools,
                } => {
                    options.model_once = model.is_some();
                    options.model = model;
                    options.this_run = codewright_agent::ThisRun { agent, tools };
                    Some(text)
                }
                Resolved::Action { action, arguments } => {
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
    let store = state.store()?;
    let project = store.task(task_id)?.project_id;
    let mut list = commands::list(&store, project)?;
    // The prompts of the project's MCP servers, once they have started.
    list.commands
        .extend(state.host()?.mcp_prompt_commands(project));
    list.commands.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(list)
}

/// The skills of the task's project, each on or off for the task (`/skills`).
#[tauri::command]
pub async fn task_skills(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<skills::TaskSkills> {
    Ok(skills::task_skills(&*state.store()?, task_id)?)
}

/// Switches a skill on or off for the task, from its next message.
#[tauri::command]
pub async fn switch_skill(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
    on: bool,
) -> Result<skills::TaskSkills> {
    Ok(skills::switch_skill(&*state.store()?, task_id, &name, on)?)
}

/// What a sub-agent did for one of the task's `agent` calls: its agent, where its run got to and
/// its conversation (the job first). `None` when the call started none (it failed before).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentWork {
    agent: String,
    status: codewright_protocol::TaskStatus,
    messages: Vec<codewright_protocol::MessageRecord>,
}

/// The work of the sub-agent the task's call `call_id` started, to show under its panel.
#[tauri::command]
pub async fn sub_agent_work(
    state: State<'_, AppState>,
    task_id: TaskId,
    call_id: String,
) -> Result<Option<SubAgentWork>> {
    let store = state.store()?;
    let Some(child) = store
        .child_tasks(task_id)?
        .into_iter()
        // The newest: a provider without call ids repeats them from one answer to the next.
        .rev()
        .find(|c| c.parent.as_ref().is_some_and(|p| p.call == call_id))
    else {
        return Ok(None);
    };
    Ok(Some(SubAgentWork {
        agent: child
            .settings
            .get(codewright_agent::AGENT)
            .and_then(|a| a.as_str())
            .unwrap_or("coder")
            .to_string(),
        status: child.status,
        messages: store.history(child.id)?,
    }))
}

/// The agents of the task's project, and which one the task runs as (`/agent`).
#[tauri::command]
pub async fn task_agents(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<codewright_host::agents::TaskAgents> {
    Ok(codewright_host::agents::task_agents(
        &*state.store()?,
        task_id,
    )?)
}

/// Makes `name` the task's agent, from its next message.
#[tauri::command]
pub async fn choose_agent(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
) -> Result<codewright_host::agents::TaskAgents> {
    Ok(codewright_host::agents::choose_agent(
        &*state.store()?,
        task_id,
        &name,
    )?)
}

/// Ranks a skill for the task (higher first, 0 the default), from its next message.
#[tauri::command]
pub async fn rank_skill(
    state: State<'_, AppState>,
    task_id: TaskId,
    name: String,
    priority: i64,
) -> Result<skills::TaskSkills> {
    Ok(skills::rank_skill(
        &*state.store()?,
        task_id,
        &name,
        priority,
    )?)
}

/// Summarizes the task's older messages now (`/compact`); false when there is too little.
#[tauri::command]
pub async fn compact_task(state: State<'_, AppState>, task_id: TaskId) -> Result<bool> {
    let host = state.host()?.clone();
    Ok(host.compact(task_id).await?)
}

/// The MCP servers the task's runs use (every project's and its project's own), for `/mcp`.
#[tauri::command]
pub async fn task_mcp_servers(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<Vec<TaskServer>> {
    let store = state.store()?;
    let project = store.task(task_id)?.project_id;
    Ok(codewright_host::mcp::server_views(&store)?
        .into_iter()
        .filter(|s| s.project.is_none_or(|p| p == project))
        .map(|s| TaskServer {
            name: s.name,
            transport: s.transport,
            enabled: s.enabled,
        })
        .collect())
}

/// An MCP server as `/mcp` lists it (no settings, no secrets).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskServer {
    name: String,
    transport: &'static str,
    enabled: bool,
}

/// The task's project memory and the user's (`/memory`).
#[tauri::command]
pub async fn task_memory(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<Vec<memory::MemoryFile>> {
    Ok(memory::memory_files(&*state.store()?, task_id)?)
}

/// Saves a memory file as the user edited it.
#[tauri::command]
pub async fn save_memory(
    state: State<'_, AppState>,
    task_id: TaskId,
    scope: memory::Scope,
    text: String,
) -> Result<memory::MemoryFile> {
    Ok(memory::save_memory(
        &*state.store()?,
        task_id,
        scope,
        &text,
    )?)
}

/// Starts a new task in the task's project and opens its window (`/new`, `/clear`).
#[tauri::command]
pub async fn new_sibling_task<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<()> {
    let task = {
        let store = state.store()?;
        let project = store.task(task_id)?.project_id;
        store.add_task(project, "New task")?
    };
    state.changed();
    crate::windows::open_task_window(&app, &task, None).await?;
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
    let root = {
        let state = app.state::<AppState>();
        let store = state.store()?;
        PathBuf::from(store.project(store.task(task_id)?.project_id)?.root_path)
    };
    // Walking a large project takes a while: not on the window's thread.
    let found = tauri::async_runtime::spawn_blocking(move || {
        let files = app.state::<AppState>().project_files(&root);
        codewright_host::files::find_files(&files, &query, MENTION_LIMIT)
    })
    .await;
    found.map_err(|e| CommandError {
        kind: "files".into(),
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
            kind: "badLink".into(),
            message: format!("only web and mail links can be opened, not {url}"),
            fatal: false,
            saved: false,
        });
    }
    crate::commands::system_open(url.as_ref()).map_err(|e| CommandError {
        kind: "badLink".into(),
        message: format!("the browser could not be started ({e}); copy the link instead: {url}"),
        fatal: false,
        saved: false,
    })
}
