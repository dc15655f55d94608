//! The main window's file tree of the selected project: folders listed on demand with their git
//! marks (`codewright_host::tree`), the open folders watched (one place at a time) and their
//! changes pushed as the [`TREE_EVENT`], and a file opened in the system's default app or put
//! into the composer of a task window. The tree shows the project's folder or, with a task,
//! that task's worktree ([`Place`]).

use crate::error::{CommandError, Result};
use crate::{windows, AppState};
use codewright_host::tree::{self, Folder, GitStatus, TreeWatcher};
use codewright_protocol::ErrorKind;
use codewright_protocol::{ProjectId, TaskId};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tauri::{AppHandle, Emitter, EventTarget, Manager, Runtime, State};

/// Name of the event that says which folders of the tree's project changed on disk.
pub const TREE_EVENT: &str = "tree";
/// Name of the event that asks a task window to put a file into its message.
pub const ATTACH_EVENT: &str = "attach";
/// How long a git status is reused while the tree lists folders (a change on disk drops it).
const STATUS_FRESH: Duration = Duration::from_secs(2);

/// Whose files the tree shows: a project's folder, or with `task` that task's worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    project_id: ProjectId,
    #[serde(default)]
    task_id: Option<TaskId>,
}

/// A place's git status and when it was read (`None`: not a repository).
type CachedStatus = Option<(Place, Instant, Option<Arc<GitStatus>>)>;

/// What the tree keeps: the watcher of its place, that place's git status, and the task
/// windows by when they were last in front (where "Attach" puts a file).
#[derive(Default)]
pub struct TreeState {
    watcher: Mutex<Option<(Place, TreeWatcher)>>,
    status: Arc<Mutex<CachedStatus>>,
    /// Task windows by when they were last in front, the latest first.
    task_windows: Mutex<Vec<TaskId>>,
}

impl TreeState {
    /// Remembers the task window that came to the front.
    pub(crate) fn focused(&self, task: TaskId) {
        let mut order = self.task_windows.lock().unwrap_or_else(|p| p.into_inner());
        order.retain(|t| *t != task);
        order.insert(0, task);
    }

    fn status(&self, place: Place, root: &std::path::Path) -> Option<Arc<GitStatus>> {
        let mut cached = self.status.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((p, at, status)) = cached.as_ref() {
            if *p == place && at.elapsed() < STATUS_FRESH {
                return status.clone();
            }
        }
        let status = GitStatus::read(root).map(Arc::new);
        *cached = Some((place, Instant::now(), status.clone()));
        status
    }
}

/// What changed in the tree's place.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct TreeChanged {
    #[serde(flatten)]
    place: Place,
    folders: Vec<String>,
}

fn root_of(state: &AppState, place: Place) -> Result<PathBuf> {
    Ok(state.host()?.files_root(place.project_id, place.task_id)?)
}

/// The folder `path` ("" for the top) of a place, with git marks.
#[tauri::command]
pub async fn list_folder(
    state: State<'_, AppState>,
    tree: State<'_, TreeState>,
    place: Place,
    path: String,
) -> Result<Folder> {
    let root = root_of(&state, place)?;
    let status = tree.status(place, &root);
    Ok(tree::list_folder(&root, &path, status.as_deref())?)
}

/// Watches exactly the folders open in the tree of `place` (and no other place's).
#[tauri::command]
pub fn watch_tree<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    tree: State<'_, TreeState>,
    place: Place,
    folders: Vec<String>,
) -> Result<()> {
    let root = root_of(&state, place)?;
    let mut watcher = tree.watcher.lock().unwrap_or_else(|p| p.into_inner());
    if watcher.as_ref().is_none_or(|(p, _)| *p != place) {
        let status = tree.status.clone();
        let started = TreeWatcher::new(&root, move |folders| {
            // The marks may have changed with the files.
            *status.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let changed = TreeChanged { place, folders };
            let _ = app.emit_to(EventTarget::webview_window("main"), TREE_EVENT, changed);
        })?;
        *watcher = Some((place, started));
    }
    if let Some((_, w)) = watcher.as_mut() {
        w.watch_only(&folders);
    }
    Ok(())
}

/// A file of the place, refused if it leaves it.
fn file_of(state: &AppState, place: Place, path: &str) -> Result<PathBuf> {
    let root = root_of(state, place)?;
    let file = tree::folder_path(&root, path)?;
    if !file.is_file() {
        return Err(CommandError {
            kind: ErrorKind::NotFound,
            message: format!("{path} is not a file of the project any more"),
            fatal: false,
            saved: false,
        });
    }
    Ok(file)
}

/// Opens a file of the place in the system's default app for it.
#[tauri::command]
pub fn open_file(state: State<'_, AppState>, place: Place, path: String) -> Result<()> {
    let file = file_of(&state, place, &path)?;
    crate::error::system_open(file.as_os_str()).map_err(|e| CommandError {
            kind: ErrorKind::Setup,
            message: format!(
                "{path} could not be opened: no app to open it could be started (xdg-open: {e}); open it from its folder instead"
            ),
            fatal: false,
            saved: false,
        })
}

/// Puts `@path` into the message of the open task window that works in the place — the
/// worktree's own task, or of the project's tasks in its folder the one last in front — and
/// brings it to the front. Returns the task's id.
#[tauri::command]
pub fn attach_file<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    tree: State<'_, TreeState>,
    place: Place,
    path: String,
) -> Result<TaskId> {
    file_of(&state, place, &path)?;
    let no_window = || {
        CommandError {
        kind: ErrorKind::NotFound,
        message: match place.task_id {
            Some(_) => "Open this worktree's task first: the file goes into its message.",
            None => "Open a task of this project that works in its folder first: the file goes into its message.",
        }
        .into(),
        fatal: false,
        saved: false,
    }
    };
    let order = tree
        .task_windows
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let works_here = |task: &codewright_protocol::Task| match place.task_id {
        Some(id) => task.id == id,
        None => task.project_id == place.project_id && task.active_worktree().is_none(),
    };
    let (task, window) = {
        let host = state.host()?;
        order
            .into_iter()
            .filter(|t| host.task(*t).is_ok_and(|t| works_here(&t)))
            .find_map(|t| {
                app.get_webview_window(&windows::label(&app, t))
                    .map(|w| (t, w))
            })
            .ok_or_else(no_window)?
    };
    window.emit_to(
        EventTarget::webview_window(window.label()),
        ATTACH_EVENT,
        &path,
    )?;
    let _ = window.set_focus();
    Ok(task)
}
