//! Projects and tasks as front ends list, add, rename and remove them, and everything a task
//! window shows when it opens ([`TaskView`]).

use crate::models::ModelChoice;
use crate::{Host, HostError, Running, TaskOptions};
use codewright_protocol::{
    AgentState, ApprovalRequest, Checkpoint, Compaction, ErrorKind, Message, MessageRecord, Part,
    Project, ProjectId, ProjectSettings, Question, SearchHit, Task, TaskId, WorktreeState,
};
use codewright_store::CallState;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Everything a task window shows when it opens.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    pub task: Task,
    /// The newest page, oldest first.
    pub messages: Vec<MessageRecord>,
    pub has_older: bool,
    /// Where the run is, when one is live in this process (`None`: not running here).
    pub state: Option<AgentState>,
    /// Approvals and questions waiting now: a reopened window shows them again.
    pub approvals: Vec<ApprovalRequest>,
    pub questions: Vec<Question>,
    pub checkpoints: Vec<Checkpoint>,
    /// Every summary of earlier messages, oldest first: each shows where it starts.
    pub compactions: Vec<Compaction>,
    pub options: TaskOptions,
    pub models: Vec<ModelChoice>,
    /// The main role's model: what the task uses while it has none of its own.
    pub main_model: Option<String>,
    /// Where each call of the latest answer got to, as recorded while it ran: a window opened
    /// mid-run or after a crash shows calls that finished, run, or were cut short.
    pub calls: Vec<CallView>,
    /// Messages sent while the agent worked and not delivered yet (kept through a crash: the
    /// task's next run delivers them), oldest first.
    pub queued: Vec<Message>,
}

/// Where one tool call got to (the store's `CallState`, for the view).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum CallView {
    /// Waiting for the user: it has not run.
    #[serde(rename_all = "camelCase")]
    Asking { call_id: String },
    /// Running, or allowed to run: after a crash, it may or may not have taken effect.
    #[serde(rename_all = "camelCase")]
    Running { call_id: String },
    /// Done: its result, before the answer's results are stored together.
    #[serde(rename_all = "camelCase")]
    Finished { call_id: String, result: Part },
}

/// What a sub-agent did for one of a task's `agent` calls: its agent, where its run got to and
/// its conversation (the job first).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentWork {
    pub agent: String,
    pub status: codewright_protocol::TaskStatus,
    pub messages: Vec<MessageRecord>,
}

impl Host {
    /// Every project, by name.
    pub fn projects(&self) -> Result<Vec<Project>, HostError> {
        Ok(self.inner.store().projects()?)
    }

    pub fn project(&self, id: ProjectId) -> Result<Project, HostError> {
        Ok(self.inner.store().project(id)?)
    }

    /// Adds the folder `path` (absolute) as a project, named `name` or after the folder.
    pub fn add_project(&self, path: &Path, name: Option<&str>) -> Result<Project, HostError> {
        Ok(self.inner.store().add_project(path, name)?)
    }

    /// The project whose folder is `dir`, added first when there is none.
    pub fn project_in(&self, dir: &Path) -> Result<ProjectId, HostError> {
        let dir = dir.canonicalize().map_err(|e| {
            HostError::new(
                ErrorKind::BadPath,
                format!("cannot open {}: {e}", dir.display()),
            )
        })?;
        let store = self.inner.store();
        let found = store
            .projects()?
            .into_iter()
            .find(|p| Path::new(&p.root_path) == dir);
        match found {
            Some(project) => Ok(project.id),
            None => Ok(store.add_project(&dir, None)?.id),
        }
    }

    /// The project whose folder is `dir` or holds it (the innermost), if there is one.
    pub fn project_containing(&self, dir: &Path) -> Result<Option<ProjectId>, HostError> {
        let dir = dir.canonicalize().map_err(|e| {
            HostError::new(
                ErrorKind::BadPath,
                format!("cannot open {}: {e}", dir.display()),
            )
        })?;
        Ok(self
            .inner
            .store()
            .projects()?
            .into_iter()
            .filter(|p| dir.starts_with(&p.root_path))
            .max_by_key(|p| p.root_path.len())
            .map(|p| p.id))
    }

    pub fn rename_project(&self, id: ProjectId, name: &str) -> Result<Project, HostError> {
        Ok(self.inner.store().rename_project(id, name)?)
    }

    /// Removes the project and its tasks from Codewright (their runs stop first); the folder
    /// on disk is never touched. Each task's worktree is discarded first, its work kept under
    /// the task's archive ref; when one cannot be, nothing is removed.
    pub fn remove_project(&self, id: ProjectId) -> Result<(), HostError> {
        let tasks = self.inner.store().tasks(id)?;
        for task in &tasks {
            self.close_task(task.id);
        }
        for task in &tasks {
            if task.worktree.as_ref().is_some_and(|t| {
                t.state == WorktreeState::Active && Path::new(&t.path).join(".git").exists()
            }) {
                self.discard_task(task.id)?;
            }
        }
        Ok(self.inner.store().remove_project(id)?)
    }

    /// The settings a project keeps (sandbox, private network, environment, trust).
    pub fn project_settings(&self, id: ProjectId) -> Result<ProjectSettings, HostError> {
        Ok(self.inner.store().project_settings(id)?)
    }

    pub fn set_project_settings(
        &self,
        id: ProjectId,
        settings: &ProjectSettings,
    ) -> Result<(), HostError> {
        Ok(self.inner.store().set_project_settings(id, settings)?)
    }

    /// The project's tasks, most recently active first.
    pub fn tasks(&self, project: ProjectId) -> Result<Vec<Task>, HostError> {
        Ok(self.inner.store().tasks(project)?)
    }

    pub fn task(&self, id: TaskId) -> Result<Task, HostError> {
        Ok(self.inner.store().task(id)?)
    }

    /// A new task with no messages yet.
    pub fn add_task(&self, project: ProjectId, title: &str) -> Result<Task, HostError> {
        Ok(self.inner.store().add_task(project, title)?)
    }

    /// A new task stored together with its first message, so nothing after (the model lookup,
    /// servers starting, a crash) can lose it; titled `title`, else after the message.
    pub fn add_task_with(
        &self,
        project: ProjectId,
        title: Option<&str>,
        first: &Message,
    ) -> Result<Task, HostError> {
        let title = match title {
            Some(title) => title.to_string(),
            None => Task::title_from(&first.text()),
        };
        Ok(self.inner.store().add_task_with(project, &title, first)?)
    }

    pub fn rename_task(&self, id: TaskId, title: &str) -> Result<Task, HostError> {
        Ok(self.inner.store().rename_task(id, title)?)
    }

    /// Deletes the task: its run stops and its background processes end with it. A worktree of
    /// its own is discarded first — its work kept under `refs/codewright/archive/<task>` — and
    /// when that fails the task stays, with the error.
    pub fn remove_task(&self, id: TaskId) -> Result<(), HostError> {
        self.close_task(id);
        // (A folder removed by hand has nothing left to keep: its commits are on its branch.)
        let task = self.task(id)?;
        let active = task.worktree.as_ref().is_some_and(|t| {
            t.state == WorktreeState::Active && Path::new(&t.path).join(".git").exists()
        });
        if active {
            self.discard_task(id)?;
        } else if let Some(tree) = &task.worktree {
            // (Discarding ends them; a folder removed by hand did not.)
            self.close_servers_in(task.project_id, &tree.root());
        }
        Ok(self.inner.store().remove_task(id)?)
    }

    /// The user has seen the task's latest result.
    pub fn mark_task_read(&self, id: TaskId) -> Result<(), HostError> {
        Ok(self.inner.store().mark_task_read(id)?)
    }

    /// Every message of the task, oldest first.
    pub fn history(&self, id: TaskId) -> Result<Vec<MessageRecord>, HostError> {
        Ok(self.inner.store().history(id)?)
    }

    /// Up to `limit` messages before `before_seq` (`None`: the newest), oldest first.
    pub fn messages(
        &self,
        task: TaskId,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<MessageRecord>, HostError> {
        let mut page = self.inner.store().messages(task, before_seq, limit)?;
        page.reverse();
        Ok(page)
    }

    /// The task's checkpoints, one per turn that changed files.
    pub fn checkpoints(&self, task: TaskId) -> Result<Vec<Checkpoint>, HostError> {
        Ok(self.inner.store().checkpoints(task)?)
    }

    /// Full-text search across every conversation, best matches first.
    pub fn search_messages(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, HostError> {
        Ok(self.inner.store().search_messages(query, limit)?)
    }

    /// Tasks of every project whose title holds all of `words`, most recently active first.
    pub fn find_tasks(&self, words: &str, limit: usize) -> Result<Vec<Task>, HostError> {
        Ok(self.inner.store().find_tasks(words, limit)?)
    }

    /// The tasks of every project that need the user (an approval or a question waiting, a
    /// result not yet seen).
    pub fn tasks_needing_you(&self) -> Result<Vec<Task>, HostError> {
        Ok(self.inner.store().tasks_needing_you()?)
    }

    /// Everything a task window shows when it opens: the newest `page` messages and whatever
    /// waits for the user.
    pub fn task_view(&self, task_id: TaskId, page: usize) -> Result<TaskView, HostError> {
        let (task, mut messages, checkpoints, compactions, calls, queued, models, main_model) = {
            let store = self.inner.store();
            (
                store.task(task_id)?,
                store.messages(task_id, None, page + 1)?,
                store.checkpoints(task_id)?,
                store.compactions(task_id)?,
                store.call_states(task_id)?,
                store.queued_messages(task_id)?,
                crate::models::choices(&store)?,
                crate::models::main_model(&store)?,
            )
        };
        let queued = queued.into_iter().map(|(_, message)| message).collect();
        let calls = calls
            .into_iter()
            .map(|(call_id, state)| match state {
                CallState::Asking => CallView::Asking { call_id },
                CallState::Running => CallView::Running { call_id },
                CallState::Finished(result) => CallView::Finished { call_id, result },
            })
            .collect();
        let has_older = messages.len() > page;
        messages.truncate(page);
        messages.reverse();
        let (state, approvals, questions) = match self.running(task_id) {
            Some(Running {
                state,
                approvals,
                questions,
            }) => (Some(state), approvals, questions),
            None => (None, Vec::new(), Vec::new()),
        };
        Ok(TaskView {
            task,
            messages,
            has_older,
            state,
            approvals,
            questions,
            checkpoints,
            compactions,
            options: self.options(task_id)?,
            models,
            main_model,
            calls,
            queued,
        })
    }

    /// The folder the task works in.
    pub fn task_root(&self, task: TaskId) -> Result<PathBuf, HostError> {
        Ok(self.inner.store().task_root(task)?)
    }

    /// The folder whose files the project's Files view shows: the project's own folder, or with
    /// `task` that task's worktree — refused when the task is another project's or has no
    /// worktree on disk.
    pub fn files_root(
        &self,
        project: ProjectId,
        task: Option<TaskId>,
    ) -> Result<PathBuf, HostError> {
        let store = self.inner.store();
        let root = PathBuf::from(store.project(project)?.root_path);
        let Some(task) = task else { return Ok(root) };
        let task = store.task(task)?;
        match task.active_worktree() {
            Some(tree) if task.project_id == project => Ok(tree.root()),
            _ => Err(HostError::new(
                ErrorKind::NotFound,
                format!(
                    "“{}” has no worktree of this project on disk any more: choose the project folder.",
                    task.title
                ),
            )),
        }
    }

    /// The work of the sub-agent the task's call `call_id` started; `None` when the call
    /// started none (it failed before).
    pub fn sub_agent_work(
        &self,
        task: TaskId,
        call_id: &str,
    ) -> Result<Option<SubAgentWork>, HostError> {
        let store = self.inner.store();
        let Some(child) = store
            .child_tasks(task)?
            .into_iter()
            // The newest: a provider without call ids repeats them from one answer to the next.
            .rev()
            .find(|c| c.parent.as_ref().is_some_and(|p| p.call == call_id))
        else {
            return Ok(None);
        };
        Ok(Some(SubAgentWork {
            agent: child
                .settings
                .get(codewright_agent::AGENT)
                .and_then(|a| a.as_str())
                .unwrap_or(codewright_extensions::agents::DEFAULT)
                .to_string(),
            status: child.status,
            messages: store.history(child.id)?,
        }))
    }
}
