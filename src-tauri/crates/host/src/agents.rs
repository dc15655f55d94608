//! A task's agent as a person sees it: the agents a project offers (built-in, its own, the
//! user's; see [`codewright_extensions::agents`]), which one the task runs as, and the files that
//! could not be used. Used by `exec --agent`, `/agent` and the task window.

use crate::HostError;
use codewright_extensions::agents::{self, AgentDef, Agents};
use codewright_extensions::Broken;
use codewright_protocol::{ErrorKind, ProjectId, TaskId};
use codewright_store::Store;
use serde::Serialize;

/// The agents of a task's project, the one the task runs as, and the broken agent files.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAgents {
    pub agents: Vec<AgentDef>,
    /// The task's agent (the coder unless another was chosen).
    pub current: String,
    pub broken: Vec<Broken>,
}

/// The agents of a project: built in, its own, then the user's.
pub fn project_agents(store: &Store, project: ProjectId) -> Result<Agents, HostError> {
    Ok(agents::discover(&crate::places(store, project)?))
}

/// The agents of a task, and which one it runs as.
pub fn task_agents(store: &Store, task: TaskId) -> Result<TaskAgents, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    let found = project_agents(store, t.project_id)?;
    Ok(TaskAgents {
        current: chosen(&t).unwrap_or_else(|| agents::DEFAULT.to_string()),
        agents: found.agents,
        broken: found.broken,
    })
}

/// Makes `name` the task's agent, from its next message on; an unknown name is an error naming
/// the closest ones.
pub fn choose_agent(store: &Store, task: TaskId, name: &str) -> Result<TaskAgents, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    check_agent(store, t.project_id, name)?;
    store
        .set_task_setting(task, codewright_agent::AGENT, name.trim().into())
        .map_err(crate::store_error)?;
    task_agents(store, task)
}

/// Whether the project has an agent named `name` (an error naming the closest ones if not).
pub fn check_agent(store: &Store, project: ProjectId, name: &str) -> Result<(), HostError> {
    project_agents(store, project)?
        .find(name.trim())
        .map(|_| ())
        .map_err(|why| HostError::new(ErrorKind::NotFound, capitalized(&why.to_string())))
}

/// The model the run's agent asks for, if it names one (MODEL@PROVIDER): `for_run`'s (a slash
/// command's agent), else the task's.
pub(crate) fn agent_model(
    store: &Store,
    task: &codewright_protocol::Task,
    for_run: Option<&str>,
) -> Option<String> {
    let name = for_run.map(String::from).or_else(|| chosen(task))?;
    let places = crate::places(store, task.project_id).ok()?;
    let named = agents::discover(&places).get(&name)?.model.clone()?;
    crate::models::named_model_id(store, &named).ok()
}

fn chosen(task: &codewright_protocol::Task) -> Option<String> {
    task.settings
        .get(codewright_agent::AGENT)
        .and_then(|v| v.as_str())
        .map(String::from)
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl crate::Host {
    /// The agents a project's tasks can run as.
    pub fn project_agents(&self, project: ProjectId) -> Result<Agents, HostError> {
        project_agents(&self.inner.store(), project)
    }

    pub fn task_agents(&self, task: TaskId) -> Result<TaskAgents, HostError> {
        task_agents(&self.inner.store(), task)
    }

    /// The task runs as the agent `name` from its next run.
    pub fn choose_agent(&self, task: TaskId, name: &str) -> Result<TaskAgents, HostError> {
        choose_agent(&self.inner.store(), task, name)
    }

    /// Whether the project has an agent `name` (the error names the closest).
    pub fn check_agent(&self, project: ProjectId, name: &str) -> Result<(), HostError> {
        check_agent(&self.inner.store(), project, name)
    }
}
