//! `projects` and `tasks`: the same records the desktop app shows.

use crate::error::Result;
use crate::output::{table, to_json};
use crate::project_arg::{existing, ProjectArg};
use clap::Subcommand;
use codewright_host::Host;
use codewright_protocol::{ProjectId, TaskId};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List every project.
    List,
    /// Add a folder as a project.
    Add {
        /// The project's folder.
        path: PathBuf,
        /// Display name (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Rename a project.
    Rename { id: ProjectId, name: String },
    /// Remove a project and its tasks from Codewright (the folder is not touched).
    Rm { id: ProjectId },
    /// Show a project's settings, or change them.
    Settings {
        id: ProjectId,
        /// Run the agent's commands in the sandbox (writes only inside the project and temp
        /// folders).
        #[arg(long, value_parser = on_off, value_name = "on|off")]
        sandbox: Option<bool>,
        /// Let web_fetch reach loopback and private network addresses.
        #[arg(long, value_parser = on_off, value_name = "on|off")]
        private_network: Option<bool>,
        /// Environment variables the agent's commands and MCP servers get although their names
        /// look like secrets: comma-separated names (GITHUB_TOKEN,NPM_TOKEN), "" for none.
        #[arg(long, value_name = "NAMES")]
        pass_env: Option<String>,
        /// Trust the project: use the agents, commands and skills its folder defines
        /// (.codewright/, .claude/). Off until you say so.
        #[arg(long, value_parser = on_off, value_name = "on|off")]
        trusted: Option<bool>,
        /// New tasks work in a git worktree of their own (the app's new-task box starts so;
        /// `exec --worktree` and `tasks add --worktree` ask for one each time).
        #[arg(long, value_parser = on_off, value_name = "on|off")]
        worktrees: Option<bool>,
        /// A command run in each new worktree before its task does anything else (`npm ci`);
        /// "" for none. Its output is in the task; a failure stops the task before it starts.
        #[arg(long, value_name = "COMMAND")]
        worktree_set_up: Option<String>,
    },
}

fn on_off(value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("{other:?} is neither on nor off")),
    }
}

#[derive(Subcommand)]
pub enum TasksCommand {
    /// List a project's tasks, most recent first.
    List {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
    },
    /// Start a new task in a project.
    Add {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
        title: String,
        /// The task works in a git worktree of its own, on a new branch.
        #[arg(long)]
        worktree: bool,
        /// The branch or commit its worktree starts from (default: the current branch).
        #[arg(long, value_name = "REF", requires = "worktree")]
        base: Option<String>,
    },
    /// Print a task's conversation.
    Show { id: TaskId },
    /// The project's task files (.codewright/tasks/*.md, .ayder/tasks/*.md): their ids, titles
    /// and statuses; run one with `exec --implement ID`.
    Files {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
    },
    /// Summarize a task's older messages so it fits the model's context again.
    Compact {
        id: TaskId,
        /// The model that writes the summary (default: the compaction model, else the main one).
        #[arg(long, value_name = "MODEL@PROVIDER")]
        model: Option<String>,
    },
    /// Everything a task in a worktree changed against its base (committed or not) — for a task
    /// in the project folder, each file it changed as it was before against it now — as a
    /// unified diff; `--stat`: by file.
    Diff {
        id: TaskId,
        #[arg(long)]
        stat: bool,
    },
    /// Commit everything not committed in a task's worktree, on its branch; for a task in the
    /// project folder, only the files it changed, on the folder's current branch.
    Commit {
        id: TaskId,
        /// The commit message (default: the task's title).
        #[arg(short, long)]
        message: Option<String>,
    },
    /// Merge a task's branch into the branch it started from: a fast-forward when the base has
    /// not moved, else a merge commit. A conflict changes nothing.
    Merge {
        id: TaskId,
        #[arg(long, conflicts_with = "no_ff")]
        ff_only: bool,
        #[arg(long)]
        no_ff: bool,
    },
    /// Remove a task's worktree and branch; all of its work (commits and uncommitted files) is
    /// kept under refs/codewright/archive/ID until `tasks restore ID`.
    Discard {
        id: TaskId,
        /// Discard without listing what is there first.
        #[arg(long)]
        yes: bool,
    },
    /// Bring back a discarded task's worktree as it was.
    Restore { id: TaskId },
    /// Push a task's branch and open a pull request into its base with GitHub's `gh`
    /// (installed and signed in); the title and body are drafted from the change unless given.
    Pr {
        id: TaskId,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        body: Option<String>,
    },
    /// The checks of a task's pull request now (GitHub's `gh`): passed, failed, pending.
    Checks { id: TaskId },
    /// Rename a task.
    Rename { id: TaskId, title: String },
    /// Delete a task.
    Rm { id: TaskId },
}

/// Runs a `projects` command and returns what to print.
pub fn projects(host: &Host, command: ProjectsCommand, json: bool) -> Result<String> {
    Ok(match command {
        ProjectsCommand::Settings {
            id,
            sandbox,
            private_network,
            pass_env,
            trusted,
            worktrees,
            worktree_set_up,
        } => {
            let mut settings = host.project_settings(id)?;
            if sandbox.is_some()
                || private_network.is_some()
                || pass_env.is_some()
                || trusted.is_some()
                || worktrees.is_some()
                || worktree_set_up.is_some()
            {
                if let Some(command) = worktree_set_up {
                    let length = command.chars().count();
                    if length > codewright_host::project::SET_UP_MAX {
                        return Err(crate::error::bad_input(format!("the set-up command is {length} characters; keep it under {}: for more, put the steps in a script in the project and run that", codewright_host::project::SET_UP_MAX)));
                    }
                    settings.worktree_set_up = command.trim().to_string();
                }
                settings.trusted = trusted.unwrap_or(settings.trusted);
                settings.worktrees = worktrees.unwrap_or(settings.worktrees);
                settings.sandbox = sandbox.unwrap_or(settings.sandbox);
                settings.allow_private_network =
                    private_network.unwrap_or(settings.allow_private_network);
                if let Some(names) = pass_env {
                    settings.pass_env = names
                        .split(',')
                        .map(str::trim)
                        .filter(|name| !name.is_empty())
                        .map(String::from)
                        .collect();
                }
                host.set_project_settings(id, &settings)?;
            }
            if json {
                to_json(&settings)
            } else {
                let word = |on: bool| if on { "on" } else { "off" };
                let names = if settings.pass_env.is_empty() {
                    "none".to_string()
                } else {
                    settings.pass_env.join(", ")
                };
                let set_up = match settings.worktree_set_up.is_empty() {
                    true => "none",
                    false => settings.worktree_set_up.as_str(),
                };
                format!(
                    "sandbox          {}\nprivate-network  {}\npass-env         {names}\ntrusted          {}\nworktrees        {}\nworktree-set-up  {set_up}\n",
                    word(settings.sandbox),
                    word(settings.allow_private_network),
                    word(settings.trusted),
                    word(settings.worktrees)
                )
            }
        }
        ProjectsCommand::List => {
            let projects = host.projects()?;
            if json {
                to_json(&projects)
            } else if projects.is_empty() {
                "No projects yet. Add one with: codewright-cli projects add PATH\n".into()
            } else {
                table(
                    &["ID", "NAME", "PATH"],
                    projects
                        .iter()
                        .map(|p| vec![p.id.to_string(), p.name.clone(), p.root_path.clone()]),
                )
            }
        }
        ProjectsCommand::Add { path, name } => {
            let p = host.add_project(&path, name.as_deref())?;
            if json {
                to_json(&p)
            } else {
                format!("Added project {} \"{}\" ({})\n", p.id, p.name, p.root_path)
            }
        }
        ProjectsCommand::Rename { id, name } => {
            let p = host.rename_project(id, &name)?;
            if json {
                to_json(&p)
            } else {
                format!("Renamed project {} to \"{}\"\n", p.id, p.name)
            }
        }
        ProjectsCommand::Rm { id } => {
            let p = host.project(id)?;
            host.remove_project(id)?;
            if json {
                to_json(&serde_json::json!({ "removed": p.id }))
            } else {
                format!(
                    "Removed project {} \"{}\" and its tasks; the folder {} was not touched\n",
                    p.id, p.name, p.root_path
                )
            }
        }
    })
}

/// Runs a `tasks` command and returns what to print.
pub fn tasks(host: &Host, command: TasksCommand, json: bool) -> Result<String> {
    Ok(match command {
        TasksCommand::Diff { id, stat } => crate::worktrees::diff(host, id, stat, json)?,
        TasksCommand::Commit { id, message } => {
            crate::worktrees::commit(host, id, message.as_deref(), json)?
        }
        TasksCommand::Merge { id, ff_only, no_ff } => {
            crate::worktrees::merge(host, id, ff_only, no_ff, json)?
        }
        TasksCommand::Discard { id, yes } => crate::worktrees::discard(host, id, yes, json)?,
        TasksCommand::Restore { id } => crate::worktrees::restore(host, id, json)?,
        TasksCommand::Pr { id, title, body } => {
            crate::worktrees::pull_request(host, id, title, body, json)?
        }
        TasksCommand::Checks { id } => crate::worktrees::checks(host, id, json)?,
        TasksCommand::Files { project } => {
            let project = existing(host, project.as_ref())?;
            let root = host.project(project)?.root_path;
            let codewright_host::task_files::TaskFiles { files, broken } =
                host.task_files(project)?;
            if json {
                to_json(&serde_json::json!({ "files": files, "broken": broken }))
            } else {
                let mut out = if files.is_empty() {
                    "No task files. They are Markdown files in .codewright/tasks (or .ayder/tasks), one piece of work each.\n".to_string()
                } else {
                    table(
                        &["ID", "STATUS", "TITLE", "FILE"],
                        files.iter().map(|f| {
                            vec![
                                f.id.clone(),
                                f.status.clone(),
                                f.title.clone(),
                                f.path
                                    .strip_prefix(&root)
                                    .unwrap_or(&f.path)
                                    .display()
                                    .to_string(),
                            ]
                        }),
                    )
                };
                out.push_str(&crate::output::not_loaded(&broken));
                out
            }
        }
        TasksCommand::List { project } => {
            let project = existing(host, project.as_ref())?;
            let tasks = host.tasks(project)?;
            if json {
                to_json(&tasks)
            } else if tasks.is_empty() {
                format!("No tasks in project {project}. Start one with: codewright-cli tasks add --project {project} TITLE\n")
            } else {
                table(
                    &["ID", "STATUS", "TITLE"],
                    tasks
                        .iter()
                        .map(|t| vec![t.id.to_string(), t.status.as_str().into(), t.title.clone()]),
                )
            }
        }
        TasksCommand::Add {
            project,
            title,
            worktree,
            base,
        } => {
            let project = existing(host, project.as_ref())?;
            let t = match worktree {
                true => host.add_task_in_worktree(project, Some(&title), None, base.as_deref())?,
                false => host.add_task(project, &title)?,
            };
            match (&t.worktree, json) {
                (_, true) => to_json(&t),
                (Some(tree), false) => format!(
                    "Added task {} \"{}\" to project {}; it works in {} on branch {}\n",
                    t.id, t.title, t.project_id, tree.path, tree.branch
                ),
                (None, false) => format!(
                    "Added task {} \"{}\" to project {}\n",
                    t.id, t.title, t.project_id
                ),
            }
        }
        TasksCommand::Compact { .. } => unreachable!("run by exec::compact"),
        TasksCommand::Show { id } => {
            let task = host.task(id)?;
            let history = host.history(id)?;
            if json {
                to_json(&serde_json::json!({ "task": task, "messages": history }))
            } else {
                show(&task, &history)
            }
        }
        TasksCommand::Rename { id, title } => {
            let t = host.rename_task(id, &title)?;
            if json {
                to_json(&t)
            } else {
                format!("Renamed task {} to \"{}\"\n", t.id, t.title)
            }
        }
        TasksCommand::Rm { id } => {
            let t = host.task(id)?;
            host.remove_task(id)?;
            if json {
                to_json(&serde_json::json!({ "removed": t.id }))
            } else {
                format!("Deleted task {} \"{}\"\n", t.id, t.title)
            }
        }
    })
}

/// A conversation as text: each message under its role, tool calls and results one line each.
fn show(
    task: &codewright_protocol::Task,
    history: &[codewright_protocol::MessageRecord],
) -> String {
    use codewright_protocol::{Part, Role};
    let mut out = format!(
        "Task {} \"{}\" ({})\n",
        task.id,
        task.title,
        task.status.as_str()
    );
    for record in history {
        let m = &record.message;
        let who = match m.role {
            Role::User => "you",
            Role::Assistant => "agent",
            Role::Tool => "tools",
            Role::System => "system",
        };
        let mut note = String::new();
        if record.compacted {
            note.push_str(" (compacted)");
        }
        if !record.complete {
            note.push_str(" (streaming)");
        }
        if let Some(stop) = m.stop_reason {
            if !matches!(
                stop,
                codewright_protocol::StopReason::EndTurn | codewright_protocol::StopReason::ToolUse
            ) {
                note.push_str(&format!(
                    " ({})",
                    serde_json::to_value(stop)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                ));
            }
        }
        out.push_str(&format!("\n── {who}{note}\n"));
        if let Some(error) = &m.error {
            out.push_str(&format!("(error: {error})\n"));
        }
        for part in &m.parts {
            match part {
                Part::Text { text } => {
                    out.push_str(text.trim_end());
                    out.push('\n');
                }
                Part::Thinking { text, .. } if !text.is_empty() => {
                    out.push_str(&format!(
                        "(thinking) {}\n",
                        text.lines().next().unwrap_or("")
                    ));
                }
                Part::Thinking { .. } => {}
                Part::ToolCall {
                    name, arguments, ..
                } => {
                    let args: String = arguments.chars().take(160).collect();
                    out.push_str(&format!("→ {name} {args}\n"));
                }
                Part::ToolResult {
                    content, is_error, ..
                } => {
                    let first = content
                        .first()
                        .map(|c| c.as_text().lines().next().unwrap_or(""))
                        .unwrap_or_default();
                    out.push_str(&format!("{} {first}\n", if *is_error { "✗" } else { "✓" }));
                }
                Part::Attachment(a) => out.push_str(&format!("[attached {}]\n", a.name)),
            }
        }
    }
    out
}
