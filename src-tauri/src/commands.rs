//! The commands windows may invoke. Each is a thin call into the store; every write wakes the sync
//! thread, which pushes the change to all windows. Which window may call which command is set by
//! the capabilities in tauri.conf.json.

use crate::error::{CommandError, Result};
use crate::{windows, AppState};
use codewright_host::task_files::TaskFiles;
use codewright_protocol::ErrorKind;
use codewright_protocol::{Project, ProjectId, SearchHit, Task, TaskId};
use serde::Serialize;
use std::path::PathBuf;
use tauri::{AppHandle, Manager, Runtime, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;

/// Where the data lives and, if the store could not be opened, why.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    pub data_dir: String,
    pub version: &'static str,
    pub startup_error: Option<CommandError>,
    /// What was found wrong with the tasks' worktrees at start, and repaired.
    pub repaired: Vec<String>,
}

#[tauri::command]
pub fn app_info(state: State<'_, AppState>) -> AppInfo {
    AppInfo {
        data_dir: state.home().display().to_string(),
        version: env!("CARGO_PKG_VERSION"),
        startup_error: state.startup_error().cloned(),
        repaired: state.repaired().to_vec(),
    }
}

#[tauri::command]
pub fn list_projects(state: State<'_, AppState>) -> Result<Vec<Project>> {
    Ok(state.host()?.projects()?)
}

#[tauri::command]
pub fn add_project(
    state: State<'_, AppState>,
    path: String,
    name: Option<String>,
) -> Result<Project> {
    let name = name.filter(|n| !n.trim().is_empty());
    let path = expand_home(&path);
    // The app's working directory means nothing to the user: a relative path is ambiguous.
    if !path.as_os_str().is_empty() && !path.is_absolute() {
        return Err(CommandError {
            kind: ErrorKind::BadPath,
            message: format!(
                "{} is a relative path; type the full path of the folder (starting with / or ~/), or use Browse…",
                path.display()
            ),
            fatal: false,
            saved: false,
        });
    }
    let project = state.host()?.add_project(&path, name.as_deref())?;
    state.changed();
    Ok(project)
}

#[tauri::command]
pub fn rename_project(state: State<'_, AppState>, id: ProjectId, name: String) -> Result<Project> {
    let project = state.host()?.rename_project(id, &name)?;
    state.changed();
    Ok(project)
}

/// Removes the project and its tasks from Codewright; the folder on disk is never touched.
#[tauri::command]
pub fn remove_project(state: State<'_, AppState>, id: ProjectId) -> Result<()> {
    state.host()?.remove_project(id)?;
    state.changed();
    Ok(())
}

/// Shows the native folder chooser; `None` if the user cancelled.
#[tauri::command]
pub async fn pick_folder<R: Runtime>(
    app: AppHandle<R>,
    window: WebviewWindow<R>,
) -> Result<Option<String>> {
    // Parented to the asking window, so it stays in front of it and is modal to it.
    let dialog = app
        .dialog()
        .file()
        .set_title("Choose a project folder")
        .set_parent(&window);
    choose("folder", move || dialog.blocking_pick_folder()).await
}

/// Shows a native chooser (`pick`, off the main thread) and returns the path chosen; `None` if
/// the user cancelled. `what` names it in an error ("folder", "file").
pub(crate) async fn choose(
    what: &str,
    pick: impl FnOnce() -> Option<tauri_plugin_dialog::FilePath> + Send + 'static,
) -> Result<Option<String>> {
    let picked = tauri::async_runtime::spawn_blocking(pick)
        .await
        .map_err(|e| CommandError {
            kind: ErrorKind::Window,
            message: format!("the {what} chooser failed: {e}; type the path instead"),
            fatal: false,
            saved: false,
        })?;
    Ok(picked
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string()))
}

#[tauri::command]
pub fn list_tasks(state: State<'_, AppState>, project_id: ProjectId) -> Result<Vec<Task>> {
    Ok(state.host()?.tasks(project_id)?)
}

/// A task (a task window may read only its own: see `guard.rs`).
#[tauri::command]
pub fn get_task(state: State<'_, AppState>, id: TaskId) -> Result<Task> {
    Ok(state.host()?.task(id)?)
}

/// A new task; `worktree`: in a git worktree of its own, on a new branch from the project's
/// current branch.
#[tauri::command]
pub async fn create_task(
    state: State<'_, AppState>,
    project_id: ProjectId,
    title: String,
    worktree: Option<bool>,
) -> Result<Task> {
    // (Making a worktree is git's checkout of the whole project: not on the window's thread.)
    let task = crate::worktrees::off_runtime(&state, move |host| match worktree.unwrap_or(false) {
        true => host.add_task_in_worktree(project_id, Some(&title), None, None),
        false => host.add_task(project_id, &title),
    })
    .await?;
    state.changed();
    Ok(task)
}

#[tauri::command]
pub fn rename_task(state: State<'_, AppState>, id: TaskId, title: String) -> Result<Task> {
    let task = state.host()?.rename_task(id, &title)?;
    state.changed();
    Ok(task)
}

#[tauri::command]
pub fn delete_task(state: State<'_, AppState>, id: TaskId) -> Result<()> {
    // Its run stops and its background processes end with it.
    state.host()?.remove_task(id)?;
    state.changed();
    Ok(())
}

/// Opens the task in its own window, or focuses that window if it is open;
/// `at` (a message's seq, from a search) is scrolled into view; `changes`: its Changes view opens.
#[tauri::command]
pub async fn open_task<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: TaskId,
    at: Option<i64>,
    changes: Option<bool>,
) -> Result<()> {
    let task = state.host()?.task(id)?;
    let show = windows::Show {
        at,
        changes: changes.unwrap_or(false),
    };
    windows::open_task_window(&app, &task, show).await?;
    // In front now (the window manager may not say so: without one, no focus event comes).
    app.state::<crate::tree::TreeState>().focused(id);
    if task.unread {
        state.host()?.mark_task_read(id)?;
        state.changed();
    }
    Ok(())
}

/// The project's task files (`.codewright/tasks`, `.ayder/tasks`), and those that cannot be read.
#[tauri::command]
pub fn task_files(state: State<'_, AppState>, project_id: ProjectId) -> Result<TaskFiles> {
    Ok(state.host()?.task_files(project_id)?)
}

/// Starts implementing the project's task file `id` in a new task (returned; the window opens
/// it). The file is marked done when the task's run finishes done.
#[tauri::command]
pub async fn implement_task_file(
    state: State<'_, AppState>,
    project_id: ProjectId,
    id: String,
) -> Result<TaskId> {
    let host = state.host()?.clone();
    let task = host.implement(project_id, &id).await?;
    state.changed();
    Ok(task)
}

/// A spare task window (opened hidden ahead of time) has loaded and waits for a task to show.
#[tauri::command]
pub fn spare_ready<R: Runtime>(app: AppHandle<R>, window: WebviewWindow<R>) {
    crate::windows::spare_ready(&app, window.label());
}

/// Full-text search across every conversation, best matches first (at most 60).
#[tauri::command]
pub fn search_conversations(state: State<'_, AppState>, query: String) -> Result<Vec<SearchHit>> {
    Ok(state.host()?.search_messages(&query, 60)?)
}

/// Tasks of every project whose title holds all of `query`'s words, most recently active first
/// (at most 50), for the command palette.
#[tauri::command]
pub fn find_tasks(state: State<'_, AppState>, query: String) -> Result<Vec<Task>> {
    Ok(state.host()?.find_tasks(&query, 50)?)
}

/// The tasks of every project that need the user (an approval or a question waiting, a result
/// not yet seen), for the sidebar's counts.
#[tauri::command]
pub fn tasks_needing_you(state: State<'_, AppState>) -> Result<Vec<Task>> {
    Ok(state.host()?.tasks_needing_you()?)
}

/// Closes the window that asks (Ctrl+W); a window can close only itself.
#[tauri::command]
pub fn close_window<R: Runtime>(window: WebviewWindow<R>) -> Result<()> {
    Ok(window.close()?)
}

/// `~/x` → `$HOME/x`, as a user typing a path expects.
fn expand_home(path: &str) -> PathBuf {
    let path = path.trim();
    match (
        path.strip_prefix("~/").or((path == "~").then_some("")),
        std::env::var_os("HOME"),
    ) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}
