//! `glob`: files whose path matches a pattern, honouring .gitignore.

use super::{blocking, folder_or_top, resolve_path, shown};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{ToolCategory, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub struct Glob;

const MAX_PATHS: usize = 1000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Glob pattern matched against paths relative to `path`, for example `**/*.rs` or `src/**/test_*.py`.
    pattern: String,
    /// Folder to search in, relative to the project root (default: the root).
    path: Option<String>,
}

#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }
    fn description(&self) -> &str {
        "Find files by path pattern (`**/*.rs`, `src/**/*.test.ts`). Skips what .gitignore ignores. Returns matching paths, sorted."
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
        let base = match resolve_path(cx, folder_or_top(input.path.as_deref()), false).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        let root = cx.session.root.clone();
        let cancel = cx.cancel.clone();
        blocking(move || {
            let matcher = match globset::GlobBuilder::new(&input.pattern)
                .literal_separator(true)
                .build()
            {
                Ok(g) => g.compile_matcher(),
                Err(e) => return ToolOutput::error(format!("invalid glob pattern: {e}")),
            };
            let (mut paths, truncated) = find(&base.real, &matcher, MAX_PATHS, &cancel);
            if cancel.is_cancelled() {
                return ToolOutput::error("stopped by the user before the search finished");
            }
            paths.sort();
            let shown_paths: Vec<String> = paths.iter().map(|p| shown(&root, p)).collect();
            let mut text = shown_paths.join("\n");
            if shown_paths.is_empty() {
                text = format!("no files match {} under {}", input.pattern, base.display);
            } else if truncated {
                text.push_str(&format!(
                    "\n(stopped at {MAX_PATHS} files; use a narrower pattern)"
                ));
            }
            ToolOutput::text(text).with_detail(ToolDetail::Paths {
                paths: shown_paths,
                truncated,
            })
        })
        .await
        .unwrap_or_else(|e| e)
    }
}

/// Walks `base` in parallel (honouring ignore files; hidden files included, `.git` skipped) and
/// returns up to `max` files matching `matcher`, relative to `base`. A stop (`cancel`) ends the
/// walk.
pub(crate) fn find(
    base: &Path,
    matcher: &globset::GlobMatcher,
    max: usize,
    cancel: &CancellationToken,
) -> (Vec<PathBuf>, bool) {
    let found = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    let truncated = std::sync::atomic::AtomicBool::new(false);
    crate::files::walker(base).build_parallel().run(|| {
        Box::new(|entry| {
            if cancel.is_cancelled() {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let rel = entry.path().strip_prefix(base).unwrap_or(entry.path());
            if matcher.is_match(rel) {
                if count.fetch_add(1, Ordering::Relaxed) >= max {
                    truncated.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                found.lock().expect("found lock").push(entry.into_path());
            }
            ignore::WalkState::Continue
        })
    });
    (
        found.into_inner().expect("found lock"),
        truncated.into_inner(),
    )
}
