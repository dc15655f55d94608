//! What the shell keeps between commands: the data folder and the store (or why it failed to open).

use crate::commands::CommandError;
use codewright_store::{default_data_dir, Store};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, MutexGuard};

/// Shared state of the running app.
pub struct AppState {
    home: PathBuf,
    store: Result<Mutex<Store>, CommandError>,
    /// Wakes the sync thread right after a write, so windows update without waiting for a poll.
    wake: Sender<()>,
    wake_rx: Mutex<Option<Receiver<()>>>,
}

impl AppState {
    /// Opens the store in `home`. A failure is kept, not raised: the windows show it on an error
    /// screen with the path and what to do.
    pub fn open(home: &Path) -> AppState {
        let store = Store::open_in(home)
            .map(Mutex::new)
            .map_err(CommandError::from);
        let (wake, wake_rx) = channel();
        AppState {
            home: home.to_path_buf(),
            store,
            wake,
            wake_rx: Mutex::new(Some(wake_rx)),
        }
    }

    /// Opens the store in the default data folder (`CODEWRIGHT_HOME` or the XDG data dir).
    pub fn open_default() -> AppState {
        let home = default_data_dir().unwrap_or_else(|| PathBuf::from(".codewright"));
        AppState::open(&home)
    }

    /// The data folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Why the store could not be opened, if it could not.
    pub fn startup_error(&self) -> Option<&CommandError> {
        self.store.as_ref().err()
    }

    /// The store, or the error that kept it from opening.
    pub fn store(&self) -> Result<MutexGuard<'_, Store>, CommandError> {
        match &self.store {
            Ok(store) => Ok(store
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())),
            Err(e) => Err(e.clone()),
        }
    }

    /// Tells the sync thread that this process just wrote.
    pub(crate) fn changed(&self) {
        let _ = self.wake.send(());
    }

    /// Hands the wake-up receiver to the sync thread (once).
    pub(crate) fn take_wake_receiver(&self) -> Option<Receiver<()>> {
        self.wake_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}
