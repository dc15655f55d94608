//! Slash commands, for every front end: the built-in ones, the project's and the user's custom
//! commands (Markdown files, see [`codewright_extensions::commands`]), listed for a palette and
//! resolved from what the user typed. A command is either a prompt (sent as the user's message)
//! or an action the front end performs (compact, undo, switch the model …).

use crate::HostError;
use codewright_extensions::commands::{self, Commands};
use codewright_extensions::Broken;
use codewright_protocol::{ErrorKind, ProjectId};
use codewright_store::Store;
use serde::Serialize;

/// What a built-in command that is not a prompt asks the front end to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Start a new task in the same project.
    New,
    /// Start over: a new task in the same project (this one is kept in the list).
    Clear,
    /// Summarize the conversation now, to free the context window.
    Compact,
    /// Use another model for this task (`/model NAME@PROVIDER`), or show which.
    Model,
    /// Switch the permission mode (`/mode normal|accept-edits|plan|yolo`), or show which.
    Mode,
    /// Choose the task's agent (`/agent planner`), or list them.
    Agent,
    /// Restore the newest checkpoint: the files of the last turn that changed any, or, after a
    /// restore, what the restore changed (a second `/undo` undoes the first).
    Undo,
    /// Show what the task has cost so far.
    Cost,
    /// List the skills, switch them on or off.
    Skills,
    /// List the MCP servers and their state.
    Mcp,
    /// Show and edit the memory kept across tasks.
    Memory,
    /// List the commands.
    Help,
}

/// Built-in commands: name, what it does, what to type after it, and what it is.
const BUILTINS: &[(&str, &str, Option<&str>, Builtin)] = &[
    (
        "agent",
        "Choose who works on this task: coder, planner, reviewer, explorer or your own",
        Some("[NAME]"),
        Builtin::Action(Action::Agent),
    ),
    (
        "clear",
        "Start over in a new task (this one stays in the list)",
        None,
        Builtin::Action(Action::Clear),
    ),
    (
        "compact",
        "Summarize the conversation to free the context window",
        None,
        Builtin::Action(Action::Compact),
    ),
    (
        "cost",
        "Show the tokens and cost of this task",
        None,
        Builtin::Action(Action::Cost),
    ),
    (
        "help",
        "List the commands",
        None,
        Builtin::Action(Action::Help),
    ),
    (
        "init",
        "Explore the project and write an AGENTS.md for agents (an edit, approved like any other)",
        None,
        Builtin::Prompt(INIT, None),
    ),
    (
        "mcp",
        "Show the MCP servers and their state",
        None,
        Builtin::Action(Action::Mcp),
    ),
    (
        "mode",
        "Switch the permission mode",
        Some("normal | accept-edits | plan | yolo"),
        Builtin::Action(Action::Mode),
    ),
    (
        "memory",
        "Show and edit the notes the agent keeps across tasks",
        None,
        Builtin::Action(Action::Memory),
    ),
    (
        "model",
        "Use another model for this task",
        Some("MODEL@PROVIDER"),
        Builtin::Action(Action::Model),
    ),
    (
        "new",
        "Start a new task in this project",
        None,
        Builtin::Action(Action::New),
    ),
    (
        "review",
        "Review the changes in the working tree and report; the agent is told not to edit",
        Some("[focus]"),
        Builtin::Prompt(REVIEW, Some("reviewer")),
    ),
    (
        "skills",
        "List the skills and switch them on or off for this task",
        None,
        Builtin::Action(Action::Skills),
    ),
    (
        "undo",
        "Undo the newest checkpoint: the files the last turn changed (or the last restore)",
        None,
        Builtin::Action(Action::Undo),
    ),
];

#[derive(Debug, Clone, Copy)]
enum Builtin {
    /// A prompt, and the agent that runs it.
    Prompt(&'static str, Option<&'static str>),
    Action(Action),
}

const INIT: &str = "Explore this project and write an AGENTS.md at its root: the instructions a coding agent needs to work here. Read the README, the build and package files, the CI configuration and a few representative source files first. Cover, briefly: what the project is; how to build, run the tests (a single test too) and lint; the layout (where things live); the conventions to follow (style, naming, error handling, commit messages) as the code shows them; and anything surprising. Keep it short and specific to this project; do not invent commands you have not seen. If an AGENTS.md (or CLAUDE.md) exists, improve it instead of starting over, keeping what is still true.";

const REVIEW: &str = "Review the changes in the working tree: run `git status` and `git diff HEAD` (and read new, untracked files). Do not edit anything. Report, most important first: bugs and behaviour that breaks, security problems, missing or weak tests, and unclear names or structure, each with the file and line and a suggested fix. Say plainly if the change looks good. $ARGUMENTS";

/// A command as a palette lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Without the slash.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// "built-in", or where a custom command's file is ("project", "user (.claude)" …).
    pub origin: String,
}

/// The commands a project's tasks can use, sorted by name, and the command files that could not
/// be used.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandList {
    pub commands: Vec<CommandInfo>,
    pub broken: Vec<Broken>,
}

/// What the user typed, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Resolved {
    /// Not a command: send it as it is (`//…` is sent as `/…`).
    Message { text: String },
    /// Send this prompt as the user's message; for its run only, with the model, the agent
    /// and only the tools the command names (see [`crate::RunOptions`]).
    Prompt {
        text: String,
        model: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<Vec<String>>,
    },
    /// Do this; `arguments` is what followed the name.
    Action { action: Action, arguments: String },
    /// Send the prompt `prompt` of the project's MCP server `server` (`/server:prompt`), its
    /// arguments filled in from `arguments`: [`crate::mcp::prompt_text`] asks the server for it.
    McpPrompt {
        server: String,
        prompt: String,
        arguments: String,
    },
}

fn custom(store: &Store, project: ProjectId) -> Result<Commands, HostError> {
    Ok(commands::discover(&crate::places(store, project)?))
}

/// Every command of the project: built-in and custom (a custom `/review` or `/init` replaces
/// the built-in prompt; the built-in actions cannot be replaced).
pub fn list(store: &Store, project: ProjectId) -> Result<CommandList, HostError> {
    Ok(listed(custom(store, project)?))
}

/// The prompts of a project's MCP servers as commands (`/server:prompt`, `prompts`: each with
/// its server's name), for a palette: added to [`list`]'s by a front end whose servers run.
pub fn mcp_prompt_commands(prompts: Vec<(String, codewright_mcp::PromptInfo)>) -> Vec<CommandInfo> {
    prompts
        .into_iter()
        .map(|(server, info)| CommandInfo {
            name: format!("{server}:{}", info.name),
            description: info.description.lines().next().unwrap_or("").to_string(),
            argument_hint: Some(crate::mcp::prompt_hint(&info)).filter(|h| !h.is_empty()),
            origin: format!("MCP server {server}"),
        })
        .collect()
}

/// The built-in commands with the `found` custom ones.
fn listed(found: Commands) -> CommandList {
    let mut commands: Vec<CommandInfo> = BUILTINS
        .iter()
        .filter(|(name, _, _, kind)| {
            matches!(kind, Builtin::Action(_)) || found.get(name).is_none()
        })
        .map(|(name, description, hint, _)| CommandInfo {
            name: name.to_string(),
            description: description.to_string(),
            argument_hint: hint.map(String::from),
            origin: "built-in".into(),
        })
        .collect();
    for command in &found.commands {
        if commands.iter().any(|c| c.name == command.name) {
            continue; // a built-in action keeps its name
        }
        commands.push(CommandInfo {
            name: command.name.clone(),
            description: command.description.clone(),
            argument_hint: command.argument_hint.clone(),
            origin: command.source.label().into(),
        });
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    CommandList {
        commands,
        broken: found.broken,
    }
}

/// Resolves what the user typed in a project's task. Text that does not start with `/name`
/// is a message; an unknown name is an error naming the closest commands.
pub fn resolve(store: &Store, project: ProjectId, typed: &str) -> Result<Resolved, HostError> {
    let trimmed = typed.trim_start();
    if let Some(escaped) = trimmed.strip_prefix("//") {
        return Ok(Resolved::Message {
            text: format!("/{escaped}"),
        });
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Ok(Resolved::Message {
            text: typed.to_string(),
        });
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, arguments) = (&rest[..end], rest[end..].trim());
    if name.is_empty() {
        return Err(HostError::new(
            ErrorKind::NotFound,
            "Type a command's name after the / (see /help). To send a message that starts with /, begin it with //.",
        ));
    }
    // `/usr/bin/env is missing` is a message about a path, not a command.
    if name.contains('/') {
        return Ok(Resolved::Message {
            text: typed.to_string(),
        });
    }
    let builtin = BUILTINS.iter().find(|(n, ..)| *n == name);
    if let Some((_, _, _, Builtin::Action(action))) = builtin {
        return Ok(Resolved::Action {
            action: *action,
            arguments: arguments.to_string(),
        });
    }
    // Read once: the project's and the user's command files.
    let found = custom(store, project)?;
    if let Some(command) = found.get(name) {
        return Ok(Resolved::Prompt {
            text: command.expand(arguments),
            model: command.model.clone(),
            agent: command.agent.clone(),
            tools: command.allowed_tools.clone(),
        });
    }
    if let Some((_, _, _, Builtin::Prompt(body, agent))) = builtin {
        return Ok(Resolved::Prompt {
            text: commands::expand(body, arguments).trim_end().to_string(),
            model: None,
            agent: agent.map(String::from),
            tools: None,
        });
    }
    // `/server:prompt`: a prompt of one of the project's MCP servers (a custom command of the
    // same name came first).
    if let Some((server, prompt)) = name.split_once(':') {
        if crate::mcp::prompt_server(store, project, server)?.is_some() && !prompt.is_empty() {
            return Ok(Resolved::McpPrompt {
                server: server.to_string(),
                prompt: prompt.to_string(),
                arguments: arguments.to_string(),
            });
        }
    }
    let all = listed(found);
    let closest =
        codewright_extensions::closest(all.commands.iter().map(|c| c.name.as_str()), name);
    let hint = if closest.is_empty() {
        "See /help for the commands.".to_string()
    } else {
        let names: Vec<String> = closest.iter().map(|n| format!("/{n}")).collect();
        format!("Did you mean {}?", names.join(", "))
    };
    Err(HostError::new(
        ErrorKind::NotFound,
        format!("There is no command /{name}. {hint} To send a message that starts with /, begin it with //."),
    ))
}

/// What a person typed, once resolved: what to send, or an action of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    /// Send `text`; a command's model, agent and tools are for its run only
    /// (see [`crate::RunOptions`]).
    Send {
        text: String,
        model: Option<String>,
        this_run: codewright_agent::ThisRun,
    },
    /// Do this; `arguments` is what followed the name.
    Action { action: Action, arguments: String },
}

impl crate::Host {
    /// Every command a project's task can use: built-in, custom, and the prompts of the
    /// project's MCP servers once they have started, by name.
    pub fn commands(&self, project: ProjectId) -> Result<CommandList, HostError> {
        let mut list = list(&self.inner.store(), project)?;
        list.commands.extend(self.mcp_prompt_commands(project));
        list.commands.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(list)
    }

    /// Resolves what was typed in a project's task: a prompt command becomes its prompt, an
    /// MCP server's prompt is asked of the server (the store is not held meanwhile), an
    /// action comes back, an unknown command is an error naming the closest.
    pub async fn resolve_command(
        &self,
        project: ProjectId,
        typed: &str,
    ) -> Result<Typed, HostError> {
        let (resolved, asked) = {
            let store = self.inner.store();
            let resolved = resolve(&store, project, typed)?;
            let asked = match &resolved {
                Resolved::McpPrompt {
                    server,
                    prompt,
                    arguments,
                } => match crate::mcp::prompt_server(&store, project, server)? {
                    Some(row) => Some(crate::mcp::prompt_text(
                        &store, project, &row, prompt, arguments,
                    )?),
                    None => {
                        return Err(HostError::new(
                            ErrorKind::NotFound,
                            format!("There is no MCP server {server} any more."),
                        ))
                    }
                },
                _ => None,
            };
            (resolved, asked)
        };
        Ok(match resolved {
            Resolved::Message { text } => Typed::Send {
                text,
                model: None,
                this_run: Default::default(),
            },
            Resolved::Prompt {
                text,
                model,
                agent,
                tools,
            } => Typed::Send {
                text,
                model,
                this_run: codewright_agent::ThisRun { agent, tools },
            },
            Resolved::McpPrompt { .. } => Typed::Send {
                text: asked.expect("asked above").await?,
                model: None,
                this_run: Default::default(),
            },
            Resolved::Action { action, arguments } => Typed::Action { action, arguments },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_text_resolves_to_a_message_a_prompt_an_action_or_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let commands = root.join(".codewright/commands");
        std::fs::create_dir_all(commands.join("git")).unwrap();
        std::fs::write(
            commands.join("fix.md"),
            "---\nmodel: big@anthropic\n---\nFix issue #$1.\n",
        )
        .unwrap();
        std::fs::write(
            commands.join("git/commit.md"),
            "---\nallowed-tools: Bash(git add:*), Bash(git commit:*), Read\n---\nCommit: $ARGUMENTS",
        )
        .unwrap();
        std::fs::write(commands.join("review.md"), "Our review of $ARGUMENTS").unwrap();
        std::fs::write(commands.join("compact.md"), "Not the built-in").unwrap();
        let store = Store::open_in(&dir.path().join("data")).unwrap();
        let project = store.add_project(&root, None).unwrap().id;
        crate::project::set_project_trusted(&store, project, true).unwrap();
        let resolve = |typed: &str| resolve(&store, project, typed);
        assert!(resolve("/")
            .unwrap_err()
            .message
            .starts_with("Type a command's name after the /"));

        assert_eq!(
            resolve("hello /x").unwrap(),
            Resolved::Message {
                text: "hello /x".into()
            }
        );
        assert_eq!(
            resolve("/usr/bin/env fails").unwrap(),
            Resolved::Message {
                text: "/usr/bin/env fails".into()
            }
        );
        assert_eq!(
            resolve("//tmp is full").unwrap(),
            Resolved::Message {
                text: "/tmp is full".into()
            }
        );
        assert_eq!(
            resolve("/fix 42").unwrap(),
            Resolved::Prompt {
                text: "Fix issue #42.".into(),
                model: Some("big@anthropic".into()),
                agent: None,
                tools: None,
            }
        );
        assert_eq!(
            resolve("  /git:commit  the parser ").unwrap(),
            Resolved::Prompt {
                text: "Commit: the parser".into(),
                model: None,
                agent: None,
                tools: Some(vec![
                    "bash".into(),
                    "process_list".into(),
                    "process_output".into(),
                    "process_kill".into(),
                    "read_file".into()
                ]),
            }
        );
        // A custom prompt replaces the built-in one; a built-in action keeps its name.
        assert_eq!(
            resolve("/review tests").unwrap(),
            Resolved::Prompt {
                text: "Our review of tests".into(),
                model: None,
                agent: None,
                tools: None,
            }
        );
        // The built-in /review runs as the reviewer, who cannot edit.
        std::fs::remove_file(commands.join("review.md")).unwrap();
        let Resolved::Prompt { agent, .. } = resolve("/review").unwrap() else {
            panic!("/review is a prompt");
        };
        assert_eq!(agent.as_deref(), Some("reviewer"));
        std::fs::write(commands.join("review.md"), "Our review of $ARGUMENTS").unwrap();
        assert_eq!(
            resolve("/compact").unwrap(),
            Resolved::Action {
                action: Action::Compact,
                arguments: String::new()
            }
        );
        assert_eq!(
            resolve("/model big@x").unwrap(),
            Resolved::Action {
                action: Action::Model,
                arguments: "big@x".into()
            }
        );
        let Resolved::Prompt { text, .. } = resolve("/init").unwrap() else {
            panic!()
        };
        assert!(text.starts_with("Explore this project and write an AGENTS.md"));
        let err = resolve("/comit").unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert_eq!(
            err.message,
            "There is no command /comit. Did you mean /git:commit, /cost? To send a message that starts with /, begin it with //."
        );
        let err = resolve("/zzzzzzzzzz").unwrap_err();
        assert!(
            err.message.contains("See /help") && err.message.contains("begin it with //"),
            "{}",
            err.message
        );

        let listed = list(&store, project).unwrap();
        let names: Vec<&str> = listed.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "agent",
                "clear",
                "compact",
                "cost",
                "fix",
                "git:commit",
                "help",
                "init",
                "mcp",
                "memory",
                "mode",
                "model",
                "new",
                "review",
                "skills",
                "undo"
            ]
        );
        let review = listed.commands.iter().find(|c| c.name == "review").unwrap();
        assert_eq!(review.origin, "project");
        assert_eq!(listed.commands[2].origin, "built-in");
    }
}
