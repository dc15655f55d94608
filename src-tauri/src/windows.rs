//! Task windows: one per task, labelled `task-<id>`.

use codewright_protocol::{Task, TaskId};
use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

/// The label of a task's window.
pub(crate) fn label(id: TaskId) -> String {
    format!("task-{id}")
}

fn title(task: &Task) -> String {
    format!("{} — Codewright", task.title)
}

/// Opens the task in its own window, or brings its window to the front if it is already open.
pub(crate) fn open_task_window<R: Runtime>(app: &AppHandle<R>, task: &Task) -> tauri::Result<()> {
    if let Some(window) = app.get_webview_window(&label(task.id)) {
        window.unminimize()?;
        window.show()?;
        return window.set_focus();
    }
    WebviewWindowBuilder::new(
        app,
        label(task.id),
        WebviewUrl::App(format!("task.html?id={}", task.id).into()),
    )
    .title(title(task))
    .inner_size(880.0, 720.0)
    .min_inner_size(480.0, 360.0)
    .build()?;
    Ok(())
}

pub(crate) fn retitle_task_window<R: Runtime>(app: &AppHandle<R>, task: &Task) {
    if let Some(window) = app.get_webview_window(&label(task.id)) {
        let _ = window.set_title(&title(task));
    }
}

pub(crate) fn close_task_window<R: Runtime>(app: &AppHandle<R>, id: TaskId) {
    if let Some(window) = app.get_webview_window(&label(id)) {
        let _ = window.close();
    }
}
