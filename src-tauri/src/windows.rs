//! Task windows: one per task, labelled `task-<id>`.

use crate::REVEAL_EVENT;
use codewright_protocol::{Task, TaskId};
use tauri::{AppHandle, Emitter, EventTarget, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

/// What every task window's label starts with.
pub(crate) const TASK_PREFIX: &str = "task-";

/// The label of a task's window.
pub(crate) fn label(id: TaskId) -> String {
    format!("{TASK_PREFIX}{id}")
}

/// The task whose window has this label, if it is a task window's.
pub(crate) fn task_of(label: &str) -> Option<TaskId> {
    label.strip_prefix(TASK_PREFIX)?.parse().ok().map(TaskId)
}

fn title(task: &Task) -> String {
    format!("{} — Codewright", task.title)
}

/// Opens the task in its own window, or brings its window to the front if it is already open.
pub(crate) async fn open_task_window<R: Runtime>(
    app: &AppHandle<R>,
    task: &Task,
    at: Option<i64>,
) -> tauri::Result<()> {
    let label = label(task.id);
    // A window just closed is gone from the screen a moment before the app forgets it; focusing
    // it then would do nothing, and its label is not free yet: wait for it to be gone.
    let deadline = tokio::time::Instant::now() + CLOSING_WAIT;
    while let Some(window) = app.get_webview_window(&label) {
        if window.is_visible().is_ok() {
            if let Some(seq) = at {
                window.emit_to(EventTarget::webview_window(&label), REVEAL_EVENT, seq)?;
            }
            window.unminimize()?;
            window.show()?;
            return window.set_focus();
        }
        if tokio::time::Instant::now() > deadline {
            break; // building it again says what is wrong
        }
        tokio::time::sleep(CLOSING_POLL).await;
    }
    WebviewWindowBuilder::new(
        app,
        label,
        WebviewUrl::App(match at {
            Some(seq) => format!("task.html?id={}&at={seq}", task.id).into(),
            None => format!("task.html?id={}", task.id).into(),
        }),
    )
    .title(title(task))
    .inner_size(880.0, 720.0)
    .min_inner_size(480.0, 360.0)
    // Images dropped on the composer reach the page (it attaches them, and refuses other drops).
    .disable_drag_drop_handler()
    .build()?;
    Ok(())
}

/// How long opening a task waits for its closing window to be gone, and how often it looks.
const CLOSING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
const CLOSING_POLL: std::time::Duration = std::time::Duration::from_millis(20);

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

/// Something waits for the user in this window: unless it is focused, bring it to the front, ask
/// the window manager for attention (the taskbar entry flashes), and (if `notify`) show an OS
/// notification (`title`, `body`) — also when the window is not open. Its dialog does not take a
/// keystroke meant for another window (see approval.js).
pub(crate) fn ask_attention<R: Runtime>(
    app: &AppHandle<R>,
    label: &str,
    notify: bool,
    title: &str,
    body: &str,
) {
    if let Some(window) = app.get_webview_window(label) {
        if window.is_focused().unwrap_or(false) {
            return;
        }
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
        let _ = window.request_user_attention(Some(tauri::UserAttentionType::Critical));
    }
    if notify {
        show_notification(app, title, body);
    }
}

/// Shows an OS notification (`title`, `body`) about the task of the window `label`, unless that
/// window is in front: the user sees it there already.
pub(crate) fn tell<R: Runtime>(app: &AppHandle<R>, label: &str, title: &str, body: &str) {
    let in_front = app
        .get_webview_window(label)
        .is_some_and(|w| w.is_focused().unwrap_or(false));
    if !in_front {
        show_notification(app, title, body);
    }
}

fn show_notification<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    use tauri_plugin_notification::NotificationExt;
    let _ = app
        .notification()
        .builder()
        .title(title)
        .body(notification_body(body))
        .show();
}

/// Characters of a notification's body (it shows on a lock screen and stays in a history).
const BODY_CHARS: usize = 200;

/// `text` shortened for a notification; on Linux, where notification servers may read the body as
/// markup, with the characters markup gives meaning to escaped.
fn notification_body(text: &str) -> String {
    let mut body: String = text.chars().take(BODY_CHARS).collect();
    if body.len() < text.len() {
        body.push('…');
    }
    if cfg!(target_os = "linux") {
        body = body
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
    }
    body
}
