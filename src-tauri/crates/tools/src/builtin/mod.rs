//! The built-in tools. Each file is one tool (or one family: `process` for background commands).

mod ask_user;
mod bash;
mod edit_file;
mod glob;
mod grep;
mod list_dir;
mod matching;
mod memory;
mod read_file;
mod skill;
mod todo_write;
mod web_fetch;
mod write_file;

use crate::{CallContext, Registry, Tool, ToolOutput};
use std::path::Path;
use std::sync::Arc;

pub(crate) use codewright_exec::output::human_bytes;
pub use codewright_exec::ProcessTable;
pub(crate) use codewright_exec::{output, process};
pub use skill::NAME as SKILL_TOOL;

impl Registry {
    /// The built-in tools.
    pub fn builtin() -> Registry {
        let mut registry = Registry::default();
        for tool in all() {
            registry
                .register(tool)
                .expect("built-in tools have valid names and schemas");
        }
        registry
    }
}

/// How `edit_file` finds `old` in `text`: the byte ranges to replace and their replacement, or
/// `None` when `old` is found nowhere or (without `replace_all`) at several places. For the fuzz
/// targets (`src-tauri/fuzz`), which cannot reach the private matcher.
#[doc(hidden)]
pub fn find_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Option<(Vec<std::ops::Range<usize>>, String)> {
    matching::find(text, old, new, replace_all)
        .ok()
        .map(|found| (found.ranges, found.replacement))
}

/// Every built-in tool.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile),
        Arc::new(list_dir::ListDir),
        Arc::new(glob::Glob),
        Arc::new(grep::Grep),
        Arc::new(write_file::WriteFile),
        Arc::new(edit_file::EditFile),
        Arc::new(bash::Bash),
        Arc::new(bash::ProcessList),
        Arc::new(bash::ProcessOutput),
        Arc::new(bash::ProcessKill),
        Arc::new(todo_write::TodoWrite),
        Arc::new(ask_user::AskUser),
        Arc::new(web_fetch::WebFetch),
        Arc::new(skill::LoadSkill),
        Arc::new(memory::MemoryRead),
        Arc::new(memory::MemoryWrite),
    ]
}

/// Files larger than this are not read whole (read a range) nor edited.
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Whether bytes look binary (a NUL in the first 8 KB, as git and ripgrep decide).
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// The folder a listing or search starts from: the project's top when none is given, or an
/// empty one (`""`, what a model writes for "the top").
pub(crate) fn folder_or_top(path: Option<&str>) -> &str {
    path.filter(|p| !p.trim().is_empty()).unwrap_or(".")
}

/// Resolves a path argument and, when it leaves the project, asks for it (reads and writes alike).
pub(crate) async fn resolve_path(
    cx: &CallContext,
    input: &str,
    write: bool,
) -> Result<crate::paths::ResolvedPath, ToolOutput> {
    let resolved = crate::paths::resolve(&cx.session.root, input).map_err(ToolOutput::error)?;
    if !resolved.inside && !write {
        // Read tools on an external path: its own approval. (Writes ask with the edit itself.)
        cx.authorize(crate::session::Ask {
            category: codewright_protocol::ToolCategory::Read,
            subject: crate::Subject::Paths(vec![&resolved]),
            action: codewright_protocol::Action::ExternalPath {
                path: resolved.display.clone(),
                write: false,
            },
            summary: format!("Read {} (outside the project)", resolved.display),
            decisions: &[
                codewright_protocol::DecisionKind::Approve,
                codewright_protocol::DecisionKind::ApproveAlways,
                codewright_protocol::DecisionKind::Reject,
            ],
            force_ask: None,
        })
        .await?;
    }
    Ok(resolved)
}

/// The path relative to the project root when inside it (for showing).
pub(crate) fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string_lossy().into_owned())
}

/// Runs blocking work (file walks, big reads) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolOutput> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolOutput::error(format!("the tool crashed: {e}")))
}

/// Output for an I/O error on a path, with what to do.
pub(crate) fn io_error(path: &str, e: &std::io::Error) -> ToolOutput {
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => {
            " — it does not exist. Check the path (list_dir or glob help find it)."
        }
        std::io::ErrorKind::PermissionDenied => " — permission denied.",
        _ => "",
    };
    ToolOutput::error(format!("cannot read {path}: {e}{hint}"))
}
