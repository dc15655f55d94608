//! A task's whole change: its folder as it is now (committed or not, new files included, those
//! git ignores left out) against the commit it started from, read through a temporary index so
//! the folder's own index is never touched.

use crate::{run_with, Result, TempIndex};
use codewright_protocol::{DiffLine, Hunk, LineKind};
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
    /// The file is new (`false` for one that was there and changed).
    pub created: bool,
    /// The file is gone.
    pub deleted: bool,
    /// Its hunks; empty for a binary file, or one past where the diff was cut.
    pub hunks: Vec<Hunk>,
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
    /// The files not committed yet (new ones included).
    pub uncommitted: Vec<String>,
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
    let read = Reading::start(dir)?;
    let uncommitted = read.uncommitted()?;
    let mut files = parse_numstat(&read.diff(from, &["--numstat", "-z"])?);
    let patch = read.diff(from, &[])?;
    let (patch, patch_cut) = cut(String::from_utf8_lossy(&patch).into_owned());
    // The patch lists the files in the order numstat does.
    for (file, section) in files.iter_mut().zip(sections(&patch)) {
        file.created = section.contains("\nnew file mode ");
        file.deleted = section.contains("\ndeleted file mode ");
        file.hunks = hunks(section);
    }
    Ok(Changes {
        from: from.to_string(),
        files,
        patch,
        patch_cut,
        uncommitted,
    })
}

/// The change in `dir` against `from` in numbers only: files, lines added and removed, files
/// not committed — what a task's row shows, without the patch.
pub(crate) fn counts(dir: &Path, from: &str) -> Result<Counts> {
    let read = Reading::start(dir)?;
    let uncommitted = read.uncommitted()?.len() as u64;
    let files = parse_numstat(&read.diff(from, &["--numstat", "-z"])?);
    let (added, removed) = files.iter().fold((0, 0), |(a, r), f| {
        (a + f.added.unwrap_or(0), r + f.removed.unwrap_or(0))
    });
    Ok(Counts {
        files: files.len() as u64,
        added,
        removed,
        uncommitted,
    })
}

/// A change in numbers.
pub(crate) struct Counts {
    pub files: u64,
    pub added: u64,
    pub removed: u64,
    pub uncommitted: u64,
}

/// The folder as it is now, in a temporary index: read by the diffs below without the folder's
/// own index being touched.
struct Reading<'a> {
    dir: &'a Path,
    index: TempIndex,
}

impl<'a> Reading<'a> {
    fn start(dir: &'a Path) -> Result<Self> {
        let index = TempIndex::of(dir)?;
        run_with(dir, ["add", "-A"], &[("GIT_INDEX_FILE", index.path())])?;
        Ok(Reading { dir, index })
    }

    /// `git diff --cached` of the folder against `from`, renames found, with `extra` options.
    fn diff(&self, from: &str, extra: &[&str]) -> Result<Vec<u8>> {
        let mut args = vec!["--no-textconv", "--no-color", "-M"];
        args.extend_from_slice(extra);
        self.cached(from, args)
    }

    /// What is not committed: the folder as it is (the index just made) against HEAD — read
    /// without looking at the folder again; a renamed file is named once, by its new name.
    fn uncommitted(&self) -> Result<Vec<String>> {
        Ok(self
            .cached("HEAD", vec!["-M", "--name-only", "-z"])?
            .split(|b| *b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect())
    }

    fn cached<'b>(&self, from: &'b str, options: Vec<&'b str>) -> Result<Vec<u8>> {
        let mut args = vec!["diff", "--cached", "--no-ext-diff"];
        args.extend(options);
        args.extend([from, "--"]);
        Ok(run_with(self.dir, args, &[("GIT_INDEX_FILE", self.index.path())])?.stdout)
    }
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
            created: false,
            deleted: false,
            hunks: Vec::new(),
        });
    }
    files
}

/// The patch's sections, one per file (each from its `diff --git` line).
fn sections(patch: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, start)| &patch[*start..starts.get(i + 1).copied().unwrap_or(patch.len())])
        .collect()
}

/// The hunks of one file's section. A line keeps a carriage return it ends with (a CRLF file's
/// lines are written back as they were).
fn hunks(section: &str) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    for line in section.split('\n').filter(|l| !l.is_empty()) {
        if let Some(range) = line.strip_prefix("@@ ") {
            let Some((old, new)) = parse_range(range) else {
                continue;
            };
            hunks.push(Hunk {
                index: hunks.len(),
                old_start: old.0,
                old_lines: old.1,
                new_start: new.0,
                new_lines: new.1,
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        let (kind, text) = match line.as_bytes().first() {
            Some(b'+') => (LineKind::Added, &line[1..]),
            Some(b'-') => (LineKind::Removed, &line[1..]),
            Some(b' ') => (LineKind::Context, &line[1..]),
            Some(b'\\') => continue, // "\ No newline at end of file"
            _ => (LineKind::Context, line),
        };
        hunk.lines.push(DiffLine {
            kind,
            text: text.to_string(),
        });
    }
    hunks
}

/// `-a,b +c,d @@…` → ((a, b), (c, d)); a count left out is 1.
fn parse_range(range: &str) -> Option<((usize, usize), (usize, usize))> {
    let mut parts = range.split_whitespace();
    let one = |part: &str| -> Option<(usize, usize)> {
        let (start, count) = part.split_once(',').unwrap_or((part, "1"));
        Some((start.parse().ok()?, count.parse().ok()?))
    };
    let old = one(parts.next()?.strip_prefix('-')?)?;
    let new = one(parts.next()?.strip_prefix('+')?)?;
    Some((old, new))
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

/// `text` (a file's) with one hunk of its change put back as it was before: the hunk's new lines
/// (found where it says, else the one place they occur) become its old lines. An error, in words
/// that follow the file's name, when they are no longer in it (it changed since the hunk was
/// read). The caller writes the result (in a task's folder, without following a link:
/// `Checkpoints::put_back`).
pub fn unapplied(text: &str, hunk: &Hunk) -> std::result::Result<String, String> {
    let ends_with_newline = text.ends_with('\n');
    let mut lines: Vec<&str> = text.split('\n').collect();
    if ends_with_newline || text.is_empty() {
        lines.pop();
    }
    let new: Vec<&str> = hunk
        .lines
        .iter()
        .filter(|l| l.kind != LineKind::Removed)
        .map(|l| l.text.as_str())
        .collect();
    let old: Vec<String> = hunk
        .lines
        .iter()
        .filter(|l| l.kind != LineKind::Added)
        .map(|l| l.text.clone())
        .collect();
    let fits = |at: usize| lines.get(at..at + new.len()) == Some(&new[..]);
    let expected =
        hunk.new_start.saturating_sub(1) + usize::from(hunk.new_lines == 0 && hunk.new_start > 0);
    let at = if fits(expected) {
        expected
    } else {
        let places: Vec<usize> = (0..=lines.len().saturating_sub(new.len()))
            .filter(|at| fits(*at))
            .collect();
        match places[..] {
            [one] => one,
            _ => return Err("has changed since this change was read; look at it again".into()),
        }
    };
    let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
    out.extend(old);
    out.extend(lines[at + new.len()..].iter().map(|l| l.to_string()));
    let mut written = out.join("\n");
    if !out.is_empty() && (ends_with_newline || text.is_empty()) {
        written.push('\n');
    }
    Ok(written)
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
    fn a_patch_becomes_hunks_per_file() {
        let patch = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n@@ -10 +10,0 @@ fn x\n-gone\n\\ No newline at end of file\ndiff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+hi\n";
        let parts = sections(patch);
        assert_eq!(parts.len(), 2);
        let first = hunks(parts[0]);
        assert_eq!(first.len(), 2);
        assert_eq!(
            (first[0].old_start, first[0].old_lines, first[0].new_lines),
            (1, 2, 2)
        );
        assert_eq!(first[0].lines[1].kind, LineKind::Removed);
        assert_eq!(first[0].lines[2].text, "new");
        assert_eq!(
            (first[1].old_start, first[1].old_lines, first[1].new_lines),
            (10, 1, 0)
        );
        assert_eq!(first[1].lines.len(), 1, "the no-newline marker is no line");
        assert!(parts[1].contains("\nnew file mode "));
        assert_eq!(hunks(parts[1])[0].lines[0].text, "hi");
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
