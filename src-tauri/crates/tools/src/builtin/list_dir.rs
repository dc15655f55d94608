//! `list_dir`: what a folder contains.

use super::{blocking, folder_or_top, io_error, resolve_path};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{DirEntry, ToolCategory, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct ListDir;

const MAX_ENTRIES: usize = 1000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Folder to list, relative to the project root (default: the root).
    path: Option<String>,
}

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }
    fn description(&self) -> &str {
        "List a folder of the project: sub-folders first (ending in /), then files with their sizes. Use glob to find files by name across folders."
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
        let path = match resolve_path(cx, folder_or_top(input.path.as_deref()), false).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        blocking(move || {
            let read = match std::fs::read_dir(&path.real) {
                Ok(r) => r,
                Err(e) => return io_error(&path.display, &e),
            };
            let mut entries: Vec<DirEntry> = read
                .filter_map(Result::ok)
                .filter(|e| e.file_name() != ".git")
                .map(|e| {
                    let meta = std::fs::metadata(e.path()).ok();
                    DirEntry {
                        name: e.file_name().to_string_lossy().into_owned(),
                        dir: meta.as_ref().is_some_and(|m| m.is_dir()),
                        size: meta.map(|m| m.len()).unwrap_or(0),
                    }
                })
                .collect();
            entries.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));
            let truncated = entries.len() > MAX_ENTRIES;
            entries.truncate(MAX_ENTRIES);
            let mut text = String::new();
            for e in &entries {
                if e.dir {
                    text.push_str(&format!("{}/\n", e.name));
                } else {
                    text.push_str(&format!("{}  ({})\n", e.name, super::human_bytes(e.size)));
                }
            }
            if entries.is_empty() {
                text.push_str(&format!("({} is empty)\n", path.display));
            }
            if truncated {
                text.push_str(&format!(
                    "(only the first {MAX_ENTRIES} entries are shown)\n"
                ));
            }
            ToolOutput::text(text).with_detail(ToolDetail::Listing {
                path: path.display.clone(),
                entries,
                truncated,
            })
        })
        .await
        .unwrap_or_else(|e| e)
    }
}
