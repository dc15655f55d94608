//! `edit_file`: exact `old → new` replacements in one file, applied all together or not at all.

use super::matching::{find, Miss};
use super::resolve_path;
use super::write_file::{apply_change, current, unchanged_since_read};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::ToolCategory;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Path of the file, relative to the project root.
    path: String,
    /// Exact text to replace (include enough surrounding lines to make it unique).
    old_string: Option<String>,
    /// The text to put instead.
    new_string: Option<String>,
    /// Replace every occurrence of old_string instead of requiring exactly one.
    #[serde(default)]
    replace_all: bool,
    /// Several replacements in this file, applied in order, all or none.
    edits: Option<Vec<Edit>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Edit {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Edit a file you have read: replace old_string (exact text, unique in the file unless replace_all) with new_string. For several changes to one file pass `edits` (applied in order, all or none). Fails, changing nothing, if the text is missing or ambiguous or the file changed since you read it. The user may approve only some hunks; the result says exactly which were applied."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let edits =
            match (input.edits, input.old_string, input.new_string) {
                (Some(edits), None, None) if !edits.is_empty() => edits,
                // Both shapes, saying the same (as small models write it): the list.
                (Some(edits), Some(old), Some(new))
                    if !edits.is_empty()
                        && edits
                            .iter()
                            .any(|e| e.old_string == old && e.new_string == new) =>
                {
                    edits
                }
                (None, Some(old_string), Some(new_string)) => vec![Edit {
                    old_string,
                    new_string,
                    replace_all: input.replace_all,
                }],
                _ => return ToolOutput::error(
                    "give either old_string and new_string, or a non-empty edits list (not both)",
                ),
            };
        let path = match resolve_path(cx, &input.path, true).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        let old = match current(cx, &path) {
            Ok(Some(old)) => old,
            Ok(None) => {
                return ToolOutput::error(format!(
                    "{} does not exist; create it with write_file",
                    path.display
                ))
            }
            Err(e) => return e,
        };
        if let Err(e) = unchanged_since_read(cx, &path, &old) {
            return e;
        }
        let (new, notes) = match apply_edits(&old, &edits, &path.display) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let note = (!notes.is_empty()).then(|| format!("matched {}", notes.join(", ")));
        apply_change(cx, &path, Some(old), new, note).await
    }
}

/// Applies the edits in order to the file's bytes. Text files get the whole fallback chain;
/// files that are not UTF-8 only exact matches, every other byte kept as it is.
fn apply_edits(
    old: &[u8],
    edits: &[Edit],
    shown: &str,
) -> Result<(Vec<u8>, Vec<String>), ToolOutput> {
    let numbered = |i: usize| {
        if edits.len() > 1 {
            format!("edit {} of {}: ", i + 1, edits.len())
        } else {
            String::new()
        }
    };
    let mut notes = Vec::new();
    let Ok(text) = std::str::from_utf8(old) else {
        let mut bytes = old.to_vec();
        for (i, edit) in edits.iter().enumerate() {
            let needle = edit.old_string.as_bytes();
            let at: Vec<usize> = if needle.is_empty() {
                vec![]
            } else {
                bytes
                    .windows(needle.len())
                    .enumerate()
                    .filter(|(_, w)| *w == needle)
                    .map(|(i, _)| i)
                    .collect()
            };
            if at.is_empty() || (at.len() > 1 && !edit.replace_all) {
                return Err(ToolOutput::error(format!(
                    "{}old_string {} in {shown}, which is not UTF-8 text: only exact matches work there. Read the file again and copy the text exactly; nothing was changed.",
                    numbered(i),
                    if at.is_empty() { "was not found" } else { "is not unique" }
                )));
            }
            let mut out = Vec::with_capacity(bytes.len());
            let mut last = 0;
            for start in at {
                if start < last {
                    continue;
                }
                out.extend_from_slice(&bytes[last..start]);
                out.extend_from_slice(edit.new_string.as_bytes());
                last = start + needle.len();
            }
            out.extend_from_slice(&bytes[last..]);
            bytes = out;
        }
        return Ok((bytes, notes));
    };
    let mut text = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        if edit.old_string == edit.new_string {
            return Err(ToolOutput::error(format!(
                "{}old_string and new_string are the same; nothing to change",
                numbered(i)
            )));
        }
        match find(&text, &edit.old_string, &edit.new_string, edit.replace_all) {
            Ok(found) => {
                for range in found.ranges.iter().rev() {
                    text.replace_range(range.clone(), &found.replacement);
                }
                if let Some(how) = found.how {
                    notes.push(how.to_string());
                }
            }
            Err(Miss::Ambiguous { lines }) => {
                return Err(ToolOutput::error(format!(
                    "{}old_string matches {} places in {shown} (lines {}); include more surrounding lines to make it unique, or set replace_all to change every one. Nothing was changed.",
                    numbered(i),
                    lines.len(),
                    lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
                )))
            }
            Err(Miss::NotFound { closest }) => {
                let hint = match closest {
                    Some((line, text)) => format!(" The closest text is at line {line}:\n{text}"),
                    None => String::new(),
                };
                return Err(ToolOutput::error(format!(
                    "{}old_string was not found in {shown}. Read the file again (read_file) and copy the exact text, including whitespace. Nothing was changed.{hint}",
                    numbered(i)
                )));
            }
        }
    }
    Ok((text.into_bytes(), notes))
}
