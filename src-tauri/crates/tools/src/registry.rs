//! The tools the model may call, and the one entry point that runs a call: unknown tools,
//! malformed JSON and schema violations become error results that quote the problem.

use crate::{CallContext, Tool, ToolOutput};
use codewright_protocol::ToolSpec;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

struct Entry {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

/// A set of tools by name.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    /// What providers are told, made once at registration (schemas are generated).
    specs: Vec<ToolSpec>,
    by_name: HashMap<String, usize>,
}

impl Registry {
    /// The built-in tools.
    pub fn builtin() -> Registry {
        let mut registry = Registry::default();
        for tool in crate::builtin::all() {
            registry
                .register(tool)
                .expect("built-in tools have valid names and schemas");
        }
        registry
    }

    /// Adds a tool. Fails on a name providers would refuse, a name already taken, or a schema
    /// that does not compile.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let name = tool.name().to_string();
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "invalid tool name {name:?}: use 1–64 letters, digits, _ or -"
            ));
        }
        if self.by_name.contains_key(&name) {
            return Err(format!("a tool named {name} already exists"));
        }
        let input_schema = tool.input_schema();
        let validator = jsonschema::validator_for(&input_schema)
            .map_err(|e| format!("the input schema of {name} is invalid: {e}"))?;
        self.specs.push(ToolSpec {
            name: name.clone(),
            description: tool.description().to_string(),
            input_schema,
        });
        self.by_name.insert(name, self.entries.len());
        self.entries.push(Entry { tool, validator });
        Ok(())
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).map(|i| &self.entries[*i].tool)
    }

    /// What providers are told about the tools, in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Runs one call with the model's raw JSON `arguments`. Never panics: every problem is an
    /// error result saying what to fix.
    pub async fn call(&self, name: &str, arguments: &str, cx: &CallContext) -> ToolOutput {
        let Some(&index) = self.by_name.get(name) else {
            let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            names.sort_unstable();
            return ToolOutput::error(format!(
                "there is no tool named {name:?}. Available tools: {}",
                names.join(", ")
            ));
        };
        let entry = &self.entries[index];
        let input: Value = if arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str(arguments) {
                Ok(v) => v,
                Err(e) => {
                    let snippet: String = arguments.chars().take(200).collect();
                    return ToolOutput::error(format!(
                        "the arguments are not valid JSON ({e}): {snippet}{}. Send a JSON object matching the {name} schema.",
                        if arguments.chars().count() > 200 { "…" } else { "" }
                    ));
                }
            }
        };
        let problems: Vec<String> = entry
            .validator
            .iter_errors(&input)
            .map(|e| {
                let at = e.instance_path().as_str().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return ToolOutput::error(format!(
                "invalid arguments for {name}: {}. Fix them and call it again.",
                problems.join("; ")
            ));
        }
        entry.tool.run(input, cx).await
    }
}
