//! Memory: notes the agent keeps across tasks, as Markdown files a person can read and edit —
//! the project's (`<project>/.codewright/memory.md`, which a team may commit) and the user's own
//! (`~/.codewright/memory.md`, for every project). Both go into the system prompt; the agent
//! changes them with `memory_write`, asked like any edit.

use crate::{ExtensionError, Places};
use std::path::PathBuf;

/// A memory file larger than this is cut in the prompt (the file itself is left whole).
pub const MAX_PROMPT: usize = 16 * 1024;

/// Whose memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// This project's, in the project folder.
    Project,
    /// The user's, for every project.
    User,
}

impl Scope {
    /// How the prompt and the tools name it.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Project => "project memory",
            Scope::User => "your memory (every project)",
        }
    }
}

/// Where a memory file is (`None`: the user's, when the home folder is unknown).
pub fn path(places: &Places, scope: Scope) -> Option<PathBuf> {
    match scope {
        Scope::Project => Some(places.project.join(".codewright/memory.md")),
        Scope::User => places
            .home
            .as_ref()
            .map(|h| h.join(".codewright/memory.md")),
    }
}

/// A memory file is read up to this; past it the file is refused (memory is a page of notes).
pub const MAX_FILE: u64 = 1024 * 1024;

/// The folder a memory file must stay inside: the project's (the user's own may lead anywhere).
pub fn root(places: &Places, scope: Scope) -> Option<&std::path::Path> {
    match scope {
        Scope::Project => Some(&places.project),
        Scope::User => places.home.as_ref().map(|_| std::path::Path::new("/")),
    }
}

/// A memory file's text; empty when it does not exist. It must be a regular file inside its
/// folder ([`crate::contained`]): a link out of the project is refused, never followed.
pub fn read(places: &Places, scope: Scope) -> Result<String, ExtensionError> {
    let (Some(path), Some(root)) = (path(places, scope), root(places, scope)) else {
        return Ok(String::new());
    };
    match crate::contained::read(root, &path, MAX_FILE) {
        Ok(Some(bytes)) if bytes.len() as u64 > MAX_FILE => Err(ExtensionError::Refused(format!(
            "{} is over {} KB; memory is read only up to that (trim it by hand)",
            path.display(),
            MAX_FILE / 1024
        ))),
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map_err(|_| ExtensionError::Refused(format!("{} is not text", path.display()))),
        Ok(None) => Ok(String::new()),
        Err(e) => Err(e.into()),
    }
}

/// What the system prompt says of the memory, and what it was made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InPrompt {
    /// Both files (each cut at 16 KB); `None` when both are empty.
    pub section: Option<String>,
    /// The memories that are in it.
    pub used: Vec<Scope>,
    /// Why a memory file that is there was not read (a link out, over its cap, not text).
    pub refused: Vec<String>,
}

/// What the system prompt says of the memory ([`InPrompt`]), each file read once.
pub fn prompt_section(places: &Places) -> InPrompt {
    let mut out = String::new();
    let mut in_prompt = InPrompt::default();
    for scope in [Scope::Project, Scope::User] {
        let text = match read(places, scope) {
            Ok(text) => text,
            Err(why) => {
                in_prompt.refused.push(why.to_string());
                continue;
            }
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        in_prompt.used.push(scope);
        let cut = match text.char_indices().nth(MAX_PROMPT) {
            Some((at, _)) => format!("{}\n[… cut; read it whole with memory_read]", &text[..at]),
            None => text.to_string(),
        };
        out.push_str(&format!("\n\n## {}\n\n{cut}", capitalized(scope.label())));
    }
    if !out.is_empty() {
        in_prompt.section = Some(format!("# Memory\n\nNotes kept across tasks (change them with memory_write when you learn something worth keeping).{out}"));
    }
    in_prompt
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_memories_go_into_the_prompt_and_a_missing_one_is_empty() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let places = Places {
            project: project.path().to_path_buf(),
            home: Some(home.path().to_path_buf()),
            cache: None,
            project_trusted: true,
        };
        assert_eq!(prompt_section(&places).section, None);
        assert_eq!(read(&places, Scope::User).unwrap(), "");
        std::fs::create_dir_all(home.path().join(".codewright")).unwrap();
        std::fs::write(home.path().join(".codewright/memory.md"), "Prefers tabs.\n").unwrap();
        assert_eq!(
            prompt_section(&places).section.unwrap(),
            "# Memory\n\nNotes kept across tasks (change them with memory_write when you learn something worth keeping).\n\n## Your memory (every project)\n\nPrefers tabs."
        );
        std::fs::create_dir_all(project.path().join(".codewright")).unwrap();
        std::fs::write(
            project.path().join(".codewright/memory.md"),
            "x".repeat(MAX_PROMPT + 10),
        )
        .unwrap();
        let section = prompt_section(&places).section.unwrap();
        assert!(
            section.contains("## Project memory\n\nxxx")
                && section.contains("[… cut; read it whole with memory_read]\n\n## Your memory")
        );
    }
}
