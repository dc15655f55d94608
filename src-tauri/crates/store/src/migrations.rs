//! Versioned schema migrations. `PRAGMA user_version` holds how many have been applied; opening a
//! store applies the rest, each in its own transaction, so a database from any earlier version
//! (or an empty file) ends up at [`LATEST`].

use crate::{Result, StoreError};
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// The migrations, in order. Never edit one that has shipped; append a new one.
pub const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_messages.sql"),
    include_str!("../migrations/0003_providers.sql"),
    include_str!("../migrations/0004_tools.sql"),
    include_str!("../migrations/0005_compaction.sql"),
    include_str!("../migrations/0006_mcp.sql"),
    include_str!("../migrations/0007_files_seen.sql"),
    include_str!("../migrations/0008_project_settings.sql"),
    include_str!("../migrations/0009_message_changes.sql"),
    include_str!("../migrations/0010_calls.sql"),
    include_str!("../migrations/0011_provider_timeouts.sql"),
    include_str!("../migrations/0012_unread.sql"),
    include_str!("../migrations/0013_mcp_call_timeout.sql"),
    include_str!("../migrations/0014_message_error.sql"),
    include_str!("../migrations/0015_model_sampling.sql"),
    include_str!("../migrations/0016_queued_messages.sql"),
    include_str!("../migrations/0017_subagent_tasks.sql"),
    include_str!("../migrations/0018_fts_of_long_streams.sql"),
    include_str!("../migrations/0019_status_words.sql"),
    include_str!("../migrations/0020_task_worktrees.sql"),
    include_str!("../migrations/0021_model_constrained.sql"),
    include_str!("../migrations/0022_checkpoint_reverted.sql"),
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// The schema version of the database behind `conn`.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Brings the database at `path` up to [`LATEST`]. Safe when several processes open it at once:
/// the version is re-read inside each write transaction.
pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let wrap = |e| StoreError::from_open(path, e);
    loop {
        let found = version(conn).map_err(wrap)?;
        if found > LATEST {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                supported: LATEST,
            });
        }
        if found == LATEST {
            return Ok(());
        }
        apply_next(conn).map_err(wrap)?;
    }
}

/// Applies the single migration after the current version, if still needed once the write lock is
/// held. Public so tests can build databases at every earlier version.
pub fn apply_next(conn: &Connection) -> rusqlite::Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let current = version(&tx)?;
    if current < LATEST {
        tx.execute_batch(MIGRATIONS[current as usize])?;
        tx.pragma_update(None, "user_version", current + 1)?;
    }
    tx.commit()
}
