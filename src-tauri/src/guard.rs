//! One guard in front of every command: a task window acts only on its own task. Whatever task
//! id a task window sends (`taskId`, or `id` for the commands on task records) must be its own,
//! or the command is refused before it runs. Which commands a window may call at all is set by
//! its capability in tauri.conf.json.

use crate::error::CommandError;
use crate::windows;
use codewright_protocol::ErrorKind;
use tauri::ipc::{Invoke, InvokeBody};
use tauri::{Manager, Runtime};

/// Commands whose `id` argument is a task id.
const TASK_RECORD_COMMANDS: &[&str] = &["get_task", "rename_task", "delete_task", "open_task"];

/// `Err` when a task window names another task than its own.
pub(crate) fn check<R: Runtime>(invoke: &Invoke<R>) -> Result<(), CommandError> {
    let webview = invoke.message.webview();
    let label = webview.label();
    if !label.starts_with(windows::TASK_PREFIX) {
        return Ok(());
    }
    // A spare window not yet given a task acts on none.
    let own = windows::task_of(webview.app_handle(), label).map_or(0, |t| t.0);
    let InvokeBody::Json(args) = invoke.message.payload() else {
        return Ok(());
    };
    let command = invoke.message.command();
    // Every task id it names: `taskId`, and `id` where that is a task's.
    let mut named = vec![args.get("taskId")];
    if TASK_RECORD_COMMANDS.contains(&command) {
        named.push(args.get("id"));
    }
    match named
        .into_iter()
        .flatten()
        .find(|id| id.as_i64() != Some(own))
    {
        Some(id) => Err(CommandError {
            kind: ErrorKind::Denied,
            message: format!("this window shows task {own} and cannot act on task {id}"),
            fatal: false,
            saved: false,
        }),
        None => Ok(()),
    }
}
