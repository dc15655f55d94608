//! The commands of a task's worktree, for the task window's Changes view: its whole change,
//! reverting a file or a hunk, comments sent to the agent, a drafted commit message, commit,
//! merge, discard and restore. Each is one call into the host (`codewright_host::worktrees`);
//! the guard has already checked that a task window names only its own task. And the main
//! window's rows: where each worktree task's branch stands, pushed as the [`STANDING_EVENT`]
//! whenever it changes (`codewright_host::standing`).

use crate::error::Result;
use crate::AppState;
use codewright_host::standing::{Standing, StandingWatch};
use codewright_host::worktrees::{
    Committed, Discarded, HunkRef, Merge, PullRequestChecks, ReviewComment, TaskChanges,
};
use codewright_host::{Host, HostError, Sent};
use codewright_protocol::{ProjectId, Task, TaskId};
use serde::Serialize;
use std::sync::Mutex;
use tauri::{AppHandle, Emitter, EventTarget, Runtime, State};

/// Runs `job` on the host off the async runtime and the window's thread ([`Host::off_runtime`]).
pub(crate) async fn off_runtime<T: Send + 'static>(
    state: &AppState,
    job: impl FnOnce(&Host) -> std::result::Result<T, HostError> + Send + 'static,
) -> Result<T> {
    Ok(state.host()?.off_runtime(job).await?)
}

/// Name of the event that tells the main window where a worktree task's branch stands now.
pub const STANDING_EVENT: &str = "standing";

/// A task's standing, as the main window hears it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskStanding {
    task_id: TaskId,
    /// `None`: it cannot be read now (its worktree discarded, its folder removed by hand).
    standing: Option<Standing>,
}

/// The project whose tasks' branches the main window follows (one at a time: the one it shows).
#[derive(Default)]
pub struct Standings {
    watch: Mutex<Option<(ProjectId, StandingWatch)>>,
}

impl Standings {
    /// The task's files may have changed: its row is read again if it is followed.
    pub(crate) fn touched(&self, task: TaskId) {
        if let Some((_, watch)) = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            watch.touched(task);
        }
    }

    /// The main window closed: nobody is told any more.
    pub(crate) fn stop(&self) {
        let before = self.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(before);
    }

    /// The main window came back to the front: files may have been edited by hand meanwhile.
    pub(crate) fn refresh(&self) {
        if let Some((_, watch)) = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            watch.refresh();
        }
    }
}

/// Follows where the branches of `project_id`'s worktree tasks stand (and stops following the
/// project followed before): each is pushed as a [`STANDING_EVENT`] soon — all of them, the
/// window having just shown the project's rows — and again when it changes.
#[tauri::command]
pub async fn follow_standings<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    standings: State<'_, Standings>,
    project_id: ProjectId,
) -> Result<()> {
    let followed = state
        .host()?
        .follow_standings(project_id, move |task_id, standing| {
            let _ = app.emit_to(
                EventTarget::webview_window("main"),
                STANDING_EVENT,
                TaskStanding { task_id, standing },
            );
        })?;
    let before = standings
        .watch
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .replace((project_id, followed));
    drop(before); // (its watch stops outside the lock)
    Ok(())
}

/// Everything the task changed against its base, by file and hunk, and where its branch stands.
#[tauri::command]
pub async fn task_changes(state: State<'_, AppState>, task_id: TaskId) -> Result<TaskChanges> {
    off_runtime(&state, move |host| host.task_changes(task_id)).await
}

/// What a task working in the project folder changed: each file its checkpoints saved against
/// the file now, and which of them are not committed yet.
#[tauri::command]
pub async fn folder_changes(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<codewright_host::folder_changes::FolderReview> {
    off_runtime(&state, move |host| host.folder_review(task_id)).await
}

/// Puts a file of the change (or one of its hunks) back as it was at the base.
#[tauri::command]
pub async fn revert_change(
    state: State<'_, AppState>,
    task_id: TaskId,
    path: String,
    hunk: Option<HunkRef>,
) -> Result<()> {
    off_runtime(&state, move |host| host.revert_change(task_id, &path, hunk)).await
}

/// Sends the comments written on the change's lines to the agent, as one message.
#[tauri::command]
pub async fn send_review(
    state: State<'_, AppState>,
    task_id: TaskId,
    comments: Vec<ReviewComment>,
) -> Result<Sent> {
    let sent = state.host()?.send_review(task_id, &comments).await?;
    state.changed();
    Ok(sent)
}

/// A commit message for the change, drafted by the small model.
#[tauri::command]
pub async fn draft_commit_message(state: State<'_, AppState>, task_id: TaskId) -> Result<String> {
    Ok(state.host()?.draft_commit_message(task_id).await?)
}

#[tauri::command]
pub async fn commit_task(
    state: State<'_, AppState>,
    task_id: TaskId,
    message: String,
) -> Result<Committed> {
    let committed = off_runtime(&state, move |host| {
        host.commit_task(task_id, Some(&message))
    })
    .await?;
    state.changed();
    Ok(committed)
}

#[tauri::command]
pub async fn merge_task(
    state: State<'_, AppState>,
    task_id: TaskId,
    mode: Merge,
) -> Result<codewright_host::worktrees::Merged> {
    let merged = off_runtime(&state, move |host| host.merge_task(task_id, mode)).await?;
    state.changed();
    Ok(merged)
}

#[tauri::command]
pub async fn discard_task(state: State<'_, AppState>, task_id: TaskId) -> Result<Discarded> {
    let discarded = off_runtime(&state, move |host| host.discard_task(task_id)).await?;
    state.changed();
    Ok(discarded)
}

#[tauri::command]
pub async fn restore_task(state: State<'_, AppState>, task_id: TaskId) -> Result<Task> {
    let task = off_runtime(&state, move |host| host.restore_task(task_id)).await?;
    state.changed();
    Ok(task)
}

/// Asks the agent to resolve what keeps its branch from merging into its base.
#[tauri::command]
pub async fn resolve_conflicts(state: State<'_, AppState>, task_id: TaskId) -> Result<Sent> {
    let sent = state.host()?.resolve_conflicts(task_id).await?;
    state.changed();
    Ok(sent)
}

/// A pull request's title and body, drafted from the task's change.
#[tauri::command]
pub async fn draft_pull_request(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<codewright_host::worktrees::PullRequestDraft> {
    Ok(state.host()?.draft_pull_request(task_id).await?)
}

/// Pushes the task's branch and opens its pull request (`gh`); its address.
#[tauri::command]
pub async fn open_pull_request(
    state: State<'_, AppState>,
    task_id: TaskId,
    title: String,
    body: String,
) -> Result<String> {
    let url = off_runtime(&state, move |host| {
        host.open_pull_request(task_id, &title, &body)
    })
    .await?;
    state.changed();
    Ok(url)
}

/// The checks of the task's pull request now, as GitHub's command line reports them.
#[tauri::command]
pub async fn pull_request_checks(
    state: State<'_, AppState>,
    task_id: TaskId,
) -> Result<PullRequestChecks> {
    off_runtime(&state, move |host| host.pull_request_checks(task_id)).await
}
