//! A project's task files (`.codewright/tasks/*.md`, and ayder's `.ayder/tasks/`): listed, and
//! implemented — each in a new task of its own whose first message asks for it, the file marked
//! done when that task's run finishes done. Used by `codewright-cli exec --implement` and the
//! main window's Run buttons.

use crate::{store_error, Host, HostError, RunOptions};
use codewright_extensions::task_files::{self, TaskFile};
use codewright_extensions::Broken;
use codewright_protocol::{AgentEvent, ErrorKind, Message, ProjectId, RunOutcome, TaskId};
use codewright_store::Store;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A project's task files, sorted by id, and the files that could not be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFiles {
    pub files: Vec<TaskFile>,
    pub broken: Vec<Broken>,
}

/// The task files of a project; every path is a full one, as the files are found.
pub fn list(store: &Store, project: ProjectId) -> Result<TaskFiles, HostError> {
    let (files, broken) = task_files::discover(&root(store, project)?);
    Ok(TaskFiles { files, broken })
}

/// The task file `id` of the project at `root`, or an error that names the ones there are.
pub fn find(root: &Path, id: &str) -> Result<TaskFile, HostError> {
    let (files, _) = task_files::discover(root);
    if let Some(file) = files.iter().find(|f| f.id == id) {
        return Ok(file.clone());
    }
    let ids: Vec<&str> = files.iter().map(|f| f.id.as_str()).collect();
    Err(HostError::new(
        ErrorKind::NotFound,
        if ids.is_empty() {
            format!("there is no task file {id}: the project has none (they are Markdown files in .codewright/tasks or .ayder/tasks)")
        } else {
            format!(
                "there is no task file {id}; the project's are: {}",
                ids.join(", ")
            )
        },
    ))
}

/// The title of the task that implements `file`, and its first message.
pub fn request(root: &Path, file: &TaskFile) -> (String, String) {
    let shown = file.path.strip_prefix(root).unwrap_or(&file.path).display();
    (
        format!("{}: {}", file.id, file.title),
        format!(
            "Implement the task in the task file {shown} (id {}):\n\n{}\n\nWhen it is done and checked, say so briefly.",
            file.id, file.body
        ),
    )
}

fn root(store: &Store, project: ProjectId) -> Result<PathBuf, HostError> {
    Ok(PathBuf::from(
        store.project(project).map_err(store_error)?.root_path,
    ))
}

impl Host {
    /// The project's task files, and those that cannot be read.
    pub fn task_files(&self, project: ProjectId) -> Result<TaskFiles, HostError> {
        list(&self.inner.store(), project)
    }

    /// Starts implementing the project's task file `id` in a new task (returned): its first
    /// message asks for the file's work, and the file is marked done when a run of that task
    /// finishes done while this host runs. The task's `taskFile` setting names the file (and
    /// says when it was marked done), so that its windows hear of it.
    pub async fn implement(&self, project: ProjectId, id: &str) -> Result<TaskId, HostError> {
        let (file, task) = {
            let store = self.inner.store();
            let root = root(&store, project)?;
            let file = find(&root, id)?;
            let (title, prompt) = request(&root, &file);
            let task = store
                .add_task_with(project, &title, &Message::user(prompt))
                .map_err(store_error)?;
            store
                .set_task_setting(
                    task.id,
                    "taskFile",
                    serde_json::json!({ "id": file.id, "done": false }),
                )
                .map_err(store_error)?;
            (file, task.id)
        };
        // Listening before the run starts: its end cannot be missed. A run that cannot start
        // (no model yet) leaves the task to be continued: its end still marks the file.
        let mut events = self.subscribe(Some(task));
        let store = self.inner.store.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                // (Not done while a check its message named still fails.)
                if let AgentEvent::RunFinished {
                    outcome: RunOutcome::Done,
                    work,
                    ..
                } = event
                {
                    if !work.failing.is_empty() {
                        break;
                    }
                    let marked = task_files::set_status(&file, "done");
                    if let Err(e) = &marked {
                        eprintln!(
                            "codewright: {} is done, but its file could not be marked: {e}",
                            file.id
                        );
                    }
                    let store = store.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = store.set_task_setting(
                        task,
                        "taskFile",
                        serde_json::json!({ "id": file.id, "done": marked.is_ok() }),
                    );
                    break;
                }
            }
        });
        self.send(task, None, RunOptions::default())
            .await
            .map_err(HostError::saved)?;
        Ok(task)
    }
}
