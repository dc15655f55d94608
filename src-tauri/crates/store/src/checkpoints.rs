//! WAL checkpoints off a hot writer's path. SQLite copies the write-ahead log back into the
//! database (and fsyncs) every ~1,000 pages, inside whichever commit crosses the line: several
//! milliseconds, at random, in the middle of an agent's turn. [`Store::checkpoint_in_background`]
//! hands that work to a thread with its own connection.

use crate::{Result, Store, StoreError};
use rusqlite::{Connection, OpenFlags};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Keeps checkpointing in the background while it lives; dropping it stops the thread.
pub struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    runs: Arc<AtomicU64>,
}

impl Checkpointer {
    /// How many checkpoints it has run so far (failed ones included).
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Acquire)
    }
}

impl Store {
    /// Stops this connection from checkpointing as it commits, and starts a thread that
    /// checkpoints (PASSIVE: never waits for, nor blocks, readers and writers) every `every`.
    /// Other connections keep checkpointing as usual.
    pub fn checkpoint_in_background(&self, every: Duration) -> Result<Checkpointer> {
        let path = self.path.clone();
        let wrap = |e: rusqlite::Error| StoreError::from_open(&path, e);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(wrap)?;
        self.conn
            .pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(wrap)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let runs = Arc::new(AtomicU64::new(0));
        let counted = runs.clone();
        let thread = std::thread::Builder::new()
            .name("codewright-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    // A failed checkpoint (the disk is full, another process holds the lock) is
                    // tried again next time; the log only grows meanwhile.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    counted.fetch_add(1, Ordering::Release);
                }
            })
            .map_err(|e| StoreError::Invalid(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
            runs,
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
