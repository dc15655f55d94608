//! Files a message names, read for the model before its first request, as aider does: a small
//! model that is shown the stub, the tests and the instructions writes the code; one that must
//! first call `read_file` often never does (issue 34). The reads are ordinary `read_file` calls
//! of the run, made by Codewright: shown in the task like the model's own, through the same
//! policy, and counted as the run's reads.

use codewright_extensions::contained;
use std::path::Path;

/// The tool that reads them.
pub const READ_FILE: &str = "read_file";
/// At most this many files are read for one message.
pub const MAX_FILES: usize = 4;
/// A file larger than this (bytes) is left for the model to read in parts.
pub const MAX_BYTES: u64 = 48 * 1024;

/// The project files `text` names, in the order named, each once: `@path`, or a word that is the
/// path of a regular file inside `root` (`leap.py`, `` `src/lib.rs` ``, "INSTRUCTIONS.md").
/// A word counts only when it looks like a file (it has a dot or a slash), so "the tests" or
/// "main" never pull in a file named so. Hidden files and folders, links out of the project and large files
/// are never named here.
pub fn named_files(root: &Path, text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ',' | ';' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '<' | '>'
            )
    }) {
        let word = word.strip_prefix('@').unwrap_or(word);
        // Sentence punctuation after a name ("see leap.py.") is not part of it.
        let word = word.trim_end_matches(['.', ':', '!', '?']);
        let word = word.strip_prefix("./").unwrap_or(word);
        if word.is_empty()
            || !(word.contains('.') || word.contains('/'))
            || word.starts_with('/')
            || word.contains("..")
            || word.split('/').any(|part| part.starts_with('.'))
            || found.iter().any(|f| f == word)
        {
            continue;
        }
        let path = root.join(word);
        if !contained::is_file_inside(root, &path) {
            continue;
        }
        if std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_BYTES) {
            found.push(word.to_string());
            if found.len() == MAX_FILES {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("leap.py"),
            "def leap_year(year):\n    pass\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("leap_test.py"), "import unittest\n").unwrap();
        std::fs::write(dir.path().join("INSTRUCTIONS.md"), "# Leap\n").unwrap();
        std::fs::write(dir.path().join("main"), "not named by a plain word\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
        dir
    }

    #[test]
    fn the_files_a_prompt_names_are_found_in_order_once() {
        let dir = project();
        let prompt =
            "Implement the stub in leap.py so that the tests in leap_test.py pass. The task \
                      is described in INSTRUCTIONS.md. Run the tests with `python3 -m pytest -q`; \
                      see also @src/lib.rs, (leap.py) and `main`.";
        assert_eq!(
            named_files(dir.path(), prompt),
            ["leap.py", "leap_test.py", "INSTRUCTIONS.md", "src/lib.rs"]
        );
    }

    #[test]
    fn names_that_are_not_files_of_the_project_are_not_read() {
        let dir = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), dir.path().join("key.txt"))
            .unwrap();
        std::fs::write(
            dir.path().join("big.txt"),
            vec![b'a'; MAX_BYTES as usize + 1],
        )
        .unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]").unwrap();
        let abs = outside.path().join("id_rsa").display().to_string();
        let prompt = format!(
            "read key.txt, big.txt, .git/config, ../leap.py, {abs}, missing.py, src and src/"
        );
        assert!(named_files(dir.path(), &prompt).is_empty());
    }

    #[test]
    fn at_most_a_few_files_are_read_for_one_message() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..10).map(|i| format!("f{i}.txt")).collect();
        for n in &names {
            std::fs::write(dir.path().join(n), "x").unwrap();
        }
        assert_eq!(named_files(dir.path(), &names.join(" ")).len(), MAX_FILES);
    }
}
