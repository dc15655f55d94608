//! `grep`: a regex or literal search through the project with ripgrep's crates (parallel walk,
//! .gitignore honoured, binary files skipped).

use super::{blocking, folder_or_top, resolve_path, shown};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{FileMatches, MatchLine, ToolCategory, ToolDetail};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub struct Grep;

const DEFAULT_MAX: usize = 200;
const MAX_LINE_CHARS: usize = 500;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Regular expression (Rust regex syntax) to search for, or plain text with `literal`.
    pattern: String,
    /// File or folder to search, relative to the project root (default: the root).
    path: Option<String>,
    /// Only search files whose path matches this glob, for example `*.rs` or `src/**/*.ts`.
    glob: Option<String>,
    /// Treat the pattern as plain text.
    #[serde(default)]
    literal: bool,
    /// Ignore case.
    #[serde(default)]
    case_insensitive: bool,
    /// Lines of context before and after each match (0–10).
    #[schemars(range(max = 10))]
    context: Option<u32>,
    /// Stop after this many matching lines (default 200).
    #[schemars(range(min = 1, max = 5000))]
    max_results: Option<u32>,
}

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression (or plain text with literal: true). Skips .gitignored and binary files. Returns matching lines with line numbers, grouped by file; narrow with glob (`*.rs`) and path."
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
        blocking(move || search(&root, &base.real, &input, &cancel))
            .await
            .unwrap_or_else(|e| e)
    }
}

use crate::files::walker;

fn search(root: &Path, base: &Path, input: &Input, cancel: &CancellationToken) -> ToolOutput {
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .fixed_strings(input.literal)
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::error(format!(
                "invalid regular expression: {e}. Escape special characters, or pass literal: true to search for plain text."
            ))
        }
    };
    let filter = match &input.glob {
        Some(g) => match globset::GlobBuilder::new(g)
            .literal_separator(g.contains('/'))
            .build()
        {
            Ok(g) => Some(g.compile_matcher()),
            Err(e) => return ToolOutput::error(format!("invalid glob {g:?}: {e}")),
        },
        None => None,
    };
    let context = input.context.unwrap_or(0).min(10) as usize;
    let max = input.max_results.unwrap_or(DEFAULT_MAX as u32) as usize;
    let (mut files, truncated) = run_search(base, &matcher, filter.as_ref(), context, max, cancel);
    if cancel.is_cancelled() {
        return ToolOutput::error("stopped by the user before the search finished");
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));

    let mut text = String::new();
    let mut detail = Vec::new();
    let mut count = 0;
    for (path, lines) in files {
        let name = shown(root, &path);
        text.push_str(&name);
        text.push('\n');
        let mut prev = 0;
        for l in &lines {
            if prev != 0 && l.line > prev + 1 {
                text.push_str("  --\n");
            }
            prev = l.line;
            let sep = if l.context { '-' } else { ':' };
            text.push_str(&format!("  {}{sep} {}\n", l.line, l.text));
            count += usize::from(!l.context);
        }
        detail.push(FileMatches { path: name, lines });
    }
    if detail.is_empty() {
        text = format!("no matches for {:?}", input.pattern);
    } else {
        text.insert_str(
            0,
            &format!("{count} matching lines in {} files\n", detail.len()),
        );
        if truncated {
            text.push_str(&format!("(stopped at {max} matching lines; narrow the search with path or glob, or raise max_results)\n"));
        }
    }
    ToolOutput::text(text).with_detail(ToolDetail::Matches {
        files: detail,
        truncated,
    })
}

/// Searches every file under `base` in parallel. Returns the matching files with their lines
/// and whether `max` matching lines cut the search short. A stop (`cancel`) ends the walk.
pub(crate) fn run_search(
    base: &Path,
    matcher: &grep_regex::RegexMatcher,
    filter: Option<&globset::GlobMatcher>,
    context: usize,
    max: usize,
    cancel: &CancellationToken,
) -> (Vec<(PathBuf, Vec<MatchLine>)>, bool) {
    let results = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    let truncated = std::sync::atomic::AtomicBool::new(false);
    let single_file = base.is_file();
    walker(base).build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let (results, count, truncated) = (&results, &count, &truncated);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            if let Some(filter) = filter {
                let rel = entry.path().strip_prefix(base).unwrap_or(entry.path());
                let name = entry.path().file_name().map(Path::new).unwrap_or(rel);
                if !single_file && !filter.is_match(rel) && !filter.is_match(name) {
                    return ignore::WalkState::Continue;
                }
            }
            let mut sink = Lines::default();
            if searcher
                .search_path(matcher, entry.path(), &mut sink)
                .is_err()
                || sink.binary
                || sink.lines.is_empty()
            {
                return ignore::WalkState::Continue;
            }
            let before = count.fetch_add(sink.matches, Ordering::Relaxed);
            if before >= max {
                truncated.store(true, Ordering::Relaxed);
                return ignore::WalkState::Quit;
            }
            let room = max - before;
            let full = sink.matches >= room;
            if sink.matches > room {
                // Keep the first `room` matches (and their leading context).
                let mut seen = 0;
                let cut = sink
                    .lines
                    .iter()
                    .position(|l| {
                        seen += usize::from(!l.context);
                        seen > room
                    })
                    .unwrap_or(sink.lines.len());
                sink.lines.truncate(cut);
            }
            results
                .lock()
                .expect("results lock")
                .push((entry.into_path(), sink.lines));
            if full {
                // The limit is reached: say the search stopped early.
                truncated.store(true, Ordering::Relaxed);
                return ignore::WalkState::Quit;
            }
            ignore::WalkState::Continue
        })
    });
    (
        results.into_inner().expect("results lock"),
        truncated.into_inner(),
    )
}

#[derive(Default)]
struct Lines {
    lines: Vec<MatchLine>,
    matches: usize,
    binary: bool,
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut}…")
    } else {
        text.to_string()
    }
}

impl Sink for Lines {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        self.lines.push(MatchLine {
            line: m.line_number().unwrap_or(0),
            text: line_text(m.bytes()),
            context: false,
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.lines.push(MatchLine {
            line: c.line_number().unwrap_or(0),
            text: line_text(c.bytes()),
            context: true,
        });
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}
