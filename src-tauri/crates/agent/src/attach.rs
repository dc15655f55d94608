//! Files a message names, read for the model before its first request, as aider does: a small
//! model that is shown the stub, the tests and the instructions writes the code; one that must
//! first call `read_file` often never does (issue 34). The reads are ordinary `read_file` calls
//! of the run, made by Codewright: shown in the task like the model's own, through the same
//! policy, and counted as the run's reads.

use codewright_extensions::contained;
use codewright_protocol::{Message, Part, Role, ToolContent, ToolDetail};
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

/// `messages` as a small model is sent them: where whole files were read right after a user's
/// message (by Codewright, or by the model's first calls), they are shown in that message as
/// aider shows them — each path on a line by itself, then the file in a fenced block, without line
/// numbers — instead of as calls and results. It is the form its answer should take (the prompt
/// asks for whole files so), and a 1.5B model shown calls answers with calls that echo them:
/// seen, the instructions written over the tests. Nothing stored changes.
pub fn as_shown(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        if message.role == Role::User {
            if let Some(files) = messages
                .get(i + 1)
                .zip(messages.get(i + 2))
                .and_then(|(asked, read)| whole_files(asked, read))
            {
                let mut shown = message.clone();
                shown
                    .parts
                    .extend(files.into_iter().map(|text| Part::Text { text }));
                out.push(shown);
                i += 3;
                continue;
            }
        }
        out.push(message.clone());
        i += 1;
    }
    out
}

/// The files `read` answers to `asked`, as a user's message shows them, when `asked` is only
/// calls of [`READ_FILE`] and each was answered with a whole file.
fn whole_files(asked: &Message, read: &Message) -> Option<Vec<String>> {
    if asked.role != Role::Assistant || read.role != Role::Tool {
        return None;
    }
    let mut ids = Vec::new();
    for part in &asked.parts {
        match part {
            Part::ToolCall { id, name, .. } if name == READ_FILE => ids.push(id),
            Part::Text { text } if text.trim().is_empty() => {}
            _ => return None,
        }
    }
    if ids.is_empty() || read.parts.len() != ids.len() {
        return None;
    }
    let mut shown = Vec::new();
    for (id, part) in ids.into_iter().zip(&read.parts) {
        let Part::ToolResult {
            call_id,
            content,
            is_error: false,
            detail: Some(detail),
        } = part
        else {
            return None;
        };
        let ToolDetail::File {
            path,
            first_line: 1,
            last_line,
            total_lines,
        } = detail.as_ref()
        else {
            return None;
        };
        if call_id != id || last_line != total_lines {
            return None;
        }
        let [ToolContent::Text { text }] = &content[..] else {
            return None;
        };
        // `read_file` numbers each line as `{n:>6}\t`.
        let mut body = String::new();
        for line in text.lines() {
            let (number, rest) = line.split_once('\t')?;
            number.trim().parse::<u64>().ok()?;
            body.push_str(rest);
            body.push('\n');
        }
        let language = Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| match e {
                "py" => "python",
                "rs" => "rust",
                "js" | "mjs" | "cjs" => "javascript",
                "ts" => "typescript",
                "md" => "markdown",
                "sh" => "bash",
                "rb" => "ruby",
                other => other,
            })
            .unwrap_or("");
        let fence = if body.contains("```") { "````" } else { "```" };
        shown.push(format!("{path}\n{fence}{language}\n{body}{fence}"));
    }
    Some(shown)
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
    fn whole_files_read_after_a_message_are_shown_in_it_and_nothing_else_is() {
        use codewright_protocol::conversation::interrupted_result;
        let call = |id: &str| Part::ToolCall {
            id: id.into(),
            name: READ_FILE.into(),
            arguments: "{}".into(),
            truncated: false,
            signature: None,
        };
        let read = |id: &str, last: u64, total: u64| Part::ToolResult {
            call_id: id.into(),
            content: vec![ToolContent::Text {
                text: "     1\tdef f():\n     2\t    pass\n".into(),
            }],
            is_error: false,
            detail: Some(Box::new(ToolDetail::File {
                path: "src/f.py".into(),
                first_line: 1,
                last_line: last,
                total_lines: total,
            })),
        };
        let history = |result: Part, text: Option<&str>| {
            let mut asked = vec![call("a")];
            if let Some(text) = text {
                asked.insert(0, Part::Text { text: text.into() });
            }
            vec![
                Message::user("Fix f."),
                Message::new(Role::Assistant, asked),
                Message::new(Role::Tool, vec![result]),
            ]
        };
        let shown = as_shown(&history(read("a", 2, 2), None));
        assert_eq!(shown.len(), 1);
        assert_eq!(
            shown[0].text(),
            "Fix f.\n\nsrc/f.py\n```python\ndef f():\n    pass\n```"
        );
        // Part of a file, a failed read, or calls the model explained stay as they are.
        for kept in [
            history(read("a", 2, 9), None),
            history(interrupted_result("a", "no such file"), None),
            history(read("a", 2, 2), Some("Let me read it.")),
        ] {
            assert_eq!(as_shown(&kept), kept);
        }
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
