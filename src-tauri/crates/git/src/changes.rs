//! A task's whole change: its folder as it is now (committed or not, new files included, those
//! git ignores left out) against the commit it started from, read through a temporary index so
//! the folder's own index is never touched.

use crate::{run_with, Result, TempIndex};
use serde::Serialize;
use std::path::Path;

/// The diff is cut here (whole files are kept or left out): a view must open fast and a request
/// must stay small.
const MAX_PATCH_BYTES: usize = 8 * 1024 * 1024;

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Inside the repository, `/`-separated.
    pub path: String,
    /// Its path before, when it was renamed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// Lines added and removed; `None` for a binary file.
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

/// Everything changed, by file, and the unified diff of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    /// The commit the change is measured from.
    pub from: String,
    pub files: Vec<FileChange>,
    /// The unified diff (`git diff` format), cut at a file boundary when very long.
    pub patch: String,
    /// Files left out of `patch` for its length (they are still in `files`).
    pub patch_cut: bool,
}

impl Changes {
    /// Lines added and removed in all.
    pub fn totals(&self) -> (u64, u64) {
        self.files.iter().fold((0, 0), |(a, r), f| {
            (a + f.added.unwrap_or(0), r + f.removed.unwrap_or(0))
        })
    }
}

/// The change in `dir` against `from`.
pub(crate) fn of(dir: &Path, from: &str) -> Result<Changes> {
    let index = TempIndex::new()?;
    let env = [("GIT_INDEX_FILE", index.path())];
    run_with(dir, ["read-tree", "HEAD"], &env)?;
    run_with(dir, ["add", "-A"], &env)?;
    let diff = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "--cached",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "-M",
        ];
        args.extend_from_slice(extra);
        args.push(from);
        args.push("--");
        run_with(dir, args, &env)
    };
    let numstat = diff(&["--numstat", "-z"])?;
    let files = parse_numstat(&numstat.stdout);
    let patch = diff(&[])?;
    let (patch, patch_cut) = cut(String::from_utf8_lossy(&patch.stdout).into_owned());
    Ok(Changes {
        from: from.to_string(),
        files,
        patch,
        patch_cut,
    })
}

/// `--numstat -z`: `added\tremoved\tpath\0`, or for a rename `added\tremoved\t\0old\0new\0`.
fn parse_numstat(raw: &[u8]) -> Vec<FileChange> {
    let mut fields = raw
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut files = Vec::new();
    while let Some(field) = fields.next() {
        let mut parts = field.splitn(3, '\t');
        let (Some(added), Some(removed), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (path, old_path) = if path.is_empty() {
            let old = fields.next().unwrap_or_default();
            (fields.next().unwrap_or_default(), Some(old))
        } else {
            (path.to_string(), None)
        };
        files.push(FileChange {
            path,
            old_path,
            added: added.parse().ok(),
            removed: removed.parse().ok(),
        });
    }
    files
}

/// The patch, cut before the first file that would pass [`MAX_PATCH_BYTES`].
fn cut(patch: String) -> (String, bool) {
    if patch.len() <= MAX_PATCH_BYTES {
        return (patch, false);
    }
    let mut end = 0;
    let mut at = 0;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            if at > MAX_PATCH_BYTES {
                break;
            }
            end = at;
        }
        at += line.len();
    }
    let mut kept = patch;
    kept.truncate(end);
    (kept, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_reads_plain_binary_and_renamed_files() {
        let raw = b"3\t1\tsrc/a.rs\0-\t-\timg.png\x000\t0\t\0old name.txt\0new name.txt\0";
        let files = parse_numstat(raw);
        assert_eq!(files.len(), 3, "{files:?}");
        assert_eq!((files[0].added, files[0].removed), (Some(3), Some(1)));
        assert_eq!(files[1].added, None);
        assert_eq!(files[2].path, "new name.txt");
        assert_eq!(files[2].old_path.as_deref(), Some("old name.txt"));
    }

    #[test]
    fn a_long_patch_is_cut_between_files() {
        let file = |n: usize| format!("diff --git a/{n} b/{n}\n{}", "+x\n".repeat(1024 * 1024));
        let patch: String = (0..4).map(file).collect();
        let (kept, cut_) = cut(patch);
        assert!(cut_);
        assert!(kept.len() <= MAX_PATCH_BYTES && kept.ends_with("+x\n"));
        assert_eq!(kept.matches("diff --git").count(), 2);
    }
}
