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

/// A list longer than this is refused (it is a list of patterns).
const MAX_LIST_BYTES: u64 = 1024 * 1024;

/// Copies into `worktree` the ignored files of `root` that `root/.worktreeinclude` names; the
/// paths copied.
pub(crate) fn copy(root: &Path, worktree: &Path) -> Result<Vec<String>> {
    // (Files are opened along their path from a real one: a link met on the way is refused.)
    let Ok(root) = root.canonicalize() else {
        return Ok(Vec::new());
    };
    let root = root.as_path();
    let Ok(worktree) = worktree.canonicalize() else {
        return Ok(Vec::new());
    };
    let cannot_read =
        |e: &dyn std::fmt::Display| GitError::Refused(format!("{FILE} cannot be read: {e}"));
    // (A list that is a link or no plain file is no list, as git would not read it either.)
    if !root
        .join(FILE)
        .symlink_metadata()
        .is_ok_and(|m| m.is_file())
    {
        return Ok(Vec::new());
    }
    let list = match codewright_nofollow::read(&root.join(FILE)) {
        Ok(Some((list, _))) if list.len() as u64 <= MAX_LIST_BYTES => list,
        Ok(Some(_)) => return Err(cannot_read(&format!("it is over {MAX_LIST_BYTES} bytes"))),
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(cannot_read(&e)),
    };
    let mut patterns = ignore::gitignore::GitignoreBuilder::new(root);
    for line in String::from_utf8_lossy(&list)
        .trim_start_matches('\u{feff}')
        .lines()
    {
        patterns
            .add_line(Some(root.join(FILE)), line)
            .map_err(|e| cannot_read(&e))?;
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
        // Only a plain file, reached through no link (read along its path: a folder swapped for
        // a link since git listed it is refused, never followed out of the checkout), written
        // the same way where the worktree has nothing yet (a path the worktree's branch tracks —
        // as a link to a file outside, say — is its own, never written through).
        let Ok(Some((content, mode))) = codewright_nofollow::read(&root.join(relative)) else {
            continue;
        };
        let to = worktree.join(relative);
        if total + content.len() as u64 > MAX_BYTES || to.symlink_metadata().is_ok() {
            continue;
        }
        codewright_nofollow::write(&to, &content, Some(mode), &worktree).map_err(|e| {
            GitError::Failed {
                command: "worktree add".into(),
                stderr: format!("cannot copy {name} (listed in {FILE}) into the worktree: {e}"),
            }
        })?;
        total += content.len() as u64;
        copied.push(name);
    }
    Ok(copied)
}
