//! The memory files as a person sees and edits them (`/memory` in the task window): the task's
//! project's and the user's own. A person's edit is theirs: saved as typed, asked nothing.

use crate::HostError;
use codewright_extensions::memory;
pub use codewright_extensions::memory::Scope;
use codewright_extensions::Places;
use codewright_protocol::{ErrorKind, TaskId};
use codewright_store::Store;
use serde::Serialize;
use std::path::PathBuf;

/// One memory file and its text (empty when it does not exist yet).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFile {
    pub scope: Scope,
    pub path: PathBuf,
    pub text: String,
}

fn places(store: &Store, task: TaskId) -> Result<Places, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    crate::places(store, t.project_id)
}

/// The task's project memory and the user's, in that order (the user's is left out when the
/// home folder is unknown).
pub fn memory_files(store: &Store, task: TaskId) -> Result<Vec<MemoryFile>, HostError> {
    let places = places(store, task)?;
    let mut out = Vec::new();
    for scope in [Scope::Project, Scope::User] {
        let Some(path) = memory::path(&places, scope) else {
            continue;
        };
        let text = memory::read(&places, scope).map_err(HostError::from)?;
        out.push(MemoryFile { scope, path, text });
    }
    Ok(out)
}

/// Saves a memory file as the user typed it (its folder is made if needed; written whole or
/// not at all).
pub fn save_memory(
    store: &Store,
    task: TaskId,
    scope: Scope,
    text: &str,
) -> Result<MemoryFile, HostError> {
    let places = places(store, task)?;
    let path = memory::path(&places, scope).ok_or_else(|| {
        HostError::new(
            ErrorKind::BadInput,
            "your home folder is unknown, so your memory has no place; use the project's",
        )
    })?;
    // (Never through a link out of its place: a repository's `.codewright` leading elsewhere.)
    if let Some(root) = memory::root(&places, scope) {
        codewright_extensions::contained::check_writable(root, &path)
            .map_err(|e| HostError::new(ErrorKind::BadInput, format!("{e}; it was not saved")))?;
    }
    codewright_extensions::write_whole(&path, text.as_bytes()).map_err(|e| {
        HostError::new(
            ErrorKind::BadInput,
            format!("{} could not be saved: {e}", path.display()),
        )
    })?;
    Ok(MemoryFile {
        scope,
        path,
        text: text.to_string(),
    })
}

impl crate::Host {
    /// The memory files a task's runs read (the project's and the user's).
    pub fn memory_files(&self, task: TaskId) -> Result<Vec<MemoryFile>, HostError> {
        memory_files(&self.inner.store(), task)
    }

    pub fn save_memory(
        &self,
        task: TaskId,
        scope: Scope,
        text: &str,
    ) -> Result<MemoryFile, HostError> {
        save_memory(&self.inner.store(), task, scope, text)
    }
}
