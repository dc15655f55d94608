//! `.worktreeinclude`: files git ignores that a build needs (`.env`, local configuration),
//! copied from the main checkout into a new worktree. The file lists them one pattern a line in
//! `.gitignore`'s syntax (the format other tools use); only files git ignores are copied, never
//! through a link, and at most [`MAX_BYTES`] in all.

use crate::{run_in, GitError, Result};
use std::path::Path;

/// The file that lists what to copy, at the top of the main checkout.
pub const FILE: &str = ".worktreeinclude";

/// Files past this total are not copied (a list that names `node_modules/` by mistake).
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Copies into `worktree` the ignored files of `root` that `root/.worktreeinclude` names; the
/// paths copied.
pub(crate) fn copy(root: &Path, worktree: &Path) -> Result<Vec<String>> {
    let list = root.join(FILE);
    if !list.symlink_metadata().is_ok_and(|m| m.is_file()) {
        return Ok(Vec::new());
    }
    let mut patterns = ignore::gitignore::GitignoreBuilder::new(root);
    if let Some(e) = patterns.add(&list) {
        return Err(GitError::Refused(format!("{FILE} cannot be read: {e}")));
    }
    let patterns = patterns
        .build()
        .map_err(|e| GitError::Refused(format!("{FILE} cannot be read: {e}")))?;
    let ignored = run_in(
        root,
        [
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "-z",
        ],
    )?;
    let mut copied = Vec::new();
    let mut total = 0u64;
    for name in ignored.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let relative = Path::new(&name);
        if relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
            || !patterns
                .matched_path_or_any_parents(relative, false)
                .is_ignore()
        {
            continue;
        }
        let from = root.join(relative);
        // Only a plain file, reached through no link.
        let mut linked = false;
        let mut at = root.to_path_buf();
        for part in relative.components() {
            at.push(part);
            linked |= at
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink());
        }
        let Ok(meta) = from.symlink_metadata() else {
            continue;
        };
        if linked || !meta.is_file() || total + meta.len() > MAX_BYTES {
            continue;
        }
        let to = worktree.join(relative);
        let failed = |e: std::io::Error| GitError::Failed {
            command: "worktree add".into(),
            stderr: format!("cannot copy {name} (listed in {FILE}) into the worktree: {e}"),
        };
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        std::fs::copy(&from, &to).map_err(failed)?;
        total += meta.len();
        copied.push(name);
    }
    Ok(copied)
}
