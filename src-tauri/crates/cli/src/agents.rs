//! `agents`: the agents a project offers (built in, the project's and yours, in `.codewright/agents`
//! or `.claude/agents`), with the tools each may use, and the files that are not usable agents.
//! With `--task`, which one the task runs as; `exec --agent NAME` chooses.

use crate::error::Result;
use crate::output::{table, to_json};
use crate::project_arg::{existing, ProjectArg};
use codewright_host::Host;
use codewright_protocol::TaskId;

#[derive(clap::Args)]
pub struct AgentsArgs {
    /// A project's id or folder (default: the current folder's project).
    #[arg(long, value_name = "ID|DIR")]
    project: Option<ProjectArg>,
    #[arg(long, value_name = "ID", conflicts_with = "project")]
    task: Option<TaskId>,
}

pub fn agents(host: &Host, args: AgentsArgs, json: bool) -> Result<String> {
    use codewright_host::agents::TaskAgents;
    let listed = match (args.task, args.project) {
        (Some(task), _) => host.task_agents(task)?,
        (None, project) => {
            let found = host.project_agents(existing(host, project.as_ref())?)?;
            TaskAgents {
                agents: found.agents,
                current: String::new(),
                broken: found.broken,
            }
        }
    };
    if json {
        return Ok(to_json(&listed));
    }
    let mut out = table(
        &["NAME", "", "FROM", "TOOLS", "DESCRIPTION"],
        listed.agents.iter().map(|a| {
            vec![
                a.name.clone(),
                if a.name == listed.current { "*" } else { "" }.into(),
                a.source.map_or("built-in", |s| s.label()).into(),
                a.tools
                    .as_ref()
                    .map_or("all".into(), |t| t.len().to_string()),
                a.description.chars().take(80).collect(),
            ]
        }),
    );
    out.push_str(&crate::output::not_loaded(&listed.broken));
    Ok(out)
}
