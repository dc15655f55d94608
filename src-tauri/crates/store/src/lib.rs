//! Codewright's durable state in one SQLite file (`codewright.db` in the data dir).
//!
//! - Opening applies every pending migration ([`migrations`]) and never deletes or rewrites a file
//!   it cannot read: a corrupt or too-new database is reported, with its path, and left untouched.
//! - Several processes (the app, the CLI) may use the same file at once: WAL mode, a busy timeout,
//!   and single-statement writes keep "database is locked" from ever reaching the user.
//! - Every insert/update/delete lands in a change feed (written by triggers), which
//!   [`Store::events_since`] turns into [`StoreEvent`]s for every open window.

mod calls;
mod changes;
mod checkpoints;
mod error;
mod mcp;
mod messages;
pub mod migrations;
mod names;
mod paths;
mod projects;
mod settings;
mod tasks;
mod tools;

pub use calls::CallState;
pub use checkpoints::Checkpointer;
pub use error::StoreError;
pub use mcp::{McpServerRow, McpTransport};
pub use messages::{StreamingMessage, UsageEvent, FLUSH_BYTES, FLUSH_INTERVAL, RANK_LIMIT};
pub use paths::{default_data_dir, DB_FILE_NAME};
pub use settings::{ModelRow, ProviderRow};
pub use tools::PreImage;

use codewright_protocol::StoreEvent;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Result of every store operation.
pub type Result<T> = std::result::Result<T, StoreError>;

/// How long a writer waits for another process's write to finish before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection to the database. Not `Sync`: share it behind a mutex, or open one per thread.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database in the data folder `home`.
    pub fn open_in(home: &Path) -> Result<Store> {
        std::fs::create_dir_all(home).map_err(|source| StoreError::DataDir {
            path: home.to_path_buf(),
            source,
        })?;
        Store::open(&home.join(DB_FILE_NAME))
    }

    /// Opens (creating if needed) the database file at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        let wrap = |e: rusqlite::Error| StoreError::from_open(path, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(wrap)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(wrap)?;
        // The first statement that reads the file: a file that is not a database fails here,
        // before anything is written.
        conn.query_row("PRAGMA schema_version", [], |_| Ok(()))
            .map_err(wrap)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(wrap)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(wrap)?;
        migrations::migrate(&conn, path)?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        changes::prune(&store.conn).map_err(wrap)?;
        Ok(store)
    }

    /// The database file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The position of the newest change; pass it to [`Store::events_since`] to follow from now.
    pub fn change_cursor(&self) -> Result<i64> {
        changes::head(&self.conn).map_err(Into::into)
    }

    /// Events for every change after `cursor` (oldest first, one per changed record), and moves
    /// `cursor` past them. Cheap when nothing changed: one indexed lookup.
    pub fn events_since(&self, cursor: &mut i64) -> Result<Vec<StoreEvent>> {
        changes::events_since(self, cursor)
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
