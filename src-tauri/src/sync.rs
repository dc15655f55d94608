//! Follows the store's change feed and pushes each change to every window as a [`STORE_EVENT`].
//! The feed records writes from any process, so a task added by the CLI appears in the open app
//! just like one added in another window. Task windows follow their task: renamed → new title,
//! deleted → closed.

use crate::{windows, worktrees, AppState, AGENT_EVENT, STORE_EVENT};
use codewright_host::feed::ChangeFeed;
use codewright_host::DB_FILE_NAME;
use codewright_protocol::{AgentEvent, RunOutcome, StoreEvent, TaskId};
use std::path::Path;
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use tauri::{AppHandle, Emitter, EventTarget, Manager, Runtime};

/// How often the feed is read while nothing is written (one indexed query, ~µs): any process's
/// write wakes the thread through a watch on the database's files, so this only catches what a
/// watch cannot see (a network file system) — or, without a watch, every write.
const POLL: Duration = Duration::from_secs(2);
const POLL_UNWATCHED: Duration = Duration::from_millis(250);
/// After a wake, the feed is read again and again for [`HOT_FOR`]: the watch sees a write a
/// moment before SQLite makes it visible (after syncing it, then updating the log's index), and
/// a process that writes once usually writes again. The reads come sooner first — 2, 4, 8 …
/// ms after the wake — then every [`HOT`].
const HOT: Duration = Duration::from_millis(50);
const HOT_FIRST: Duration = Duration::from_millis(2);
const HOT_FOR: Duration = Duration::from_millis(500);
/// How often runs left behind by a process that quit are looked for.
const SETTLE: Duration = Duration::from_secs(2);

/// Starts the sync thread, on its own connection. Does nothing if the store failed to open.
pub(crate) fn start<R: Runtime>(app: &AppHandle<R>) {
    let state = app.state::<AppState>();
    let Some(wake) = state.take_wake_receiver() else {
        return;
    };
    let Ok(host) = state.host() else {
        return;
    };
    // Watching before the feed starts: a write in between wakes the thread.
    let watch = watch_writes(state.home(), state.waker());
    let Ok(mut feed) = host.change_feed() else {
        return;
    };
    let idle = if watch.is_some() {
        POLL
    } else {
        POLL_UNWATCHED
    };
    let app = app.clone();
    std::thread::Builder::new()
        .name("codewright-sync".into())
        .spawn(move || {
            let _watch = watch; // watches as long as the thread reads
            let mut settled = Instant::now();
            let mut woke = Instant::now();
            loop {
                let since = woke.elapsed();
                let wait = if since < HOT_FOR {
                    since.clamp(HOT_FIRST, HOT)
                } else {
                    idle
                };
                let mut woken =
                    match wake.recv_timeout(wait.min(SETTLE.saturating_sub(settled.elapsed()))) {
                        Ok(()) => true,
                        Err(RecvTimeoutError::Timeout) => false,
                        Err(RecvTimeoutError::Disconnected) => return,
                    };
                // Every 2 s: runs another process left behind when it quit show as interrupted,
                // and those that were waiting for the user ask again (a process still quitting
                // when this one started held its tasks a moment longer); WebKit's real-time
                // threads are held to their limit again.
                if settled.elapsed() >= SETTLE {
                    settled = Instant::now();
                    crate::webkit::hold_real_time_runs();
                    if let Ok(host) = app.state::<AppState>().host() {
                        host.mark_interrupted();
                        let host = host.clone();
                        tauri::async_runtime::spawn(async move { host.resume_asking().await });
                    }
                }
                while wake.try_recv().is_ok() {
                    woken = true;
                }
                match feed.read() {
                    Ok(events) => {
                        // More may follow (a backlog is read a batch at a time).
                        woken |= !events.is_empty();
                        events
                            .into_iter()
                            .for_each(|event| deliver(&app, &feed, event))
                    }
                    Err(e) => eprintln!("codewright: cannot read the change feed: {e}"),
                }
                if woken {
                    woke = Instant::now();
                }
            }
        })
        .expect("cannot start the sync thread");
}

/// Wakes the sync thread whenever a process writes the store in `home`: SQLite appends each
/// commit to the database's write-ahead log, and a checkpoint writes the database itself. `None`
/// if the folder cannot be watched; the thread then polls.
fn watch_writes(home: &Path, wake: Sender<()>) -> Option<notify::RecommendedWatcher> {
    use notify::{EventKind, RecursiveMode, Watcher};
    let log = format!("{DB_FILE_NAME}-wal");
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // An error or lost events (the queue overflowed): something may have been written.
        let Ok(event) = event else {
            let _ = wake.send(());
            return;
        };
        let written = event.need_rescan()
            || !matches!(event.kind, EventKind::Access(_))
                && event.paths.iter().any(|path| {
                    path.file_name()
                        .is_some_and(|name| name == DB_FILE_NAME || name == log.as_str())
                });
        if written {
            let _ = wake.send(());
        }
    })
    .ok()?;
    watcher.watch(home, RecursiveMode::NonRecursive).ok()?;
    Some(watcher)
}

/// The main window gets every change; a task window only the changes to its own task. A task
/// that ended while its window is open has been seen: it is marked read before anyone is told.
fn deliver<R: Runtime>(app: &AppHandle<R>, feed: &ChangeFeed, mut event: StoreEvent) {
    // A sub-agent's task is its parent's business: it is listed nowhere and has no window.
    if let StoreEvent::TaskUpserted { task } = &event {
        if task.parent.is_some() {
            return;
        }
    }
    // A worktree task's row says where its branch stands: a finished message (a call's result,
    // the run's answer) or a change of the task may come with a change of its files.
    match &event {
        StoreEvent::MessageUpserted { message } if message.complete => {
            app.state::<worktrees::Standings>().touched(message.task_id)
        }
        StoreEvent::TaskUpserted { task } if task.worktree.is_some() => {
            app.state::<worktrees::Standings>().touched(task.id)
        }
        _ => {}
    }
    if let StoreEvent::TaskUpserted { task } = &mut event {
        if task.unread
            && app
                .get_webview_window(&windows::label(app, task.id))
                .is_some()
            && feed.mark_task_read(task.id).is_ok()
        {
            task.unread = false;
        }
    }
    let event = &event;
    let own_window = match event {
        StoreEvent::TaskUpserted { task } => Some(windows::label(app, task.id)),
        StoreEvent::TaskDeleted { task_id, .. } => Some(windows::label(app, *task_id)),
        // A conversation goes only to its own window.
        StoreEvent::MessageUpserted { message } => {
            // An answer this app is streaming reaches its window as deltas already; its stored
            // copy (the whole text so far, every 250 ms) would only cost the window time.
            let streaming_here = !message.complete
                && app
                    .state::<AppState>()
                    .host()
                    .is_ok_and(|host| host.running(message.task_id).is_some());
            if streaming_here {
                return;
            }
            let own = windows::label(app, message.task_id);
            let _ = app.emit_filter(STORE_EVENT, event, |target| {
                label_of(target) == Some(own.as_str())
            });
            return;
        }
        StoreEvent::Resync => None,
        _ => Some(String::new()),
    };
    let _ = app.emit_filter(STORE_EVENT, event, |target| {
        let Some(label) = label_of(target) else {
            return true;
        };
        // `None`: everyone (resync); otherwise the main window and the task's own window.
        label == "main" || own_window.as_deref().is_none_or(|own| own == label)
    });
    match event {
        StoreEvent::TaskUpserted { task } => windows::retitle_task_window(app, task),
        StoreEvent::TaskDeleted { task_id, .. } => windows::close_task_window(app, *task_id),
        _ => {}
    }
}

fn label_of(target: &EventTarget) -> Option<&str> {
    match target {
        EventTarget::WebviewWindow { label }
        | EventTarget::Webview { label }
        | EventTarget::Window { label } => Some(label),
        _ => None,
    }
}

/// Forwards every agent event of this app's runs to its task's window (the [`AGENT_EVENT`]),
/// wakes the sync thread when the run wrote something the feed carries, and brings a window to
/// the front (and asks for attention) when an approval or a question waits in it. Tasks whose
/// run ended while the user was asked something are continued, so they ask again.
pub(crate) fn forward_agent_events<R: Runtime>(app: &AppHandle<R>) {
    let state = app.state::<AppState>();
    let Ok(host) = state.host() else {
        return;
    };
    let mut events = host.subscribe(None);
    // Runs that ended while an approval or question waited (a quit, a crash) ask it again (and
    // every 2 s after, see `start`).
    let resumer = host.clone();
    tauri::async_runtime::spawn(async move { resumer.resume_asking().await });
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        while let Some(event) = events.recv().await {
            let label = windows::label(&app, event.task_id());
            let _ = app.emit_to(
                EventTarget::webview_window(label.clone()),
                AGENT_EVENT,
                &event,
            );
            match &event {
                // Deltas are carried by the events themselves; the stored rows follow.
                AgentEvent::TextDelta { .. }
                | AgentEvent::ThinkingDelta { .. }
                | AgentEvent::ToolCallArguments { .. }
                | AgentEvent::ToolProgress { .. } => {}
                AgentEvent::ApprovalRequested { request } => {
                    let state = app.state::<AppState>();
                    state.changed();
                    let body = format!(
                        "{}: {}",
                        task_title(&state, event.task_id()),
                        request.summary
                    );
                    let notify = notifications(&state).notify_approval;
                    windows::ask_attention(&app, &label, notify, "Approval needed", &body);
                }
                AgentEvent::QuestionAsked { question } => {
                    let state = app.state::<AppState>();
                    state.changed();
                    let body = format!(
                        "{}: {}",
                        task_title(&state, event.task_id()),
                        question.question
                    );
                    let notify = notifications(&state).notify_approval;
                    windows::ask_attention(&app, &label, notify, "The agent asks", &body);
                }
                AgentEvent::RunFinished { outcome, work, .. } => {
                    let state = app.state::<AppState>();
                    state.changed();
                    // A sub-agent's run is its parent's business: its end is not announced.
                    let sub_agent = state
                        .host()
                        .is_ok_and(|h| h.task(event.task_id()).is_ok_and(|t| t.parent.is_some()));
                    if sub_agent {
                        continue;
                    }
                    let wanted = notifications(&state);
                    let title = task_title(&state, event.task_id());
                    match outcome {
                        // Ended, but a check the message named still fails: not "finished".
                        RunOutcome::Done if wanted.notify_finished && !work.failing.is_empty() => {
                            let body =
                                format!("{title}: `{}` still fails", work.failing.join("`, `"));
                            windows::tell(&app, &label, "Task not done", &body)
                        }
                        RunOutcome::Done if wanted.notify_finished => {
                            windows::tell(&app, &label, "Task finished", &title)
                        }
                        RunOutcome::Failed if wanted.notify_failed => {
                            windows::tell(&app, &label, "Task failed", &title)
                        }
                        _ => {}
                    }
                }
                _ => app.state::<AppState>().changed(),
            }
        }
    });
}

/// Which notifications the user wants (all, when the settings cannot be read).
fn notifications(state: &AppState) -> codewright_host::settings::AppSettings {
    state
        .host()
        .map(|host| host.app_settings())
        .unwrap_or_default()
}

/// A task's title, for a notification ("a task" when it cannot be read).
fn task_title(state: &AppState, task: TaskId) -> String {
    state
        .host()
        .ok()
        .and_then(|host| host.task(task).ok())
        .map_or_else(|| "a task".to_string(), |t| t.title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_store::Store;

    /// Another process's write wakes the sync thread at once, with no poll: the app's own
    /// connection is open (as it is while the app runs), another one writes.
    #[test]
    fn a_write_by_another_connection_wakes_the_watch() {
        let home = tempfile::tempdir().unwrap();
        let app = Store::open_in(home.path()).unwrap();
        let mut cursor = app.change_cursor().unwrap();
        let (wake, woken) = std::sync::mpsc::channel();
        let _watch = watch_writes(home.path(), wake).expect("the data folder is watched");

        let other = Store::open_in(home.path()).unwrap();
        other.add_project(home.path(), Some("written")).unwrap();
        woken
            .recv_timeout(Duration::from_secs(30))
            .expect("no wake after another connection wrote");
        let events = app.events_since(&mut cursor).unwrap();
        assert!(
            matches!(&events[..], [StoreEvent::ProjectUpserted { project }] if project.name == "written"),
            "{events:?}"
        );
    }
}
