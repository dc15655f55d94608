//! Agents: a role the model takes in a task — instructions added to the system prompt, the tools
//! it may use, and optionally its own model.
//!
//! Built in: **coder** (the default; every tool), **planner** (reads, then writes a plan and
//! asks to switch to the coder), **reviewer** (reads and runs the tests, reviews the working
//! tree's changes) and **explorer** (reads and searches, reports where things are).
//!
//! A user's agents are Markdown files in `.codewright/agents/` or `.claude/agents/` (the
//! project's, then the user's), Claude Code's format: front matter `name` (else the file's name),
//! `description`, optional `tools` (the allow-list: `Read, Grep, Glob` or a YAML list, Claude
//! Code's names or Codewright's; `mcp__server__tool` names an MCP tool) and `model`
//! (`MODEL@PROVIDER`, or a role: `main`, `small`, `compaction`; Claude Code's `sonnet`, `opus`,
//! `haiku` and `inherit` mean the task's own model), then the agent's instructions. A file named
//! like a built-in agent replaces it.

use crate::{front_matter, Broken, ExtensionError, Places, Source};
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The agent a task uses unless it chose another.
pub const DEFAULT: &str = "coder";
/// An agent file larger than this is not read.
const MAX_FILE: u64 = 256 * 1024;
/// Agent files read per place; more are reported, not read.
const MAX_AGENTS: usize = 200;

/// The model roles an agent's `model` may name (`codewright_llm::ModelRole`).
const ROLES: &[&str] = &["main", "small", "compaction"];

/// The tools that read and never change anything.
const READING: &[&str] = &[
    "read_file",
    "list_dir",
    "glob",
    "grep",
    "web_fetch",
    "skill",
    "memory_read",
    "todo_write",
    "ask_user",
];

/// One agent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// The tools it may use (Codewright's names); `None`: every tool of the project.
    pub tools: Option<Vec<String>>,
    /// MODEL@PROVIDER, or a model role (`small`), it runs with; `None`: the task's own model.
    pub model: Option<String>,
    /// Added to the system prompt (empty for the coder).
    #[serde(skip)]
    pub instructions: String,
    /// Where it was found; `None` for a built-in agent.
    pub source: Option<Source>,
    pub path: Option<PathBuf>,
}

/// The agents found for a project: the built-in ones and the files, one per name (the place of
/// highest precedence wins), sorted by name, and the files that could not be used.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agents {
    pub agents: Vec<AgentDef>,
    pub broken: Vec<Broken>,
}

impl Agents {
    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The agent named `name`, or an error naming the closest ones.
    pub fn find(&self, name: &str) -> Result<&AgentDef, ExtensionError> {
        self.get(name).ok_or_else(|| {
            let near = crate::closest(self.agents.iter().map(|a| a.name.as_str()), name);
            let all: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
            ExtensionError::NotFound(if near.is_empty() {
                format!(
                    "there is no agent named {name}; the agents are: {}",
                    all.join(", ")
                )
            } else {
                format!(
                    "there is no agent named {name}; did you mean {}?",
                    near.join(", ")
                )
            })
        })
    }
}

/// The built-in agents.
pub fn builtin() -> Vec<AgentDef> {
    let reading =
        |extra: &[&str]| Some(READING.iter().chain(extra).map(|t| t.to_string()).collect());
    let agent = |name: &str, description: &str, tools, instructions: &str| AgentDef {
        name: name.into(),
        description: description.into(),
        tools,
        model: None,
        instructions: instructions.into(),
        source: None,
        path: None,
    };
    vec![
        agent(
            "coder",
            "Reads, edits and runs code to do the task (the default)",
            None,
            "",
        ),
        agent(
            "explorer",
            "Reads and searches the project and reports what it found, with paths and lines; changes nothing",
            reading(&[]),
            "You are the explorer: you find things out and report them; you change nothing. Search \
             and read until you can answer, then give a short report: what you found, with file \
             paths and line numbers, and what you could not find.",
        ),
        agent(
            "planner",
            "Reads the project and writes a plan for the task, then asks to switch to the coder; changes nothing",
            reading(&[]),
            "You are the planner: you read and plan; you do not edit files or run commands (you \
             cannot). Read what the task touches, then write the plan: the steps in order, the \
             files each changes and why, the risks and how to check the result. Keep it in \
             todo_write as well. End by asking the user to switch to the coder agent (/agent \
             coder) to carry it out, or to say what to change in the plan.",
        ),
        agent(
            "reviewer",
            "Reviews the working tree's changes and runs the tests; reports findings without editing",
            reading(&["bash", "process_list", "process_output", "process_kill"]),
            "You are the reviewer: you review the changes in the working tree (git status, git \
             diff, and the files around them) and you do not edit files. Run the project's tests \
             or build when that helps. Report findings by importance — bugs, then risks, then \
             style — each with the file and line and a suggested fix; say plainly if it is fine.",
        ),
    ]
}

/// Finds the agents of `places`: the built-in ones, replaced by files of the same name in
/// `<project>/.codewright/agents`, `<project>/.claude/agents`, `~/.codewright/agents`,
/// `~/.claude/agents` (in that order of precedence).
pub fn discover(places: &Places) -> Agents {
    let mut by_name: BTreeMap<String, AgentDef> = BTreeMap::new();
    let mut broken = Vec::new();
    for (source, folder) in Source::folders(places, "agents") {
        let Some(root) = source.root(places) else {
            continue;
        };
        if !crate::contained::is_dir_inside(root, &folder) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        if files.len() > MAX_AGENTS {
            broken.push(Broken {
                path: folder.clone(),
                source,
                reason: format!(
                    "it holds {} agent files; only the first {MAX_AGENTS} are read",
                    files.len()
                ),
            });
            files.truncate(MAX_AGENTS);
        }
        for path in files {
            match read_agent(root, &path, source) {
                Ok(agent) => match by_name.get(&agent.name) {
                    Some(first) if first.source == Some(source) => broken.push(Broken {
                        reason: format!(
                            "it is named {} like {}, which is used instead",
                            agent.name,
                            first.path.as_deref().unwrap_or(Path::new("")).display()
                        ),
                        path,
                        source,
                    }),
                    Some(_) => {}
                    None => {
                        by_name.insert(agent.name.clone(), agent);
                    }
                },
                Err(reason) => broken.push(Broken {
                    path,
                    source,
                    reason,
                }),
            }
        }
    }
    for agent in builtin() {
        match by_name.get_mut(&agent.name) {
            // A file may change a built-in's instructions and model, never widen its tools: the
            // reviewer and the explorer stay unable to edit whatever a file says.
            Some(file) => {
                if let Some(allowed) = &agent.tools {
                    let asked = file.tools.take().unwrap_or_else(|| allowed.clone());
                    file.tools = Some(asked.into_iter().filter(|t| allowed.contains(t)).collect());
                }
            }
            None => {
                by_name.insert(agent.name.clone(), agent);
            }
        }
    }
    Agents {
        agents: by_name.into_values().collect(),
        broken,
    }
}

fn read_agent(root: &Path, path: &Path, source: Source) -> Result<AgentDef, String> {
    let bytes = crate::contained::read(root, path, MAX_FILE)
        .map_err(|e| e.to_string())?
        .ok_or("it is gone")?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("it is over {} KB", MAX_FILE / 1024));
    }
    let text = String::from_utf8(bytes).map_err(|_| "it is not text".to_string())?;
    parse(&text, path, source)
}

/// Reads an agent file's `text` (found at `path`, in `source`).
pub fn parse(text: &str, path: &Path, source: Source) -> Result<AgentDef, String> {
    let doc = front_matter::parse(text, true)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = doc.text("name")?.unwrap_or(stem);
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(format!(
            "the name {name:?} is not an agent name: use 1–64 letters, digits, - and _ (e.g. code-reviewer)"
        ));
    }
    let description = doc
        .text("description")?
        .filter(|d| !d.is_empty())
        .ok_or("it has no `description:` (it says what the agent is for)")?;
    let tools = tool_list(&doc, "tools")?;
    let model = doc
        .text("model")?
        .filter(|m| !matches!(m.as_str(), "" | "inherit" | "sonnet" | "opus" | "haiku"));
    if let Some(model) = &model {
        if !model.contains('@') && !ROLES.contains(&model.as_str()) {
            return Err(format!(
                "its model {model:?} is not MODEL@PROVIDER (e.g. gpt-5@openai), a role (main, small, compaction), nor inherit"
            ));
        }
    }
    Ok(AgentDef {
        name,
        description: description.split_whitespace().collect::<Vec<_>>().join(" "),
        tools,
        model,
        instructions: doc.body.trim().to_string(),
        source: Some(source),
        path: Some(path.to_path_buf()),
    })
}

/// The allow-list in the front matter's `field` (`Read, Grep` or a YAML list), with Codewright's
/// names; `None` when the field is absent.
pub(crate) fn tool_list(
    doc: &front_matter::Document,
    field: &str,
) -> Result<Option<Vec<String>>, String> {
    let not_a_list = || format!("`{field}` must be a list of tool names");
    match doc.fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(list)) => tool_names(split_list(list), field).map(Some),
        Some(Value::Sequence(items)) => {
            let names: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            tool_names(names.ok_or_else(not_a_list)?, field).map(Some)
        }
        Some(_) => Err(not_a_list()),
    }
}

/// `Read, Bash(git add:*), Grep` → its items (a comma inside parentheses is a pattern's).
fn split_list(list: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items
}

/// Codewright's names of the tools in an allow-list written with Claude Code's names or ours
/// (`Bash(git add:*)` names `bash`: a pattern allows nothing more than its tool).
fn tool_names<'a>(
    list: impl IntoIterator<Item = &'a str>,
    field: &str,
) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in list
        .into_iter()
        .map(|n| n.split('(').next().unwrap_or(n).trim())
        .filter(|n| !n.is_empty())
    {
        let ours: &[&str] = match name {
            "Read" => &["read_file"],
            "Write" => &["write_file"],
            "Edit" | "MultiEdit" => &["edit_file"],
            "Glob" => &["glob"],
            "Grep" => &["grep"],
            "LS" => &["list_dir"],
            "Bash" => &["bash", "process_list", "process_output", "process_kill"],
            "BashOutput" => &["process_output"],
            "KillShell" | "KillBash" => &["process_kill"],
            "WebFetch" => &["web_fetch"],
            "TodoWrite" => &["todo_write"],
            "Skill" => &["skill"],
            // Claude Code's tools Codewright does not have are left out.
            "WebSearch" | "NotebookEdit" | "NotebookRead" | "Task" | "ExitPlanMode" => &[],
            _ => {
                let name = name.strip_prefix("mcp__").unwrap_or(name);
                if !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(format!(
                        "`{field}` names {name:?}, which is not a tool name"
                    ));
                }
                out.push(name.to_string());
                continue;
            }
        };
        out.extend(ours.iter().map(|t| t.to_string()));
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|t| seen.insert(t.clone()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn agents_come_built_in_and_from_files_in_order_of_precedence() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        // Claude Code's own format, unchanged.
        write(
            &project.path().join(".claude/agents/code-reviewer.md"),
            "---\nname: code-reviewer\ndescription: Expert code review specialist.\n  Use after writing code.\ntools: Read, Grep, Glob, Bash, mcp__github__get_issue, WebSearch\nmodel: sonnet\ncolor: blue\n---\nYou are a senior code reviewer.\n",
        );
        // The project's .codewright wins over its .claude and over the user's.
        write(
            &project.path().join(".codewright/agents/docs.md"),
            "---\ndescription: Writes docs\ntools: [read_file, write_file]\nmodel: small@local\n---\nWrite docs.",
        );
        write(
            &project.path().join(".codewright/agents/quick.md"),
            "---\ndescription: Quick answers\nmodel: small\n---\nBe brief.",
        );
        write(
            &home.path().join(".claude/agents/docs.md"),
            "---\ndescription: The user's docs agent\n---\nx",
        );
        // A file replaces the built-in agent of its name.
        write(
            &home.path().join(".codewright/agents/planner.md"),
            "---\nname: planner\ndescription: My planner\ntools: Read\n---\nPlan my way.",
        );
        write(
            &project.path().join(".codewright/agents/broken.md"),
            "no front matter",
        );
        write(
            &project.path().join(".codewright/agents/bad-model.md"),
            "---\ndescription: x\nmodel: gpt-5\n---\n",
        );
        let found = discover(&Places {
            project: project.path().to_path_buf(),
            home: Some(home.path().to_path_buf()),
            cache: None,
            project_trusted: true,
        });
        let names: Vec<&str> = found.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "code-reviewer",
                "coder",
                "docs",
                "explorer",
                "planner",
                "quick",
                "reviewer"
            ]
        );
        assert_eq!(found.get("quick").unwrap().model.as_deref(), Some("small"));
        let reviewer = found.get("code-reviewer").unwrap();
        assert_eq!(
            reviewer.tools.as_deref().unwrap(),
            [
                "read_file",
                "grep",
                "glob",
                "bash",
                "process_list",
                "process_output",
                "process_kill",
                "github__get_issue"
            ]
        );
        assert_eq!(reviewer.model, None, "sonnet means the task's own model");
        assert_eq!(
            reviewer.description,
            "Expert code review specialist. Use after writing code."
        );
        assert_eq!(reviewer.instructions, "You are a senior code reviewer.");
        let docs = found.get("docs").unwrap();
        assert_eq!(docs.source, Some(Source::Project));
        assert_eq!(docs.model.as_deref(), Some("small@local"));
        assert_eq!(docs.tools.as_deref().unwrap(), ["read_file", "write_file"]);
        assert_eq!(found.get("planner").unwrap().instructions, "Plan my way.");
        assert_eq!(found.get("coder").unwrap().tools, None, "every tool");
        let explorer = found.get("explorer").unwrap().tools.clone().unwrap();
        assert!(
            explorer.contains(&"grep".to_string()) && !explorer.contains(&"edit_file".to_string())
        );

        let reasons: Vec<String> = found
            .broken
            .iter()
            .map(|b| {
                format!(
                    "{}: {}",
                    b.path.file_name().unwrap().to_string_lossy(),
                    b.reason
                )
            })
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons
                .iter()
                .any(|r| r.starts_with("broken.md: it does not start with front matter")),
            "{reasons:?}"
        );
        assert!(
            reasons
                .iter()
                .any(|r| r.contains("bad-model.md: its model \"gpt-5\" is not MODEL@PROVIDER")),
            "{reasons:?}"
        );

        assert!(found
            .find("reviewr")
            .unwrap_err()
            .to_string()
            .contains("did you mean reviewer"));
    }
}
