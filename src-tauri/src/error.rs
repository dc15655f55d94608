//! An error as a window sees it, from whatever failed: the host, the window system.

use codewright_host::HostError;
use codewright_protocol::ErrorKind;
use serde::Serialize;

/// An error as a window sees it: a stable `kind` to branch on and a `message` to show as is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    /// True when the store is unusable and the window should show the error screen.
    pub fatal: bool,
    /// True when the message being sent is stored in the task despite the error.
    pub saved: bool,
}

impl From<HostError> for CommandError {
    fn from(e: HostError) -> Self {
        CommandError {
            kind: e.kind,
            message: e.message,
            fatal: e.kind.is_fatal(),
            saved: e.saved,
        }
    }
}

impl From<tauri::Error> for CommandError {
    fn from(e: tauri::Error) -> Self {
        CommandError {
            kind: ErrorKind::Window,
            message: format!("the window system failed: {e}"),
            fatal: false,
            saved: false,
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, CommandError>;

/// Opens `target` (a web address, a file) with the system's default app, without waiting.
pub(crate) fn system_open(target: &std::ffi::OsStr) -> std::io::Result<()> {
    std::process::Command::new("xdg-open")
        .arg(target)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
}
