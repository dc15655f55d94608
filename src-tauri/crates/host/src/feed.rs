//! The data's change feed: what changed, in this process or another (the CLI, a second app
//! window), for a front end to pass on to its views.

use crate::{Host, HostError};
use codewright_protocol::{StoreEvent, TaskId};
use codewright_store::Store;

/// The change feed on a connection of its own: reading it never waits behind a run's writes
/// through the host.
pub struct ChangeFeed {
    store: Store,
    cursor: i64,
}

impl Host {
    /// The change feed from now on.
    pub fn change_feed(&self) -> Result<ChangeFeed, HostError> {
        let store = Store::open_in(&self.inner.home)?;
        let cursor = store.change_cursor()?;
        Ok(ChangeFeed { store, cursor })
    }
}

impl ChangeFeed {
    /// What changed since the last read (a long backlog comes a batch at a time).
    pub fn read(&mut self) -> Result<Vec<StoreEvent>, HostError> {
        Ok(self.store.events_since(&mut self.cursor)?)
    }

    /// The user has seen the task's latest result (its window is open).
    pub fn mark_task_read(&self, task: TaskId) -> Result<(), HostError> {
        Ok(self.store.mark_task_read(task)?)
    }
}
