//! Task windows: one per task. A window built for a task is labelled `task-<id>`; a spare one
//! (`task-spare-<n>`, opened hidden ahead of time so that opening a task skips starting a web
//! process and its page) shows the task it is given, which [`Windows`] remembers.

use crate::REVEAL_EVENT;
use codewright_protocol::{Task, TaskId};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tauri::{
    AppHandle, Emitter, EventTarget, Manager, Runtime, WebviewUrl, WebviewWindow,
    WebviewWindowBuilder,
};

/// What every task window's label starts with.
pub(crate) const TASK_PREFIX: &str = "task-";
/// What a spare task window's label starts with.
const SPARE_PREFIX: &str = "task-spare-";
/// Name of the event that gives a spare window its task: [`Adoption`].
pub const ADOPT_EVENT: &str = "adopt";

/// The task windows' labels the app cannot tell from the label alone: which task each spare
/// window was given, and the spare waiting to be used.
#[derive(Default)]
pub(crate) struct Windows {
    adopted: Mutex<HashMap<String, TaskId>>,
    spare: Mutex<Spare>,
    made: AtomicU64,
    /// Held while a task window opens: a second open of the same task (a double click) finds
    /// the first one's window instead of making another.
    opening: tokio::sync::Mutex<()>,
}

/// The spare window: none, one whose page is still starting, or one waiting for a task.
#[derive(Default, PartialEq)]
enum Spare {
    #[default]
    None,
    Starting(String),
    Ready(String),
}

/// What a task window shows first, besides its conversation's end.
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Show {
    /// A message (a search's match), by seq.
    pub at: Option<i64>,
    /// The Changes view of the task's worktree.
    pub changes: bool,
}

/// What a spare window is told when it is given a task.
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Adoption {
    task_id: TaskId,
    #[serde(flatten)]
    show: Show,
}

/// The label of a task's window (whether or not it is open).
pub(crate) fn label<R: Runtime>(app: &AppHandle<R>, id: TaskId) -> String {
    let windows = app.state::<Windows>();
    let adopted = lock(&windows.adopted);
    adopted
        .iter()
        .find(|(_, task)| **task == id)
        .map_or_else(|| format!("{TASK_PREFIX}{id}"), |(label, _)| label.clone())
}

/// The task the window with this label shows, if it is a task window showing one.
pub(crate) fn task_of<R: Runtime>(app: &AppHandle<R>, label: &str) -> Option<TaskId> {
    if let Some(task) = lock(&app.state::<Windows>().adopted).get(label) {
        return Some(*task);
    }
    label.strip_prefix(TASK_PREFIX)?.parse().ok().map(TaskId)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn title(task: &Task) -> String {
    format!("{} — Codewright", task.title)
}

/// Opens the task in its own window (a spare one if one is ready), or brings its window to the
/// front if it is already open.
pub(crate) async fn open_task_window<R: Runtime>(
    app: &AppHandle<R>,
    task: &Task,
    show: Show,
) -> tauri::Result<()> {
    let windows = app.state::<Windows>();
    let _opening = windows.opening.lock().await;
    // A window just closed is gone from the screen a moment before the app forgets it; focusing
    // it then would do nothing, and its label is not free yet: wait for it to be gone.
    let deadline = tokio::time::Instant::now() + CLOSING_WAIT;
    while let Some(window) = app.get_webview_window(&label(app, task.id)) {
        if window.is_visible().is_ok() {
            if show != Show::default() {
                window.emit_to(
                    EventTarget::webview_window(window.label()),
                    REVEAL_EVENT,
                    show,
                )?;
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
    let opened = match take_spare(app) {
        Some(window) => adopt(app, window, task, show),
        None => build(app, task, show).map(|_| ()),
    };
    // The next task opened gets a spare (made once this one has had the machine to itself).
    let later = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SPARE_AFTER_OPEN).await;
        prepare_spare(&later);
    });
    opened
}

/// Gives the ready spare `window` the task: it shows it as if it had been opened for it.
fn adopt<R: Runtime>(
    app: &AppHandle<R>,
    window: WebviewWindow<R>,
    task: &Task,
    show: Show,
) -> tauri::Result<()> {
    let label = window.label().to_string();
    let windows = app.state::<Windows>();
    lock(&windows.adopted).insert(label.clone(), task.id);
    let given = window.set_title(&title(task)).and_then(|()| {
        window.emit_to(
            EventTarget::webview_window(&label),
            ADOPT_EVENT,
            Adoption {
                task_id: task.id,
                show,
            },
        )
    });
    if let Err(e) = given {
        // Not given the task: it must not stand for it.
        lock(&windows.adopted).remove(&label);
        let _ = window.close();
        return Err(e);
    }
    window.show()?;
    window.set_focus()
}

/// A new window for the task, labelled `task-<id>`.
fn build<R: Runtime>(
    app: &AppHandle<R>,
    task: &Task,
    show: Show,
) -> tauri::Result<WebviewWindow<R>> {
    // Forget a spare that showed this task before: its window is gone.
    lock(&app.state::<Windows>().adopted).retain(|_, shown| *shown != task.id);
    let mut url = format!("task.html?id={}", task.id);
    if let Some(seq) = show.at {
        url.push_str(&format!("&at={seq}"));
    }
    if show.changes {
        url.push_str("&changes=1");
    }
    builder(app, format!("{TASK_PREFIX}{}", task.id), url)
        .title(title(task))
        .build()
}

/// What every task window is built with.
fn builder<R: Runtime>(
    app: &AppHandle<R>,
    label: String,
    url: String,
) -> WebviewWindowBuilder<'_, R, AppHandle<R>> {
    WebviewWindowBuilder::new(app, label, WebviewUrl::App(url.into()))
        .inner_size(880.0, 720.0)
        .min_inner_size(480.0, 360.0)
        // Images dropped on the composer reach the page (it attaches them, and refuses other drops).
        .disable_drag_drop_handler()
}

/// Opens a hidden spare task window, unless one exists, no other window is open (the app is
/// quitting) or the store could not be opened. Its page loads and then says it is ready
/// ([`spare_ready`]).
pub(crate) fn prepare_spare<R: Runtime>(app: &AppHandle<R>) {
    // Without a store there is no task to open: the windows show the error screen.
    if app.state::<crate::AppState>().startup_error().is_some() {
        return;
    }
    let windows = app.state::<Windows>();
    let label = {
        let mut spare = lock(&windows.spare);
        let others = app.webview_windows();
        if *spare != Spare::None || others.keys().all(|l| is_spare(&windows, l)) {
            return;
        }
        let label = format!(
            "{SPARE_PREFIX}{}",
            windows.made.fetch_add(1, Ordering::Relaxed)
        );
        *spare = Spare::Starting(label.clone());
        label
    };
    // Built without the lock held: building waits for the main thread, which may need the lock.
    let built = builder(app, label.clone(), "task.html".into())
        .title("Codewright")
        .visible(false)
        .focused(false)
        .build();
    match built {
        Err(e) => {
            eprintln!("codewright: cannot open a spare task window ({e}); tasks open without one");
            let mut spare = lock(&windows.spare);
            if *spare == Spare::Starting(label) {
                *spare = Spare::None;
            }
        }
        // The last window the user saw closed while it was being made: the app is quitting.
        Ok(window) if app.webview_windows().keys().all(|l| is_spare(&windows, l)) => {
            let _ = window.close();
        }
        Ok(_) => {}
    }
}

/// The spare window `label` has loaded and waits for a task.
pub(crate) fn spare_ready<R: Runtime>(app: &AppHandle<R>, label: &str) {
    let windows = app.state::<Windows>();
    let mut spare = lock(&windows.spare);
    if *spare == Spare::Starting(label.to_string()) {
        *spare = Spare::Ready(label.to_string());
    }
}

/// The ready spare window, taken (no other task is given it).
fn take_spare<R: Runtime>(app: &AppHandle<R>) -> Option<WebviewWindow<R>> {
    let windows = app.state::<Windows>();
    let mut spare = lock(&windows.spare);
    let Spare::Ready(label) = &*spare else {
        return None;
    };
    let window = app.get_webview_window(label);
    *spare = Spare::None;
    window
}

/// A window is gone: forget it; when only spare windows are left, close them, so that the app
/// quits as it does when its last window closes.
pub(crate) fn forget<R: Runtime>(app: &AppHandle<R>, gone: &str) {
    let windows = app.state::<Windows>();
    lock(&windows.adopted).remove(gone);
    {
        let mut spare = lock(&windows.spare);
        if matches!(&*spare, Spare::Starting(l) | Spare::Ready(l) if l == gone) {
            *spare = Spare::None;
        }
    }
    let left = app.webview_windows();
    if left.keys().all(|l| l == gone || is_spare(&windows, l)) {
        for (_, window) in left.into_iter().filter(|(l, _)| l != gone) {
            let _ = window.close();
        }
    }
}

/// Whether `label` is a spare window that has not been given a task.
fn is_spare(windows: &Windows, label: &str) -> bool {
    label.starts_with(SPARE_PREFIX) && !lock(&windows.adopted).contains_key(label)
}

/// How long opening a task waits for its closing window to be gone, and how often it looks.
const CLOSING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
const CLOSING_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How long after a task window opens the next spare is made, and after the app starts the
/// first: long enough for the window (or the main window) to have been painted.
const SPARE_AFTER_OPEN: std::time::Duration = std::time::Duration::from_secs(1);
pub(crate) const SPARE_AFTER_START: std::time::Duration = std::time::Duration::from_millis(1500);

pub(crate) fn retitle_task_window<R: Runtime>(app: &AppHandle<R>, task: &Task) {
    if let Some(window) = app.get_webview_window(&label(app, task.id)) {
        let _ = window.set_title(&title(task));
    }
}

pub(crate) fn close_task_window<R: Runtime>(app: &AppHandle<R>, id: TaskId) {
    if let Some(window) = app.get_webview_window(&label(app, id)) {
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
