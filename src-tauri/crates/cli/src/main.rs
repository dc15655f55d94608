//! `codewright-cli`: Codewright without a window. Works on the same data folder as the desktop
//! app, at the same time; every change it makes shows up in the app's open windows.

use clap::{Parser, Subcommand};
use codewright_protocol::{ProjectId, TaskId};
use codewright_store::{default_data_dir, Store};
use serde::Serialize;
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
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Projects: folders Codewright works in.
    #[command(subcommand)]
    Projects(ProjectsCommand),
    /// Tasks: conversations with the agent inside a project.
    #[command(subcommand)]
    Tasks(TasksCommand),
}

#[derive(Subcommand)]
enum ProjectsCommand {
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
}

#[derive(Subcommand)]
enum TasksCommand {
    /// List a project's tasks, most recent first.
    List {
        #[arg(long, value_name = "ID")]
        project: ProjectId,
    },
    /// Start a new task in a project.
    Add {
        #[arg(long, value_name = "ID")]
        project: ProjectId,
        title: String,
    },
    /// Rename a task.
    Rename { id: TaskId, title: String },
    /// Delete a task.
    Rm { id: TaskId },
}

fn main() -> ExitCode {
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
    match run(cli) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout
                .write_all(output.as_bytes())
                .and_then(|()| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("codewright-cli: {}", message.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

/// Runs one command and returns what to print.
fn run(cli: Cli) -> Result<String, String> {
    let home = cli
        .home
        .or_else(default_data_dir)
        .ok_or("cannot find a home folder for the data; pass --home DIR or set CODEWRIGHT_HOME")?;
    let store = Store::open_in(&home).map_err(|e| e.to_string())?;
    let json = cli.json;
    let out = match cli.command {
        Command::Projects(ProjectsCommand::List) => {
            let projects = store.projects().map_err(|e| e.to_string())?;
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
        Command::Projects(ProjectsCommand::Add { path, name }) => {
            let p = store
                .add_project(&path, name.as_deref())
                .map_err(|e| e.to_string())?;
            if json {
                to_json(&p)
            } else {
                format!("Added project {} \"{}\" ({})\n", p.id, p.name, p.root_path)
            }
        }
        Command::Projects(ProjectsCommand::Rename { id, name }) => {
            let p = store.rename_project(id, &name).map_err(|e| e.to_string())?;
            if json {
                to_json(&p)
            } else {
                format!("Renamed project {} to \"{}\"\n", p.id, p.name)
            }
        }
        Command::Projects(ProjectsCommand::Rm { id }) => {
            let p = store.project(id).map_err(|e| e.to_string())?;
            store.remove_project(id).map_err(|e| e.to_string())?;
            if json {
                to_json(&serde_json::json!({ "removed": p.id }))
            } else {
                format!(
                    "Removed project {} \"{}\" and its tasks; the folder {} was not touched\n",
                    p.id, p.name, p.root_path
                )
            }
        }
        Command::Tasks(TasksCommand::List { project }) => {
            let tasks = store.tasks(project).map_err(|e| e.to_string())?;
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
        Command::Tasks(TasksCommand::Add { project, title }) => {
            let t = store.add_task(project, &title).map_err(|e| e.to_string())?;
            if json {
                to_json(&t)
            } else {
                format!(
                    "Added task {} \"{}\" to project {}\n",
                    t.id, t.title, t.project_id
                )
            }
        }
        Command::Tasks(TasksCommand::Rename { id, title }) => {
            let t = store.rename_task(id, &title).map_err(|e| e.to_string())?;
            if json {
                to_json(&t)
            } else {
                format!("Renamed task {} to \"{}\"\n", t.id, t.title)
            }
        }
        Command::Tasks(TasksCommand::Rm { id }) => {
            let t = store.task(id).map_err(|e| e.to_string())?;
            store.remove_task(id).map_err(|e| e.to_string())?;
            if json {
                to_json(&serde_json::json!({ "removed": t.id }))
            } else {
                format!("Deleted task {} \"{}\"\n", t.id, t.title)
            }
        }
    };
    Ok(out)
}

fn to_json(value: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("records always serialize");
    s.push('\n');
    s
}

/// Left-aligned columns; the last column is not padded.
fn table(headers: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows.collect();
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].chars().count())
            .chain([headers[col].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..headers.len()).map(width).collect();
    let mut out = String::new();
    let header_row: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header_row).chain(rows.iter()) {
        for (col, cell) in row.iter().enumerate() {
            if col + 1 == row.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.extend(std::iter::repeat_n(
                    ' ',
                    widths[col] - cell.chars().count() + 2,
                ));
            }
        }
        out.push('\n');
    }
    out
}
