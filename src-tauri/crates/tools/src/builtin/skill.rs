//! `skill`: loads one of the skills the system prompt lists (its instructions and the list of its
//! files), or one of its files. Reading a skill the user installed asks nothing; running its
//! scripts goes through `bash` like any command.

use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::ToolCategory;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The name the model calls it by; a run offers it only when there are skills.
pub const NAME: &str = "skill";

pub struct LoadSkill;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The skill's name, as listed under Skills.
    #[schemars(length(min = 1))]
    name: String,
    /// One of the skill's files, relative to its folder (as listed when it is loaded); omit it to
    /// load the skill's instructions.
    file: Option<String>,
}

#[async_trait]
impl Tool for LoadSkill {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Load a skill listed under Skills in the system prompt: its instructions and the list of its files. Load it before doing work its description matches. Give `file` to read one of its files."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let installed = cx.session.extensions();
        let catalog = &installed.skills;
        let Some(skill) = catalog.get(input.name.trim()) else {
            let closest = catalog.closest(input.name.trim());
            let hint = if !closest.is_empty() {
                format!(" Did you mean {}?", closest.join(", "))
            } else if catalog.skills.is_empty() {
                " No skills are installed for this task.".to_string()
            } else {
                let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
                format!(" The skills are: {}.", names.join(", "))
            };
            return ToolOutput::error(format!("There is no skill named {:?}.{hint}", input.name));
        };
        let loaded = match &input.file {
            None => skill.load(),
            Some(file) => skill.read(file),
        };
        match loaded {
            Ok(text) => ToolOutput::text(text),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
