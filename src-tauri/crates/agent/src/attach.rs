//! Files a message names, read for the model before its first request, as aider does: a small
//! model that is shown the stub, the tests and the instructions writes the code; one that must
//! first call `read_file` often never does (issue 34). The reads are ordinary `read_file` calls
//! of the run, made by Codewright: shown in the task like the model's own, through the same
//! policy, and counted as the run's reads.

use codewright_extensions::contained;
use codewright_protocol::{Message, Part, Role, ToolContent};
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

/// `messages` with the files read for a message (an answer of nothing but `read_file` calls
/// right after it, and their results) shown whole in that message instead, as aider shows them:
/// each file's path on a line by itself, then its text, without the read's line numbers, in a
/// fenced block. For a small model, which writes better code from files in the task than from
/// tool results (recorded with Qwen2.5-Coder-1.5B: it copied the line numbers and the
/// `<tool_response>` tags into its answers). What the task stores is unchanged.
pub fn shown_in_message(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        let folded = match messages.get(i + 1..i + 3) {
            Some([reads, results]) if message.role == Role::User => {
                files_read(reads, results).map(|files| {
                    let mut message = message.clone();
                    match message.parts.iter_mut().rev().find_map(|p| match p {
                        Part::Text { text } => Some(text),
                        _ => None,
                    }) {
                        Some(text) => text.push_str(&files),
                        None => message.parts.push(Part::Text { text: files }),
                    }
                    message
                })
            }
            _ => None,
        };
        match folded {
            Some(message) => {
                out.push(message);
                i += 3;
            }
            None => {
                out.push(message.clone());
                i += 1;
            }
        }
    }
    out
}

/// The files `reads` (an answer of nothing but `read_file` calls) read, as [`shown_in_message`]
/// shows them, from `results` (theirs, one each); `None` when they are not such a pair.
fn files_read(reads: &Message, results: &Message) -> Option<String> {
    if reads.role != Role::Assistant || results.role != Role::Tool || reads.parts.is_empty() {
        return None;
    }
    let mut shown = String::new();
    for part in &reads.parts {
        let Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } = part
        else {
            return None;
        };
        if name != READ_FILE {
            return None;
        }
        let path = serde_json::from_str::<serde_json::Value>(arguments)
            .ok()?
            .get("path")?
            .as_str()?
            .to_string();
        let (content, is_error) = results.parts.iter().find_map(|p| match p {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } if call_id == id => Some((content, *is_error)),
            _ => None,
        })?;
        let text = ToolContent::joined_text(content);
        if is_error {
            shown.push_str(&format!(
                "\n\n{path} could not be read: {}",
                text.trim_end()
            ));
            continue;
        }
        // The numbered lines are the file; any other line is a note of the read's.
        let (mut body, mut notes) = (String::new(), String::new());
        for line in text.lines() {
            match line.trim_start().split_once('\t') {
                Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    body.push_str(rest);
                    body.push('\n');
                }
                _ => {
                    notes.push_str(line);
                    notes.push('\n');
                }
            }
        }
        let fence = "`".repeat(longest_backticks(&body).max(2) + 1);
        let language = path.rsplit_once('.').map_or("", |(_, ext)| match ext {
            "py" => "python",
            "rs" => "rust",
            "js" | "mjs" => "javascript",
            "ts" => "typescript",
            "md" => "markdown",
            other => other,
        });
        shown.push_str(&format!("\n\n{path}\n{fence}{language}\n{body}{fence}"));
        if !notes.is_empty() {
            shown.push_str(&format!("\n{}", notes.trim_end()));
        }
    }
    Some(shown)
}

/// The longest run of backticks in `text`.
fn longest_backticks(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_protocol::ToolContent;

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

    #[test]
    fn files_read_for_a_message_are_shown_whole_in_it() {
        let read = |id: &str, path: &str| Part::ToolCall {
            id: id.into(),
            name: READ_FILE.into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
            truncated: false,
            signature: None,
        };
        let result = |id: &str, text: &str, is_error: bool| Part::ToolResult {
            call_id: id.into(),
            content: vec![ToolContent::Text { text: text.into() }],
            is_error,
            detail: None,
        };
        let messages = vec![
            Message::user("Implement leap.py; see INSTRUCTIONS.md and gone.py."),
            Message::new(
                Role::Assistant,
                vec![read("a", "leap.py"), read("b", "INSTRUCTIONS.md"), read("c", "gone.py")],
            ),
            Message::new(
                Role::Tool,
                vec![
                    result("a", "     1\tdef leap_year(year):\n     2\t    pass\n", false),
                    result("b", "     1\t# Leap\n     2\t```text\n     3\t2000\n     4\t```\n(INSTRUCTIONS.md has 9 lines; showing 1–4. Read more with offset 5.)\n", false),
                    result("c", "gone.py does not exist", true),
                ],
            ),
            Message::user("And now?"),
        ];
        let shown = shown_in_message(&messages);
        assert_eq!(shown.len(), 2, "{shown:#?}");
        assert_eq!(
            shown[0].text(),
            "Implement leap.py; see INSTRUCTIONS.md and gone.py.\n\n\
             leap.py\n```python\ndef leap_year(year):\n    pass\n```\n\n\
             INSTRUCTIONS.md\n````markdown\n# Leap\n```text\n2000\n```\n````\n\
             (INSTRUCTIONS.md has 9 lines; showing 1–4. Read more with offset 5.)\n\n\
             gone.py could not be read: gone.py does not exist"
        );
        assert_eq!(shown[1], messages[3]);
        // An answer that also says something, or reads and runs, is the model's own: kept.
        let mut own = messages.clone();
        own[1].parts.push(Part::Text {
            text: "Reading.".into(),
        });
        assert_eq!(shown_in_message(&own), own);
    }
}
