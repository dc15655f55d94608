//! A task's skills as a person sees them: what is installed for its project (and why a skill
//! that is not usable is not), which are switched on for the task, and how the task ranks them
//! (TalkCody's conversation-skill priority: higher first in the prompt, preferred when several
//! fit). Used by the CLI's `skills` and the task window.

use crate::HostError;
use codewright_extensions::skills::{self, Catalog, Skill};
use codewright_extensions::Broken;
use codewright_protocol::{ErrorKind, ProjectId, TaskId};
use codewright_store::Store;
use serde::Serialize;

/// A skill and whether the task's runs offer it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSkill {
    #[serde(flatten)]
    pub skill: Skill,
    pub on: bool,
    /// Higher first; 0 unless the task ranks it.
    pub priority: i64,
}

/// The skills of a task's project, each on or off for the task, and the broken ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSkills {
    pub skills: Vec<TaskSkill>,
    pub broken: Vec<Broken>,
}

/// The skills installed for a project: its own, then the user's.
pub fn project_skills(store: &Store, project: ProjectId) -> Result<Catalog, HostError> {
    Ok(skills::discover(&crate::places(store, project)?))
}

/// The skills of a task, each on or off for it.
pub fn task_skills(store: &Store, task: TaskId) -> Result<TaskSkills, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    let off = switched_off(&t);
    let priority = priorities(&t);
    let catalog = project_skills(store, t.project_id)?.ranked(&priority);
    Ok(TaskSkills {
        skills: catalog
            .skills
            .into_iter()
            .map(|skill| TaskSkill {
                on: !off.contains(&skill.name),
                priority: priority.get(&skill.name).copied().unwrap_or(0),
                skill,
            })
            .collect(),
        broken: catalog.broken,
    })
}

/// Switches a skill on or off for a task, from its next message on.
pub fn switch_skill(
    store: &Store,
    task: TaskId,
    name: &str,
    on: bool,
) -> Result<TaskSkills, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    known(&project_skills(store, t.project_id)?, name)?;
    let mut off = switched_off(&t);
    off.retain(|n| n != name);
    if !on {
        off.push(name.to_string());
    }
    off.sort();
    store
        .set_task_setting(task, codewright_agent::SKILLS_OFF, serde_json::json!(off))
        .map_err(crate::store_error)?;
    task_skills(store, task)
}

/// Ranks a skill for a task, from its next message on: higher is listed first and preferred
/// when several fit; 0 is the default (the setting forgets it).
pub fn rank_skill(
    store: &Store,
    task: TaskId,
    name: &str,
    priority: i64,
) -> Result<TaskSkills, HostError> {
    let t = store.task(task).map_err(crate::store_error)?;
    known(&project_skills(store, t.project_id)?, name)?;
    let mut ranks = priorities(&t);
    ranks.remove(name);
    if priority != 0 {
        ranks.insert(name.to_string(), priority);
    }
    store
        .set_task_setting(
            task,
            codewright_agent::SKILL_PRIORITY,
            serde_json::json!(ranks),
        )
        .map_err(crate::store_error)?;
    task_skills(store, task)
}

/// An error naming the closest skills when `name` is not installed.
fn known(catalog: &Catalog, name: &str) -> Result<(), HostError> {
    if catalog.get(name).is_some() {
        return Ok(());
    }
    let closest = catalog.closest(name);
    let hint = if closest.is_empty() {
        String::new()
    } else {
        format!(" Did you mean {}?", closest.join(", "))
    };
    Err(HostError::new(
        ErrorKind::NotFound,
        format!("No skill named {name:?} is installed for this project.{hint}"),
    ))
}

fn priorities(task: &codewright_protocol::Task) -> std::collections::HashMap<String, i64> {
    task.settings
        .get(codewright_agent::SKILL_PRIORITY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

fn switched_off(task: &codewright_protocol::Task) -> Vec<String> {
    task.settings
        .get(codewright_agent::SKILLS_OFF)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

impl crate::Host {
    /// The skills a project's runs can use.
    pub fn project_skills(&self, project: ProjectId) -> Result<Catalog, HostError> {
        project_skills(&self.inner.store(), project)
    }

    /// A task's skills, in its order, with which are switched off.
    pub fn task_skills(&self, task: TaskId) -> Result<TaskSkills, HostError> {
        task_skills(&self.inner.store(), task)
    }

    pub fn switch_skill(
        &self,
        task: TaskId,
        name: &str,
        on: bool,
    ) -> Result<TaskSkills, HostError> {
        switch_skill(&self.inner.store(), task, name, on)
    }

    pub fn rank_skill(
        &self,
        task: TaskId,
        name: &str,
        priority: i64,
    ) -> Result<TaskSkills, HostError> {
        rank_skill(&self.inner.store(), task, name, priority)
    }
}
