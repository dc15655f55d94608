//! `skills`: the skills installed for a project (and the folders that are not usable skills, with
//! the reason), one skill's instructions as the model gets them, and switching one on or off for
//! a task.

use crate::error::Result;
use crate::output::{table, to_json};
use crate::project_arg::{existing, ProjectArg};
use clap::Subcommand;
use codewright_host::{Host, HostError};
use codewright_protocol::{ErrorKind, TaskId};

#[derive(Subcommand)]
pub enum SkillsCommand {
    /// The skills of a project (`.codewright/skills`, `.claude/skills`, then the same under your
    /// home folder), or of a task with whether each is on for it.
    List {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
        #[arg(long, value_name = "ID", conflicts_with = "project")]
        task: Option<TaskId>,
    },
    /// A skill's instructions and files, as the model loads them.
    Show {
        name: String,
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
    },
    /// Offer a skill to a task's runs again (from its next message).
    On {
        name: String,
        #[arg(long, value_name = "ID")]
        task: TaskId,
    },
    /// Stop offering a skill to a task's runs (from its next message).
    Off {
        name: String,
        #[arg(long, value_name = "ID")]
        task: TaskId,
    },
    /// Rank a skill for a task: higher is listed first and preferred when several fit (0, the
    /// default, unranks it).
    Rank {
        name: String,
        #[arg(allow_negative_numbers = true)]
        priority: i64,
        #[arg(long, value_name = "ID")]
        task: TaskId,
    },
}

pub fn skills(host: &Host, command: SkillsCommand, json: bool) -> Result<String> {
    use codewright_host::skills::TaskSkill;
    let for_task = !matches!(command, SkillsCommand::List { task: None, .. });
    let listed = match command {
        SkillsCommand::List {
            task: Some(task), ..
        } => host.task_skills(task)?,
        SkillsCommand::List {
            project,
            task: None,
        } => {
            let catalog = host.project_skills(existing(host, project.as_ref())?)?;
            if json {
                return Ok(to_json(&catalog));
            }
            let skills = catalog
                .skills
                .into_iter()
                .map(|skill| TaskSkill {
                    skill,
                    on: true,
                    priority: 0,
                })
                .collect();
            codewright_host::skills::TaskSkills {
                skills,
                broken: catalog.broken,
            }
        }
        SkillsCommand::Show { name, project } => {
            let project = existing(host, project.as_ref())?;
            let catalog = host.project_skills(project)?;
            let Some(skill) = catalog.get(&name) else {
                let closest = catalog.closest(&name);
                return Err(HostError::new(
                    ErrorKind::NotFound,
                    if closest.is_empty() {
                        format!("no skill named {name:?} for this project (see `skills list --project {project}`)")
                    } else {
                        format!(
                            "no skill named {name:?}; did you mean {}?",
                            closest.join(", ")
                        )
                    },
                ));
            };
            let text = skill.load()?;
            return Ok(if json {
                to_json(&serde_json::json!({ "skill": skill, "loaded": text }))
            } else {
                format!("{text}\n")
            });
        }
        SkillsCommand::On { name, task } => host.switch_skill(task, &name, true)?,
        SkillsCommand::Off { name, task } => host.switch_skill(task, &name, false)?,
        SkillsCommand::Rank {
            name,
            priority,
            task,
        } => host.rank_skill(task, &name, priority)?,
    };
    if json {
        return Ok(to_json(&listed));
    }
    let mut out = if listed.skills.is_empty() {
        "No skills. A skill is a folder with a SKILL.md in .codewright/skills or .claude/skills (in the project or your home folder).\n".to_string()
    } else {
        let headers: &[&str] = if for_task {
            &["NAME", "ON", "PRIORITY", "FROM", "DESCRIPTION"]
        } else {
            &["NAME", "FROM", "DESCRIPTION"]
        };
        table(
            headers,
            listed.skills.iter().map(|s| {
                let mut row = vec![s.skill.name.clone()];
                if for_task {
                    row.push(if s.on { "yes" } else { "no" }.into());
                    row.push(s.priority.to_string());
                }
                row.push(s.skill.source.label().into());
                row.push(s.skill.description.chars().take(80).collect());
                row
            }),
        )
    };
    out.push_str(&crate::output::not_loaded(&listed.broken));
    Ok(out)
}
