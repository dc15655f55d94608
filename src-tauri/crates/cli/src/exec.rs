//! `exec`: runs the agent loop on a task to the end, headless. Plain output is the assistant's
//! text and one line per tool call; `--json` prints every protocol event, one per line.
//! Approvals are asked on the terminal when there is one; otherwise whatever needs asking is
//! rejected with a message telling the model why. A prompt that is a slash command (`/review`,
//! a custom command) runs as the command's prompt; `/help` lists them.

use crate::output::to_json;
use crate::tools::{terminal_answer, terminal_decision};
use codewright_agent::{Agent, AgentConfig};
use codewright_host::commands::{self, Action, Resolved};
use codewright_host::{models, Host, HostError, RunOptions};
use codewright_llm::ModelRole;
use codewright_protocol::{
    visible, AgentEvent, Decision, ErrorKind, Message, PermissionMode, RunOutcome, TaskId,
};
use codewright_store::Store;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

#[derive(clap::Args, Clone)]
pub struct ExecArgs {
    /// The project folder (default: the current folder; added as a project if new).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
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
    /// Requests before the task pauses with a summary.
    #[arg(long, default_value_t = 100)]
    max_iterations: u32,
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

/// Runs `exec`; returns the exit code (0 done, 1 error, 130 stopped).
pub fn exec(store: Store, home: &Path, mut args: ExecArgs, json: bool) -> Result<ExitCode, String> {
    if args.implement.is_some() || args.implement_all {
        return implement(store, home, args, json);
    }
    let project = match args.task {
        Some(id) => {
            let task = store.task(id).map_err(|e| e.to_string())?;
            if let Some(dir) = &args.project {
                let project = store.project(task.project_id).map_err(|e| e.to_string())?;
                let dir = dir
                    .canonicalize()
                    .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
                if Path::new(&project.root_path) != dir {
                    return Err(format!(
                        "task {id} belongs to the project in {}, not {}",
                        project.root_path,
                        dir.display()
                    ));
                }
            }
            task.project_id
        }
        None => {
            if args.prompt.as_deref().unwrap_or("").trim().is_empty() {
                eprintln!("codewright-cli: say what the agent should do: codewright-cli exec \"PROMPT\" (or continue a task with --task ID)");
                return Ok(ExitCode::from(2));
            }
            let dir = match &args.project {
                Some(dir) => dir.clone(),
                None => std::env::current_dir()
                    .map_err(|e| format!("cannot read the current folder: {e}"))?,
            };
            find_or_add_project(&store, &dir)?
        }
    };
    trust_step(&store, project, json)?;
    // A slash command becomes its prompt (and its model); actions belong to other commands.
    if let Some(typed) = args.prompt.take() {
        match commands::resolve(&store, project, &typed).map_err(|e| e.message)? {
            Resolved::McpPrompt {
                server,
                prompt,
                arguments,
            } => {
                let row = codewright_host::mcp::prompt_server(&store, project, &server)?
                    .ok_or_else(|| format!("there is no MCP server {server}"))?;
                let asked =
                    codewright_host::mcp::prompt_text(&store, project, &row, &prompt, &arguments)?;
                let text = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the async runtime: {e}"))?
                    .block_on(asked)?;
                args.prompt = Some(text);
            }
            Resolved::Message { text } => args.prompt = Some(text),
            Resolved::Prompt {
                text,
                model,
                agent,
                tools,
            } => {
                args.prompt = Some(text);
                if args.model.is_none() {
                    args.model_once = model.is_some();
                    args.model = model;
                }
                args.this_run = codewright_agent::ThisRun { agent, tools };
            }
            Resolved::Action { action, .. } => {
                if action == Action::Help {
                    let list = commands::list(&store, project).map_err(|e| e.message)?;
                    out(&if json { to_json(&list) } else { help(&list) });
                    return Ok(ExitCode::SUCCESS);
                }
                return Err(format!(
                    "/{} is a command of the task window; here it is {}",
                    typed
                        .trim_start()
                        .trim_start_matches('/')
                        .split_whitespace()
                        .next()
                        .unwrap_or(""),
                    cli_equivalent(action, args.task)
                ));
            }
        }
    }
    if let Some(agent) = &args.agent {
        codewright_host::agents::check_agent(&store, project, agent).map_err(|e| e.message)?;
    }
    // A new task is stored with its prompt at once: nothing after (the model lookup, MCP
    // servers starting, a crash) can lose it. An existing task's message is sent to it.
    let mut send_text = args.prompt.clone();
    let args_task = args.task;
    let task = match args.task {
        Some(id) => store.task(id).map_err(|e| e.to_string())?,
        None => {
            let prompt = args.prompt.as_deref().unwrap_or("").trim();
            let first = Message::user(args.prompt.clone().unwrap_or_default());
            let task = store
                .add_task_with(
                    project,
                    &args.title.clone().unwrap_or_else(|| title_of(prompt)),
                    &first,
                )
                .map_err(|e| e.to_string())?;
            send_text = None;
            task
        }
    };
    if let Some(agent) = &args.agent {
        codewright_host::agents::choose_agent(&store, task.id, agent).map_err(|e| e.message)?;
    }
    // The app's setting, which this command shares.
    let max_subagents = codewright_host::settings::app_settings(&store).max_subagents;
    let interactive = std::io::stdin().is_terminal();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let mode = args.mode;
    let task_id = task.id;
    let host = Host::new(
        Arc::new(Mutex::new(store)),
        home.to_path_buf(),
        AgentConfig {
            max_iterations: args.max_iterations,
            max_subagents,
            ..AgentConfig::default()
        },
    );
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
        let mut outcome = RunOutcome::Failed;
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
                    eprintln!("codewright-cli: {}{}", visible::terminal_safe(message), hint(*kind))
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
                    outcome = *o;
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
            return Err(format!("{}{}{saved}", e.message, hint(e.kind)));
        }
    };
    Ok(match outcome {
        RunOutcome::Done | RunOutcome::Paused => ExitCode::SUCCESS,
        RunOutcome::Stopped => ExitCode::from(130),
        RunOutcome::Failed => ExitCode::FAILURE,
    })
}

/// What to do about an error, in the CLI's words.
fn hint(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NoModel => ": pass --model MODEL@PROVIDER, or set one with `codewright-cli models role main MODEL@PROVIDER`",
        ErrorKind::MissingKey | ErrorKind::Auth => " (keep a key with `codewright-cli auth set PROVIDER`, or set the provider's environment variable)",
        ErrorKind::UnknownModel => " (see `codewright-cli models list` and `codewright-cli providers list`)",
        ErrorKind::ContextOverflow => " (`codewright-cli tasks compact ID` compacts it now)",
        _ => "",
    }
}

/// `tasks compact ID`: summarizes the task's older messages now.
pub fn compact(
    store: Store,
    home: &Path,
    task: TaskId,
    model_id: Option<&str>,
    json: bool,
) -> Result<String, String> {
    store.task(task).map_err(|e| e.to_string())?;
    let model_id = match model_id {
        Some(id) => Some(id.to_string()),
        None => models::model_for(&store, ModelRole::Compaction)?.map(|(m, _)| m),
    };
    let model = models::resolve(&store, model_id.as_deref())
        .map_err(|e| format!("{}{}", e.message, hint(e.kind)))?;
    let agent = Agent::new(
        Arc::new(Mutex::new(store)),
        home.to_path_buf(),
        AgentConfig::default(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let compacted = runtime.block_on(agent.compact(task, model, tx));
    let mut report = None;
    let mut error = None;
    while let Ok(event) = rx.try_recv() {
        match event {
            AgentEvent::Compaction {
                tokens_before,
                tokens_after,
                ..
            } => report = Some((tokens_before, tokens_after)),
            AgentEvent::Error { message, .. } => error = Some(message),
            _ => {}
        }
    }
    match (compacted, report) {
        (Ok(true), Some((before, after))) => Ok(if json {
            format!(
                "{}\n",
                serde_json::json!({"compacted": true, "tokensBefore": before, "tokensAfter": after})
            )
        } else {
            format!("Compacted task {task}: about {before} → {after} tokens. The earlier messages stay in the task, marked as compacted.\n")
        }),
        (Ok(_), _) => Ok(if json {
            format!("{}\n", serde_json::json!({"compacted": false}))
        } else {
            "Nothing to compact: the task's history is already short.\n".to_string()
        }),
        (Err(e), _) => Err(error.unwrap_or(e)),
    }
}

/// The first run in a project whose folder defines agents, commands or skills: on a terminal,
/// says what it defines and asks whether to trust it; otherwise says they are not used and how
/// to trust it. Until trusted only the user's own and the built-in ones apply.
fn trust_step(
    store: &Store,
    project: codewright_protocol::ProjectId,
    json: bool,
) -> Result<(), String> {
    let trust = codewright_host::project::project_trust(store, project)?;
    if !trust.ask {
        return Ok(());
    }
    let defines = visible::escaped(&trust.defines.summary()).into_owned();
    if !json && std::io::stdin().is_terminal() {
        let answer = crate::tools::read_line(format!(
            "\n? This project's folder defines its own {defines} (in .codewright/ or .claude/). They change what the agent is told and may do. Trust this project and use them? [y/N] "
        ));
        if answer.is_some_and(|a| matches!(a.to_lowercase().as_str(), "y" | "yes")) {
            codewright_host::project::set_project_trusted(store, project, true)?;
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
fn implement(store: Store, home: &Path, args: ExecArgs, json: bool) -> Result<ExitCode, String> {
    let dir = match &args.project {
        Some(dir) => dir.clone(),
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?
        }
    };
    let project = find_or_add_project(&store, &dir)?;
    trust_step(&store, project, json)?;
    let root = PathBuf::from(store.project(project).map_err(|e| e.to_string())?.root_path);
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
    let mut store = Some(store);
    for file in chosen {
        let store = match store.take() {
            Some(store) => store,
            None => crate::open_store(home)?,
        };
        let shown = file
            .path
            .strip_prefix(&root)
            .unwrap_or(&file.path)
            .display()
            .to_string();
        let (title, prompt) = codewright_host::task_files::request(&root, &file);
        let run = ExecArgs {
            project: Some(root.clone()),
            implement: None,
            implement_all: false,
            prompt: Some(prompt),
            title: Some(title),
            ..args.clone()
        };
        let code = exec(store, home, run, json)?;
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

/// The project whose folder is `dir`, added if it is not one yet.
fn find_or_add_project(
    store: &Store,
    dir: &Path,
) -> Result<codewright_protocol::ProjectId, String> {
    let real = dir
        .canonicalize()
        .map_err(|e| format!("cannot open the project folder {}: {e}", dir.display()))?;
    let projects = store.projects().map_err(|e| e.to_string())?;
    if let Some(p) = projects.iter().find(|p| Path::new(&p.root_path) == real) {
        return Ok(p.id);
    }
    store
        .add_project(&real, None)
        .map(|p| p.id)
        .map_err(|e| e.to_string())
}

/// A task title from the prompt's first line.
fn title_of(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or("").trim();
    let mut title: String = line.chars().take(80).collect();
    if title.len() < line.len() {
        title.push('…');
    }
    title
}
