//! The tools the model may call, and the one entry point that runs a call: unknown tools,
//! malformed JSON and schema violations become error results that quote the problem, and every
//! result is bounded (a tool or an MCP server answering with megabytes cannot fill the context).

use crate::{CallContext, Tool, ToolOutput};
use codewright_exec::output::{human_bytes, BoundedOutput};
use codewright_protocol::{ToolContent, ToolSpec};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

/// A set of tools by name.
#[derive(Default, Clone)]
pub struct Registry {
    entries: Vec<Entry>,
    /// What providers are told, made once at registration (schemas are generated).
    specs: Vec<ToolSpec>,
    by_name: HashMap<String, usize>,
}

/// Why a tool could not be added to a [`Registry`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A name providers would refuse.
    #[error("invalid tool name {0:?}: use 1–64 letters, digits, _ or -")]
    Name(String),
    /// A name another tool of the registry has.
    #[error("a tool named {0} already exists")]
    Taken(String),
    /// The tool's name and what the schema compiler said.
    #[error("the input schema of {0} is invalid: {1}")]
    Schema(String, String),
}

impl Registry {
    /// Adds a tool. Fails on a name providers would refuse, a name already taken, or a schema
    /// that does not compile.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let name = tool.name().to_string();
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(RegisterError::Name(name));
        }
        if self.by_name.contains_key(&name) {
            return Err(RegisterError::Taken(name));
        }
        let input_schema = tool.input_schema();
        let validator = jsonschema::validator_for(&input_schema)
            .map_err(|e| RegisterError::Schema(name.clone(), e.to_string()))?;
        self.specs.push(ToolSpec {
            name: name.clone(),
            description: tool.description().to_string(),
            input_schema,
        });
        self.by_name.insert(name, self.entries.len());
        self.entries.push(Entry { tool, validator });
        Ok(())
    }

    /// The tools whose names `keep` accepts, alone (an agent with an allow-list): a call to
    /// any other is answered as one to a tool that does not exist.
    pub fn only(&self, keep: impl Fn(&str) -> bool) -> Registry {
        let mut only = Registry::default();
        for (entry, spec) in self.entries.iter().zip(&self.specs) {
            if keep(&spec.name) {
                only.by_name.insert(spec.name.clone(), only.entries.len());
                only.entries.push(entry.clone());
                only.specs.push(spec.clone());
            }
        }
        only
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
        bounded(entry.tool.run(input, cx).await)
    }
}

/// Text kept from the start, and from the end, of each text part of a result.
const RESULT_HEAD: usize = 64 * 1024;
const RESULT_TAIL: usize = 64 * 1024;
/// The largest image a result may carry (base64); models refuse larger ones.
const MAX_IMAGE: usize = 5 * 1024 * 1024;

/// `output` with each text part past [`RESULT_HEAD`] + [`RESULT_TAIL`] cut to its head and its
/// true end with a note of what was left out, and each image past [`MAX_IMAGE`] replaced by a
/// note. The built-in tools keep well within this; it bounds the others.
fn bounded(mut output: ToolOutput) -> ToolOutput {
    for part in &mut output.content {
        match part {
            ToolContent::Text { text } if text.len() > RESULT_HEAD + RESULT_TAIL => {
                let mut kept = BoundedOutput::new(RESULT_HEAD, RESULT_TAIL);
                kept.push(text.as_bytes());
                *text = kept.text();
            }
            ToolContent::Image { mime, data } if data.len() > MAX_IMAGE => {
                *part = ToolContent::Text {
                    text: format!(
                        "[an image ({mime}, {}) was left out: larger than the {} a model accepts]",
                        human_bytes(data.len() as u64 * 3 / 4),
                        human_bytes(MAX_IMAGE as u64 * 3 / 4),
                    ),
                };
            }
            _ => {}
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_bounded_keeping_their_head_and_true_end() {
        let long = format!("START\n{}THE END", "0123456789\n".repeat(200_000));
        let small = "a short answer".to_string();
        let image = |bytes: usize| ToolContent::Image {
            mime: "image/png".into(),
            data: "A".repeat(bytes),
        };
        let out = bounded(ToolOutput {
            content: vec![
                ToolContent::Text { text: long },
                ToolContent::Text {
                    text: small.clone(),
                },
                image(1000),
                image(MAX_IMAGE + 1),
            ],
            is_error: false,
            detail: None,
        });
        let ToolContent::Text { text } = &out.content[0] else {
            panic!("text stays text")
        };
        assert!(
            text.len() <= RESULT_HEAD + RESULT_TAIL + 100,
            "{}",
            text.len()
        );
        assert!(text.starts_with("START\n") && text.ends_with("THE END"));
        assert!(
            text.contains("MB / ") && text.contains("lines left out"),
            "{text:.200}"
        );
        assert_eq!(out.content[1], ToolContent::Text { text: small });
        assert_eq!(out.content[2], image(1000));
        assert!(
            matches!(&out.content[3], ToolContent::Text { text } if text.contains("image (image/png, 3.8 MB) was left out")),
            "{:?}",
            out.content[3].as_text()
        );
    }
}
