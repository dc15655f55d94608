use rusqlite::ErrorCode;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in the store, each with a message that says what happened and
/// what to do. The `Display` text is meant to be shown to the user as is.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot use the data folder {}: {source}. Make sure it is a folder you can write to, or point CODEWRIGHT_HOME (or --home) at another one.", path.display())]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot open the database {}: {reason}. Make sure the file and its folder are writable, or point CODEWRIGHT_HOME (or --home) at another folder.", path.display())]
    CannotOpen { path: PathBuf, reason: String },

    #[error("the database {} is not a readable Codewright database (it may be corrupt); it was left untouched. Move it aside (for example rename it to codewright.db.bak) to start with an empty one, or restore it from a backup.", path.display())]
    Corrupt { path: PathBuf },

    #[error("the database {} was written by a newer Codewright (schema version {found}; this build knows up to {supported}). Update Codewright, or use another data folder.", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("{what} {id} does not exist (it may have been removed)")]
    NotFound { what: &'static str, id: i64 },

    #[error("{0}")]
    Invalid(String),

    #[error("the folder {} does not exist", path.display())]
    PathNotFound { path: PathBuf },

    #[error("{} is a file, not a folder; choose the folder that contains it", path.display())]
    NotADirectory { path: PathBuf },

    #[error("cannot read {}: {source}", path.display())]
    PathUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("the folder {path} is already a project (\"{name}\")")]
    AlreadyAdded { path: String, name: String },

    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// A stable, machine-readable name for the kind of error (the UI branches on it).
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::DataDir { .. } | StoreError::CannotOpen { .. } => "dataDir",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::TooNew { .. } => "tooNew",
            StoreError::NotFound { .. } => "notFound",
            StoreError::Invalid(_) => "invalid",
            StoreError::PathNotFound { .. }
            | StoreError::NotADirectory { .. }
            | StoreError::PathUnreadable { .. } => "badPath",
            StoreError::AlreadyAdded { .. } => "alreadyAdded",
            StoreError::Sqlite(_) => "database",
        }
    }

    /// True for errors that make the whole store unusable (shown as an error screen, not a toast).
    pub fn is_fatal(&self) -> bool {
        matches!(self.kind(), "dataDir" | "corrupt" | "tooNew")
    }

    /// Classifies an error met while opening or migrating the file at `path`.
    pub(crate) fn from_open(path: &Path, e: rusqlite::Error) -> StoreError {
        let path = path.to_path_buf();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::Corrupt { path }
            }
            // Whatever else goes wrong while opening, the user needs the path and a way out.
            _ => StoreError::CannotOpen {
                path,
                reason: e.to_string(),
            },
        }
    }
}
