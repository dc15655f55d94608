use std::path::PathBuf;

/// The database's file name inside the data folder.
pub const DB_FILE_NAME: &str = "codewright.db";

/// The data folder: `$CODEWRIGHT_HOME` if set, else the XDG data dir's `codewright/`
/// (`~/.local/share/codewright` on Linux). `None` only when no home directory can be found.
pub fn default_data_dir() -> Option<PathBuf> {
    match std::env::var_os("CODEWRIGHT_HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => dirs::data_dir().map(|dir| dir.join("codewright")),
    }
}
