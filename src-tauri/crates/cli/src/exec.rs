//! `exec`: runs the agent loop on a task to the end, headless. Plain output is the assistant's
//! text and one line per tool call; `--json` prints every protocol event, one per line.
//! Approvals are asked on the terminal when there is one; otherwise whatever needs asking is
//! rejected with a message telling the model why. A prompt that is a slash command (`/review`,
//! a custom command) runs as the command's prompt; `/help` lists them.

use crate::error::{bad_input, Result};
use crate::output::to_json;
use crate::project_arg::{existing, found_or_added, ProjectArg};
use crate::tools::{terminal_answer, terminal_decision};
use codewright_host::commands::{self, Action, Typed};
use codewright_host::{Host, HostError, RunOptions};
use codewright_protocol::{
    visible, AgentEvent, Decision, ErrorKind, Message, PermissionMode, RunOutcome, TaskId,
};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Clone)]
pub struct ExecArgs {
    /// A project's id or folder (default: the current folder; a folder is added as a project
    /// if it is none yet).
    #[arg(long, value_name = "ID|DIR")]
    project: Option<ProjectArg>,
    /// Continue this task instead of starting a new one.
    #[arg(long, value_name = "ID")]
    task: Option<TaskId>,
    /// The model, as MODEL@PROVIDER (default: the main model).
    #[arg(long, value_name = "MODEL@PROVIDER")]
    model: Option<String>,
    /// The agent that works on the task: coder (the default), planner, reviewer, explorer, or
    /// one of the project's or yours (`agents` lists them); the task keeps it.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Permission mode: normal, accept-edits, plan or yolo.
    #[arg(long, default_value = "normal", value_parser = crate::tools::parse_mode)]
    mode: PermissionMode,
    /// Run commands under the Landlock sandbox (always on in yolo mode).
    #[arg(long)]
    sandbox: bool,
    /// Work in a git worktree of the task's own, on a new branch `codewright/<title>` (review
    /// it with `tasks diff`, then `tasks commit`, `tasks merge` or `tasks discard`).
    #[arg(long, conflicts_with = "task")]
    worktree: bool,
    /// The branch or commit the worktree starts from (default: the current branch).
    #[arg(long, value_name = "REF", requires = "worktree")]
    base: Option<String>,
    /// Requests before the task pauses with a summary.
    #[arg(long, default_value_t = 100)]
    pub(crate) max_iterations: u32,
    /// Implement the project's task file with this id (`tasks files`), in a new task; the file
    /// is marked done when the run finishes.
    #[arg(long, value_name = "ID", conflicts_with_all = ["task", "prompt", "implement_all"])]
    implement: Option<String>,
    /// Implement every task file not done yet, in order, each in its own task; stops at the first
    /// that does not finish.
    #[arg(long, conflicts_with_all = ["task", "prompt"])]
    implement_all: bool,
    /// What the agent should do (omit with --task to continue a paused or interrupted task).
    prompt: Option<String>,
    /// The new task's title (the prompt's first line when not set).
    #[arg(skip)]
    title: Option<String>,
    /// `model` came from a slash command: for this run only.
    #[arg(skip)]
    model_once: bool,
    /// A slash command's agent or tools: for this run only.
    #[arg(skip)]
    this_run: codewright_agent::ThisRun,
}

fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// Runs `exec`; returns the exit code (0 done, 1 error, 3 done with a check the message named
/// still failing, 130 stopped).
pub fn exec(host: Host, home: &Path, mut args: ExecArgs, json: bool) -> Result<ExitCode> {
    if args.implement.is_some() || args.implement_all {
        return implement(host, home, args, json);
    }
    let project = match args.task {
        Some(id) => {
            let task = host.task(id)?;
            if let Some(given) = &args.project {
                let named = existing(&host, Some(given))?;
                if named != task.project_id {
                    let project = host.project(task.project_id)?;
                    return Err(bad_input(format!(
                        "task {id} belongs to project {} ({}), not project {}",
                        project.id.0, project.root_path, named.0
                    )));
                }
            }
            task.project_id
        }
        None => {
            if args.prompt.as_deref().unwrap_or("").trim().is_empty() {
                eprintln!("codewright-cli: say what the agent should do: codewright-cli exec \"PROMPT\" (or continue a task with --task ID)");
                return Ok(ExitCode::from(2));
            }
            found_or_added(&host, args.project.as_ref())?
        }
    };
    trust_step(&host, project, json)?;
    // A slash command becomes its prompt (and its model); actions belong to other commands.
    if let Some(typed) = args.prompt.take() {
        let runtime = crate::runtime(None)?;
        match runtime.block_on(host.resolve_command(project, &typed))? {
            Typed::Send {
                text,
                model,
                this_run,
            } => {
                args.prompt = Some(text);
                if args.model.is_none() {
                    args.model_once = model.is_some();
                    args.model = model;
                }
                args.this_run = this_run;
            }
            Typed::Action { action, .. } => {
                if action == Action::Help {
                    let list = host.commands(project)?;
                    out(&if json { to_json(&list) } else { help(&list) });
                    return Ok(ExitCode::SUCCESS);
                }
                return Err(bad_input(format!(
                    "/{} is a command of the task window; here it is {}",
                    typed
                        .trim_start()
                        .trim_start_matches('/')
                        .split_whitespace()
                        .next()
                        .unwrap_or(""),
                    cli_equivalent(action, args.task)
                )));
            }
        }
    }
    if let Some(agent) = &args.agent {
        host.check_agent(project, agent)?;
    }
    // A new task is stored with its prompt at once: nothing after (the model lookup, MCP
    // servers starting, a crash) can lose it. An existing task's message is sent to it.
    let mut send_text = args.prompt.clone();
    let args_task = args.task;
    let task = match args.task {
        Some(id) => host.task(id)?,
        None => {
            let first = Message::user(args.prompt.clone().unwrap_or_default());
            let task = match args.worktree {
                true => {
                    let task = host.add_task_in_worktree(
                        project,
                        args.title.as_deref(),
                        Some(&first),
                        args.base.as_deref(),
                    )?;
                    if let (Some(tree), false) = (&task.worktree, json) {
                        eprintln!(
                            "codewright-cli: task {} works in {} on branch {}",
                            task.id.0, tree.path, tree.branch
                        );
                    }
                    task
                }
                false => host.add_task_with(project, args.title.as_deref(), &first)?,
            };
            send_text = None;
            task
        }
    };
    if let Some(agent) = &args.agent {
        host.choose_agent(task.id, agent)?;
    }
    let interactive = std::io::stdin().is_terminal();
    let runtime = crate::runtime(Some(2))?;
    let mode = args.mode;
    let task_id = task.id;
    let named_model = args.model.clone();
    let named_in_run = args.model.clone();
    let host_after = host.clone();
    let outcome = runtime.block_on(async move {
        let mut rx = host.subscribe(Some(task_id));
        let options = RunOptions {
            model: args.model.clone(),
            model_once: args.model_once,
            mode: Some(mode),
            sandbox: args.sandbox,
            this_run: args.this_run.clone(),
        };
        host.send(task_id, send_text.map(Message::user), options).await?;
        let on_ctrl_c = host.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = on_ctrl_c.stop(task_id);
            }
        });
        // (And whether a check the message named still failed at the end.)
        let mut outcome = (RunOutcome::Failed, false);
        let mut at_line_start = true;
        while let Some(event) = rx.recv().await {
            if json {
                out(&format!("{}\n", serde_json::to_string(&event).expect("events serialize")));
            }
            match &event {
                // What the model or a tool wrote reaches the terminal with its control characters
                // escaped (an escape sequence could rewrite the screen or the clipboard).
                AgentEvent::TextDelta { text, .. } if !json => {
                    out(&visible::terminal_safe(text));
                    at_line_start = text.ends_with('\n');
                }
                AgentEvent::ToolFinished { name, is_error, preview, .. } if !json => {
                    if !at_line_start {
                        out("\n");
                        at_line_start = true;
                    }
                    let first = preview.lines().next().unwrap_or("");
                    out(&format!(
                        "[{}{}] {}\n",
                        visible::terminal_safe(name),
                        if *is_error { " failed" } else { "" },
                        visible::terminal_safe(first)
                    ));
                }
                AgentEvent::Notice { message, .. } if !json => {
                    eprintln!("codewright-cli: {}", visible::terminal_safe(message))
                }
                AgentEvent::Error { message, kind, .. } if !json => {
                    eprintln!("codewright-cli: {}{}", visible::terminal_safe(message), hint(&host, *kind, Some(task_id), named_in_run.as_deref()))
                }
                AgentEvent::ApprovalRequested { request } => {
                    let decision = if interactive {
                        let request = request.clone();
                        // Ctrl-C at the prompt stops the run (the other listener) and ends the wait.
                        tokio::select! {
                            d = tokio::task::spawn_blocking(move || terminal_decision(&request)) => {
                                d.unwrap_or(Decision::Reject { feedback: None })
                            }
                            _ = tokio::signal::ctrl_c() => Decision::Reject { feedback: None },
                        }
                    } else {
                        Decision::Reject {
                            feedback: Some(format!(
                                "Not run: `exec` has no terminal to ask on and the {} mode does not allow this ({}). Do without it, or finish and tell the user what to run or allow (for example with --mode accept-edits or a saved rule).",
                                mode.as_str(),
                                request.reason
                            )),
                        }
                    };
                    // Refused only if the run ended meanwhile (a stop): nothing to do.
                    let _ = host.decide(task_id, request.id, decision);
                }
                AgentEvent::QuestionAsked { question } => {
                    let answer = if interactive {
                        let q = question.clone();
                        let read = tokio::task::spawn_blocking(move || terminal_answer(&q));
                        tokio::select! {
                            a = read => a.ok().flatten(),
                            _ = tokio::signal::ctrl_c() => None,
                        }
                    } else {
                        None
                    };
                    let _ = host.answer(task_id, question.id, answer);
                }
                AgentEvent::RunFinished { outcome: o, work, .. } => {
                    // An honest outcome: an answer alone, with nothing read, changed or run, is
                    // said as such (small models often write a plan and stop).
                    if !json && *o == RunOutcome::Done && work.is_nothing() {
                        if !at_line_start {
                            out("\n");
                            at_line_start = true;
                        }
                        eprintln!("codewright-cli: the agent answered without reading, changing or running anything");
                    }
                    if !json && !work.failing.is_empty() {
                        if !at_line_start {
                            out("\n");
                            at_line_start = true;
                        }
                        eprintln!(
                            "codewright-cli: the task is not done: {} still fails",
                            work.failing
                                .iter()
                                .map(|c| format!("`{}`", visible::terminal_safe(c)))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        );
                    }
                    outcome = (*o, !work.failing.is_empty());
                    break;
                }
                _ => {}
            }
        }
        if !json && !at_line_start {
            out("\n");
        }
        host.shutdown().await;
        Ok::<_, HostError>(outcome)
    });
    // A prompt abandoned with Ctrl-C still waits for a line on the terminal; do not wait for it.
    runtime.shutdown_background();
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            // A new task's prompt was stored with it.
            let saved = match e.saved || args_task.is_none() {
                true => format!(". Your message is saved in task {0}: continue it with `codewright-cli exec --task {0}`", task_id.0),
                false => String::new(),
            };
            return Err(HostError::new(
                e.kind,
                format!(
                    "{}{}{saved}",
                    e.message,
                    hint(&host_after, e.kind, Some(task_id), named_model.as_deref())
                ),
            ));
        }
    };
    Ok(match outcome {
        (RunOutcome::Done | RunOutcome::Paused, true) => ExitCode::from(CHECKS_FAIL),
        (RunOutcome::Done | RunOutcome::Paused, false) => ExitCode::SUCCESS,
        (RunOutcome::Stopped, _) => ExitCode::from(130),
        (RunOutcome::Failed, _) => ExitCode::FAILURE,
    })
}

/// `exec`'s exit status when the run ended with a check the message named (`python3 -m pytest
/// -q`) still failing: the task is not done.
pub(crate) const CHECKS_FAIL: u8 = 3;

/// What to do about an error, in the CLI's words; a missing or refused key names the provider of
/// the model in use (`named`, else `task`'s, else the main model).
pub(crate) fn hint(
    host: &Host,
    kind: ErrorKind,
    task: Option<TaskId>,
    named: Option<&str>,
) -> String {
    let model = matches!(kind, ErrorKind::MissingKey | ErrorKind::Auth)
        .then(|| host.model_in_use(task, named))
        .flatten();
    let provider = model
        .as_deref()
        .and_then(|m| m.rsplit_once('@'))
        .map_or("PROVIDER", |(_, p)| p);
    match kind {
        ErrorKind::NoModel => ": pass --model MODEL@PROVIDER, or set one with `codewright-cli models role main MODEL@PROVIDER`".into(),
        ErrorKind::MissingKey | ErrorKind::Auth => format!(" (keep a key with `codewright-cli auth set {provider}`, or set the provider's environment variable)"),
        ErrorKind::UnknownModel => " (see `codewright-cli models list` and `codewright-cli providers list`)".into(),
        ErrorKind::ContextOverflow => " (`codewright-cli tasks compact ID` compacts it now)".into(),
        _ => String::new(),
    }
}

/// `tasks compact ID`: summarizes the task's older messages now.
pub fn compact(host: &Host, task: TaskId, model_id: Option<&str>, json: bool) -> Result<String> {
    host.task(task)?;
    let runtime = crate::runtime(None)?;
    match runtime.block_on(host.compact(task, model_id)) {
        Ok(Some(done)) => Ok(if json {
            format!(
                "{}\n",
                serde_json::json!({"compacted": true, "tokensBefore": done.tokens_before, "tokensAfter": done.tokens_after})
            )
        } else {
            format!(
                "Compacted task {task}: about {} → {} tokens. The earlier messages stay in the task, marked as compacted.\n",
                done.tokens_before, done.tokens_after
            )
        }),
        Ok(None) => Ok(if json {
            format!("{}\n", serde_json::json!({"compacted": false}))
        } else {
            "Nothing to compact: the task's history is already short.\n".to_string()
        }),
        Err(e) => Err(HostError::new(
            e.kind,
            format!("{}{}", e.message, hint(host, e.kind, Some(task), model_id)),
        )),
    }
}

/// The first run in a project whose folder defines agents, commands or skills: on a terminal,
/// says what it defines and asks whether to trust it; otherwise says they are not used and how
/// to trust it. Until trusted only the user's own and the built-in ones apply.
fn trust_step(host: &Host, project: codewright_protocol::ProjectId, json: bool) -> Result<()> {
    let trust = host.project_trust(project)?;
    if !trust.ask {
        return Ok(());
    }
    let defines = visible::escaped(&trust.defines.summary()).into_owned();
    if !json && std::io::stdin().is_terminal() {
        let answer = crate::tools::read_line(format!(
            "\n? This project's folder defines its own {defines} (in .codewright/ or .claude/). They change what the agent is told and may do. Trust this project and use them? [y/N] "
        ));
        if answer.is_some_and(|a| matches!(a.to_lowercase().as_str(), "y" | "yes")) {
            host.set_project_trusted(project, true)?;
            eprintln!(
                "codewright-cli: project {} is trusted; its {defines} are used",
                project.0
            );
            return Ok(());
        }
    }
    eprintln!(
        "codewright-cli: this project's own {defines} are not used until you trust it: codewright-cli projects settings {} --trusted on",
        project.0
    );
    Ok(())
}

/// `--implement ID` and `--implement-all`: each task file in a new task of its own, marked done
/// in the file when its run finishes.
fn implement(host: Host, home: &Path, args: ExecArgs, json: bool) -> Result<ExitCode> {
    let project = found_or_added(&host, args.project.as_ref())?;
    trust_step(&host, project, json)?;
    let root = PathBuf::from(host.project(project)?.root_path);
    let chosen: Vec<_> = match &args.implement {
        Some(id) => vec![codewright_host::task_files::find(&root, id)?],
        None => codewright_extensions::task_files::discover(&root)
            .0
            .into_iter()
            .filter(|f| !f.is_done())
            .collect(),
    };
    if chosen.is_empty() {
        eprintln!("codewright-cli: every task file is done already");
        return Ok(ExitCode::SUCCESS);
    }
    // Each file's run has a host of its own (as a separate `exec` would): the first is this one.
    let mut host = Some(host);
    for file in chosen {
        let host = match host.take() {
            Some(host) => host,
            None => crate::open_host(home, Some(args.max_iterations))?,
        };
        let shown = file
            .path
            .strip_prefix(&root)
            .unwrap_or(&file.path)
            .display()
            .to_string();
        let (title, prompt) = codewright_host::task_files::request(&root, &file);
        let run = ExecArgs {
            project: Some(ProjectArg::Id(project)),
            implement: None,
            implement_all: false,
            prompt: Some(prompt),
            title: Some(title),
            ..args.clone()
        };
        let code = exec(host, home, run, json)?;
        if code != ExitCode::SUCCESS {
            eprintln!(
                "codewright-cli: {} did not finish; its file stays as it was",
                file.id
            );
            return Ok(code);
        }
        codewright_extensions::task_files::set_status(&file, "done")?;
        if !json {
            eprintln!("codewright-cli: {} is done (marked in {shown})", file.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How to do what an action command does from the command line.
fn cli_equivalent(action: Action, task: Option<TaskId>) -> String {
    let id = task.map_or("ID".to_string(), |t| t.to_string());
    match action {
        Action::New | Action::Clear => {
            "`codewright-cli exec \"PROMPT\"` without --task (each starts a new task)".into()
        }
        Action::Compact => format!("`codewright-cli tasks compact {id}`"),
        Action::Model => "`--model MODEL@PROVIDER` with --task (the task keeps it)".into(),
        Action::Mode => "`--mode MODE` (normal, accept-edits, plan or yolo)".into(),
        Action::Agent => "`--agent NAME` (`codewright-cli agents` lists them)".into(),
        Action::Undo => format!(
            "`codewright-cli checkpoints list {id}`, then `checkpoints restore {id} --turn N`"
        ),
        Action::Cost => format!("`codewright-cli tasks show {id}`"),
        Action::Skills => format!("`codewright-cli skills list --task {id}`"),
        Action::Mcp => "`codewright-cli mcp list`".into(),
        Action::Memory => "the files .codewright/memory.md (the project's) and ~/.codewright/memory.md (yours), in any editor".into(),
        Action::Help => "`codewright-cli exec /help`".into(),
    }
}

/// The commands, one per line: `/name HINT  description (origin)`.
fn help(list: &commands::CommandList) -> String {
    let mut out = String::new();
    for c in &list.commands {
        let usage = match &c.argument_hint {
            Some(hint) => format!("/{} {hint}", c.name),
            None => format!("/{}", c.name),
        };
        let origin = if c.origin == "built-in" {
            String::new()
        } else {
            format!(" ({})", c.origin)
        };
        out.push_str(&format!("{usage:<28} {}{origin}\n", c.description));
    }
    out.push_str(&crate::output::not_loaded(&list.broken));
    out
}
