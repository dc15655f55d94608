//! `codewright-cli`: Codewright without a window. Works on the same data folder as the desktop
//! app, at the same time; every change it makes shows up in the app's open windows.

mod agents;
mod chat;
mod error;
mod exec;
mod mcp;
mod output;
mod project_arg;
mod providers;
mod records;
mod skills;
mod tools;
mod worktrees;

use clap::{Parser, Subcommand};
use codewright_host::{default_data_dir, Host, HostError};
use codewright_protocol::ErrorKind;
use error::Result;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "codewright-cli",
    version,
    about = "Codewright from the command line"
)]
struct Cli {
    /// Data folder (default: $CODEWRIGHT_HOME, else ~/.local/share/codewright).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Print JSON instead of text; an error is then also one line on stdout,
    /// `{"type":"error","kind":"notFound","message":"…"}` (as the event streams give theirs).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Projects: folders Codewright works in.
    #[command(subcommand)]
    Projects(records::ProjectsCommand),
    /// Tasks: conversations with the agent inside a project.
    #[command(subcommand)]
    Tasks(records::TasksCommand),
    /// Model providers (built-in and custom).
    #[command(subcommand)]
    Providers(providers::ProvidersCommand),
    /// Models, their limits and prices.
    #[command(subcommand)]
    Models(providers::ModelsCommand),
    /// API keys in the system keyring.
    #[command(subcommand)]
    Auth(providers::AuthCommand),
    /// Ask a model one question and stream the answer (no tools).
    Chat(chat::ChatArgs),
    /// Run the agent on a task to the end (reads, edits, commands, with approvals).
    ///
    /// Exit status: 0 done, 1 error, 2 usage error, 3 done but a check the message named (such
    /// as `python3 -m pytest -q`) still fails, 130 stopped.
    Exec(exec::ExecArgs),
    /// The agent's tools: list them, or run one as the agent would.
    #[command(subcommand)]
    Tool(tools::ToolCommand),
    /// Permission rules a project saved ("always allow").
    #[command(subcommand)]
    Rules(tools::RulesCommand),
    /// MCP servers: add, import, list, their tools, call one.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Agents (coder, planner, reviewer, explorer, and Markdown files of your own): list them.
    Agents(agents::AgentsArgs),
    /// Skills (folders with a SKILL.md): list them, show one, switch one on or off for a task.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Undo the agent's file changes, turn by turn.
    #[command(subcommand)]
    Checkpoints(tools::CheckpointsCommand),
}

fn main() -> ExitCode {
    // Commands it runs cannot read its environment (the provider keys) from /proc.
    codewright_tools::protect_own_environment();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // Clap's message is several lines; keep the first, the one that says what is wrong.
            let rendered = e.to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            eprintln!(
                "codewright-cli: {} (see --help)",
                first.trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    match run(cli) {
        Ok(Finished::Code(code)) => code,
        Ok(Finished::Print(output)) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout
                .write_all(output.as_bytes())
                .and_then(|()| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            if json {
                // (A closed pipe is no reason to panic.)
                let _ = writeln!(std::io::stdout().lock(), "{}", error::json(&e));
            }
            eprintln!("codewright-cli: {}", e.message.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

/// What a command left to do.
enum Finished {
    /// Print this and exit 0.
    Print(String),
    /// It printed as it went; exit with this code.
    Code(ExitCode),
}

/// Opens the data folder (through the host, the one door into it); while another process holds
/// its database (the store waits up to 10 s for a write to finish), says so on stderr after a
/// second instead of sitting silent. `max_iterations` bounds each run's model requests.
pub(crate) fn open_host(home: &std::path::Path, max_iterations: Option<u32>) -> Result<Host> {
    let (done, waiting) = std::sync::mpsc::channel::<()>();
    let shown = home.join(codewright_host::DB_FILE_NAME);
    let notice = std::thread::spawn(move || {
        if waiting.recv_timeout(std::time::Duration::from_secs(1))
            == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        {
            eprintln!(
                "codewright-cli: waiting for the database {} — another process is writing to it…",
                shown.display()
            );
        }
    });
    let opened = Host::open(home, max_iterations);
    let _ = done.send(());
    let _ = notice.join();
    opened
}

/// An async runtime for one command: on this thread (`None`), or with that many workers.
pub(crate) fn runtime(workers: Option<usize>) -> Result<tokio::runtime::Runtime> {
    let mut builder = match workers {
        None => tokio::runtime::Builder::new_current_thread(),
        Some(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
    };
    builder.enable_all().build().map_err(|e| {
        HostError::new(
            ErrorKind::Setup,
            format!("cannot start the async runtime: {e}"),
        )
    })
}

/// Runs one command.
fn run(cli: Cli) -> Result<Finished> {
    let home = cli.home.or_else(default_data_dir).ok_or_else(|| {
        HostError::new(
            ErrorKind::DataDir,
            "cannot find a home folder for the data; pass --home DIR or set CODEWRIGHT_HOME",
        )
    })?;
    let max_iterations = match &cli.command {
        Command::Exec(args) => Some(args.max_iterations),
        _ => None,
    };
    let host = open_host(&home, max_iterations)?;
    let json = cli.json;
    match cli.command {
        Command::Exec(args) => return exec::exec(host, &home, args, json).map(Finished::Code),
        Command::Chat(args) => return chat::chat(host, args, json).map(Finished::Code),
        Command::Tasks(records::TasksCommand::Compact { id, model }) => {
            return exec::compact(&host, id, model.as_deref(), json).map(Finished::Print)
        }
        _ => {}
    }
    let text = match cli.command {
        Command::Projects(command) => records::projects(&host, command, json),
        Command::Tasks(command) => records::tasks(&host, command, json),
        Command::Providers(command) => providers::providers(&host, command, json),
        Command::Models(command) => providers::models(&host, command, json),
        Command::Auth(command) => providers::auth(&host, command),
        Command::Tool(command) => tools::tool(&host, command, json),
        Command::Rules(command) => tools::rules(&host, command, json),
        Command::Mcp(command) => mcp::mcp(&host, command, json),
        Command::Agents(args) => agents::agents(&host, args, json),
        Command::Skills(command) => skills::skills(&host, command, json),
        Command::Checkpoints(command) => tools::checkpoints(&host, command, json),
        Command::Exec(_) | Command::Chat(_) => unreachable!("handled above"),
    }?;
    Ok(Finished::Print(text))
}
