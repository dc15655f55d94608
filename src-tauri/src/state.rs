//! What the shell keeps between commands: the data folder and the host (or why the data could not
//! be opened).

use crate::error::CommandError;
use codewright_host::default_data_dir;
use codewright_host::Host;
use codewright_protocol::ErrorKind;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shared state of the running app.
pub struct AppState {
    home: PathBuf,
    /// The one door into the engine (the same host `codewright-cli` uses); or why the data could
    /// not be opened.
    host: Result<Host, CommandError>,
    /// Wakes the sync thread right after a write, so windows update without waiting for a poll.
    wake: Sender<()>,
    wake_rx: Mutex<Option<Receiver<()>>>,
    /// Each project's file list for the composer's `@` picker, with when it was read.
    files: Mutex<HashMap<PathBuf, FileList>>,
    /// What was found wrong with the tasks' worktrees at start, and repaired (the main window
    /// says it once).
    repaired: Vec<String>,
}

/// A project's files and when they were listed.
type FileList = (Instant, Arc<Vec<String>>);

/// How long a project's file list is reused while the user types after `@`.
const FILES_FRESH: Duration = Duration::from_secs(5);

impl AppState {
    /// Opens the store in `home`. A failure is kept, not raised: the windows show it on an error
    /// screen with the path and what to do.
    pub fn open(home: &Path) -> AppState {
        AppState::with(home, Host::open(home, None).map_err(CommandError::from))
    }

    fn with(home: &Path, host: Result<Host, CommandError>) -> AppState {
        let (wake, wake_rx) = channel();
        let repaired = host
            .as_ref()
            .map(Host::repair_worktrees)
            .unwrap_or_default();
        AppState {
            home: home.to_path_buf(),
            host,
            wake,
            wake_rx: Mutex::new(Some(wake_rx)),
            files: Mutex::new(HashMap::new()),
            repaired,
        }
    }

    /// What was repaired in the tasks' worktrees at start, in words for the user.
    pub fn repaired(&self) -> &[String] {
        &self.repaired
    }

    /// Opens the store in the data folder given by `--home DIR` on the command line, else
    /// `CODEWRIGHT_HOME`, else the XDG data dir.
    pub fn open_default() -> AppState {
        let args: Vec<String> = std::env::args().collect();
        let from_args = args
            .iter()
            .position(|a| a == "--home")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from);
        match from_args.or_else(default_data_dir) {
            Some(home) => AppState::open(&home),
            None => AppState::with(
                Path::new(""),
                Err(CommandError {
                    kind: ErrorKind::DataDir,
                    message: "cannot find a home folder to keep Codewright's data in; set CODEWRIGHT_HOME or start Codewright with --home DIR".into(),
                    fatal: true,
                    saved: false,
                }),
            ),
        }
    }

    /// The data folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Why the store could not be opened, if it could not.
    pub fn startup_error(&self) -> Option<&CommandError> {
        self.host.as_ref().err()
    }

    /// The host that runs tasks, or the error that kept the store from opening.
    pub fn host(&self) -> Result<&Host, CommandError> {
        self.host.as_ref().map_err(Clone::clone)
    }

    /// The files of the project in `root` (see `codewright_tools::files`), read again when the
    /// list is older than a few seconds. Blocks while it walks the folder.
    pub(crate) fn project_files(&self, root: &Path) -> Arc<Vec<String>> {
        let files = || self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((read, list)) = files().get(root) {
            if read.elapsed() < FILES_FRESH {
                return list.clone();
            }
        }
        // Walked without the lock: one project's slow folder does not hold up another window.
        let list = Arc::new(codewright_host::files::project_files(root));
        let mut files = files();
        files.retain(|_, (read, _)| read.elapsed() < FILES_FRESH);
        files.insert(root.to_path_buf(), (Instant::now(), list.clone()));
        list
    }

    /// Tells the sync thread that this process just wrote.
    pub(crate) fn changed(&self) {
        let _ = self.wake.send(());
    }

    /// Another way to wake the sync thread (for a watch on the store's files).
    pub(crate) fn waker(&self) -> Sender<()> {
        self.wake.clone()
    }

    /// Hands the wake-up receiver to the sync thread (once).
    pub(crate) fn take_wake_receiver(&self) -> Option<Receiver<()>> {
        self.wake_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}
