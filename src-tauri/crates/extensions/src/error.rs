//! Why a user's file (a skill's, an agent's, a task file, the memory) could not be used: each
//! carries the message for the user, which names the file and says what to do.

/// Why an extension's file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionError {
    /// Not there: no agent of that name, no such file in a skill's folder, a file gone.
    #[error("{0}")]
    NotFound(String),
    /// Not read or written on purpose: a path leading out of its folder, not a regular file,
    /// too large, not text.
    #[error("{0}")]
    Refused(String),
    /// Its content cannot be used as its format asks (front matter, a status that cannot be
    /// written into it).
    #[error("{0}")]
    Invalid(String),
    /// It could not be read or written.
    #[error("{0}")]
    File(String),
}

impl From<crate::contained::Refusal> for ExtensionError {
    fn from(e: crate::contained::Refusal) -> ExtensionError {
        match e {
            crate::contained::Refusal::Unreadable { .. } => ExtensionError::File(e.to_string()),
            _ => ExtensionError::Refused(e.to_string()),
        }
    }
}
