//! Custom slash commands: Markdown files in `.codewright/commands/` or `.claude/commands/` (in
//! the project or the user's home). `review.md` is `/review`; `git/commit.md` is `/git:commit`.
//! Optional front matter: `description`, `argument-hint`, `model`, `agent` (who runs the prompt)
//! and `allowed-tools` (the only tools its run may use — Claude Code's names or Codewright's; a
//! pattern such as `Bash(git add:*)` allows the tool: every call is still asked as usual, so a
//! command file never grants a permission). The body is the prompt, with
//! `$ARGUMENTS` (everything after the name) and `$1`…`$9` (its words; "quoted words" stay
//! together) filled in; a body with neither gets the arguments appended. `\$1` and
//! `\$ARGUMENTS` are written as they are, without the backslash (`awk '{print \$1}'`).

use crate::{front_matter, Broken, Places, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A command file larger than this is not read.
const MAX_FILE: u64 = 256 * 1024;
/// Command files read per place; more are reported, not read.
const MAX_COMMANDS: usize = 1000;
/// How deep namespaces go (`a/b/c.md`).
const MAX_DEPTH: usize = 3;

/// A custom command that loaded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// Without the slash: `review`, `git:commit`.
    pub name: String,
    pub description: String,
    /// What to type after the name (`[file] [focus]`), when the file says.
    pub argument_hint: Option<String>,
    /// MODEL@PROVIDER to run the prompt with, when the file says.
    pub model: Option<String>,
    /// The agent that runs the prompt, when the file says.
    pub agent: Option<String>,
    /// The only tools the prompt's run may use (Codewright's names), when the file says.
    pub allowed_tools: Option<Vec<String>>,
    #[serde(skip)]
    pub body: String,
    pub path: PathBuf,
    pub source: Source,
}

/// The custom commands found for a project, one per name (the place of highest precedence
/// wins), sorted by name, and the files that could not be used.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Commands {
    pub commands: Vec<Command>,
    pub broken: Vec<Broken>,
}

/// Finds the custom commands of `places`, in the order of precedence of [`Source`].
pub fn discover(places: &Places) -> Commands {
    let mut by_name: BTreeMap<String, Command> = BTreeMap::new();
    let mut broken = Vec::new();
    for (source, folder) in Source::folders(places, "commands") {
        let Some(root) = source.root(places) else {
            continue;
        };
        let mut files = Vec::new();
        collect(root, &folder, &folder, 0, &mut files);
        files.sort();
        if files.len() > MAX_COMMANDS {
            broken.push(Broken {
                path: folder.clone(),
                source,
                reason: format!(
                    "it holds {} command files; only the first {MAX_COMMANDS} are read",
                    files.len()
                ),
            });
            files.truncate(MAX_COMMANDS);
        }
        for (path, name) in files {
            match read_command(root, &path, name, source) {
                Ok(command) => {
                    by_name.entry(command.name.clone()).or_insert(command);
                }
                Err(reason) => broken.push(Broken {
                    path,
                    source,
                    reason,
                }),
            }
        }
    }
    Commands {
        commands: by_name.into_values().collect(),
        broken,
    }
}

/// The `.md` files under `dir` (in the commands folder `top`, inside `place`) with their command
/// names (`sub:name`). A folder leading out of `place` is not listed.
fn collect(place: &Path, top: &Path, dir: &Path, depth: usize, out: &mut Vec<(PathBuf, String)>) {
    if !crate::contained::is_dir_inside(place, dir) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            if depth + 1 < MAX_DEPTH {
                collect(place, top, &path, depth + 1, out);
            }
        } else if let Some(stem) = file_name.strip_suffix(".md").filter(|_| path.is_file()) {
            let mut parts: Vec<String> = path
                .parent()
                .and_then(|p| p.strip_prefix(top).ok())
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            parts.push(stem.to_string());
            out.push((path, parts.join(":")));
        }
    }
}

fn read_command(root: &Path, path: &Path, name: String, source: Source) -> Result<Command, String> {
    if name.is_empty()
        || name.chars().count() > 64
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
    {
        return Err(format!(
            "{name:?} cannot be typed as a command: name the file with letters, digits, - or _"
        ));
    }
    let bytes = crate::contained::read(root, path, MAX_FILE)
        .map_err(|e| e.to_string())?
        .ok_or("it is gone")?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "it is over {} KB; a command must stay under that",
            MAX_FILE / 1024
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| "it is not text".to_string())?;
    let doc = front_matter::parse(&text, false)?;
    let body = doc.body.trim().to_string();
    if body.is_empty() {
        return Err("it has no prompt (the text after the front matter is empty)".into());
    }
    let description = match doc.text("description")? {
        Some(d) if !d.is_empty() => d,
        _ => body
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches('#')
            .trim()
            .to_string(),
    };
    Ok(Command {
        name,
        description: description.chars().take(200).collect(),
        argument_hint: doc.text("argument-hint")?.filter(|h| !h.is_empty()),
        model: doc.text("model")?.filter(|m| !m.is_empty()),
        agent: doc.text("agent")?.filter(|a| !a.is_empty()),
        allowed_tools: crate::agents::tool_list(&doc, "allowed-tools")?,
        body,
        path: path.to_path_buf(),
        source,
    })
}

impl Commands {
    /// The command named `name` (without the slash).
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }
}

impl Command {
    /// The prompt, with `arguments` filled in.
    pub fn expand(&self, arguments: &str) -> String {
        expand(&self.body, arguments)
    }
}

/// Fills `$ARGUMENTS` and `$1`…`$9` of `body` from `arguments`; a body with neither gets
/// non-empty arguments appended as `ARGUMENTS: …`. A backslash before one keeps it as written.
pub fn expand(body: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words = split_words(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let placeholder = after.starts_with("ARGUMENTS")
            || after
                .chars()
                .next()
                .is_some_and(|c| ('1'..='9').contains(&c));
        if placeholder && out.ends_with('\\') {
            out.pop();
            out.push('$');
            rest = after;
        } else if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let n = digit.to_digit(10).unwrap_or(1) as usize;
            out.push_str(words.get(n - 1).map(String::as_str).unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {arguments}"));
    }
    out
}

/// Words separated by spaces; "double" or 'single' quotes keep spaces inside one word.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            // A quote opens only at a word's start (`don't` is one word).
            (None, '"' | '\'') if word.is_empty() && !any => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn arguments_are_filled_in() {
        assert_eq!(
            expand("Fix issue #$1 in $2.", "42 \"src/a b.rs\" extra"),
            "Fix issue #42 in src/a b.rs."
        );
        assert_eq!(
            expand("Review: $ARGUMENTS", "  the parser  "),
            "Review: the parser"
        );
        assert_eq!(
            expand("Explain the code.", "slowly"),
            "Explain the code.\n\nARGUMENTS: slowly"
        );
        assert_eq!(expand("Explain the code.", ""), "Explain the code.");
        assert_eq!(
            expand("Costs $5 or $0; $HOME; $3", "a"),
            "Costs  or $0; $HOME; "
        );
        assert_eq!(expand("end $", "x"), "end $\n\nARGUMENTS: x");
        assert_eq!(split_words("a 'b c' \"\" d"), ["a", "b c", "", "d"]);
        assert_eq!(
            expand("Explain $1 then $2.", "don't panic"),
            "Explain don't then panic."
        );
        assert_eq!(
            expand(
                "Run `awk '{print \\$1}'` on $1 (\\$ARGUMENTS: $ARGUMENTS) \\$HOME",
                "a.txt"
            ),
            "Run `awk '{print $1}'` on a.txt ($ARGUMENTS: a.txt) \\$HOME"
        );
    }

    #[test]
    fn commands_are_found_with_namespaces_and_precedence() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let p = project.path();
        write(&p.join(".codewright/commands/review.md"), "---\ndescription: Our review\nargument-hint: '[focus]'\nmodel: big@anthropic\n---\nReview $ARGUMENTS\n");
        write(&p.join(".claude/commands/review.md"), "Theirs\n");
        write(
            &p.join(".claude/commands/git/commit.md"),
            "# Commit the staged changes\n\nWrite a message.\n",
        );
        write(
            &home.path().join(".claude/commands/explain.md"),
            "Explain $1\n",
        );
        write(
            &home.path().join(".claude/commands/empty.md"),
            "---\ndescription: nothing\n---\n",
        );
        write(&home.path().join(".claude/commands/bad name.md"), "x");
        write(
            &home.path().join(".claude/commands/notes.txt"),
            "not a command",
        );
        let found = discover(&Places {
            project: p.to_path_buf(),
            home: Some(home.path().to_path_buf()),
            cache: None,
            project_trusted: true,
        });
        let names: Vec<(&str, &str, Source)> = found
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_str(), c.source))
            .collect();
        assert_eq!(
            names,
            [
                ("explain", "Explain $1", Source::UserClaude),
                (
                    "git:commit",
                    "Commit the staged changes",
                    Source::ProjectClaude
                ),
                ("review", "Our review", Source::Project),
            ]
        );
        let review = found.get("review").unwrap();
        assert_eq!(review.argument_hint.as_deref(), Some("[focus]"));
        assert_eq!(review.model.as_deref(), Some("big@anthropic"));
        assert_eq!(review.expand("tests"), "Review tests");
        let reasons: Vec<&str> = found.broken.iter().map(|b| b.reason.as_str()).collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(reasons[0].contains("cannot be typed as a command"));
        assert!(reasons[1].contains("has no prompt"));
    }
}
