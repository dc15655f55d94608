//! Finding a project's files from a few typed letters (the composer's `@` picker): every file the
//! project does not ignore (`.gitignore`, `.ignore`; hidden files count, `.git` does not), ranked
//! by a fuzzy matcher made for paths (nucleo, as in the Helix editor), best first.

use ignore::WalkBuilder;
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use serde::Serialize;
use std::path::Path;

/// Files listed at most: a bigger project is cut off here (after the first this many the walk
/// meets).
pub const MAX_FILES: usize = 100_000;

/// A file that matches: its project-relative path (with `/`) and the positions (in characters)
/// of the letters that matched, for highlighting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileMatch {
    pub path: String,
    pub indices: Vec<u32>,
}

/// The walker everything that lists a project's files uses (searches, the `@` list, the Files
/// tab, checkpoint snapshots): ignore files honoured, hidden files included, `.git` skipped.
///
/// The `ignore` crate opens `.gitignore`, `.ignore` and `.git/info/exclude` by name and reads them
/// whole, so one that is a link to `/dev/zero` (which a repository can hold) would fill memory,
/// and a named pipe would hold every search forever. A folder with such a file (not a regular
/// file of at most 16 MiB) is left out; one above or at `base` turns ignore files off for the walk.
pub fn walker(base: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| {
            entry.file_name() != ".git"
                && !(entry.file_type().is_some_and(|t| t.is_dir())
                    && unsafe_ignore_file(entry.path()))
        });
    if base.ancestors().any(unsafe_ignore_file) {
        builder
            .ignore(false)
            .git_ignore(false)
            .git_exclude(false)
            .parents(false);
    }
    builder
}

/// The largest ignore file the walker lets the `ignore` crate read.
const MAX_IGNORE_FILE: u64 = 16 * 1024 * 1024;

/// Whether `dir` holds an ignore file the `ignore` crate must not open (see [`walker`]).
fn unsafe_ignore_file(dir: &Path) -> bool {
    [".gitignore", ".ignore", ".git/info/exclude"]
        .iter()
        .any(|name| match std::fs::metadata(dir.join(name)) {
            Ok(meta) => !meta.is_file() || meta.len() > MAX_IGNORE_FILE,
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        })
}

/// The project's files, project-relative with `/`, shallow ones first, then by name.
pub fn project_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = walker(root)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?;
            Some(relative.to_string_lossy().replace('\\', "/"))
        })
        .take(MAX_FILES)
        .collect();
    files.sort_by(|a, b| {
        (a.matches('/').count(), a.as_str()).cmp(&(b.matches('/').count(), b.as_str()))
    });
    files
}

/// The best `limit` of `files` for `query`, best first (the first `limit` when the query is
/// empty). Letters match in order, not necessarily together; a lowercase query ignores case.
pub fn find_files(files: &[String], query: &str, limit: usize) -> Vec<FileMatch> {
    let pattern = Pattern::parse(query.trim(), CaseMatching::Smart, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buf = Vec::new();
    let mut scored: Vec<(u32, &String)> = files
        .iter()
        .filter_map(|path| {
            let score = pattern.score(Utf32Str::new(path, &mut buf), &mut matcher)?;
            Some((score, path))
        })
        .collect();
    // Stable: equal scores keep the listing's order (shallow first).
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, path)| {
            let mut indices = Vec::new();
            pattern.indices(Utf32Str::new(path, &mut buf), &mut matcher, &mut indices);
            indices.sort_unstable();
            indices.dedup();
            FileMatch {
                path: path.clone(),
                indices,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_what_the_project_does_not_ignore_and_ranks_by_fuzzy_match() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "README.md",
            "src/main.rs",
            "src/task/window.rs",
            "src/tasks.rs",
            "target/debug/build.log",
            ".github/ci.yml",
            "文档/说明.md",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref").unwrap();

        let files = project_files(root);
        assert_eq!(
            files,
            [
                ".gitignore",
                "README.md",
                ".github/ci.yml",
                "src/main.rs",
                "src/tasks.rs",
                "文档/说明.md",
                "src/task/window.rs",
            ]
        );
        let found = find_files(&files, "taskwin", 10);
        assert_eq!(found[0].path, "src/task/window.rs");
        // The matched letters, in characters: t,a,s,k of "task", w,i,n of "window".
        assert_eq!(found[0].indices, [4, 5, 6, 7, 9, 10, 11]);
        assert_eq!(find_files(&files, "说明", 10)[0].path, "文档/说明.md");
        assert_eq!(find_files(&files, "", 2).len(), 2);
        assert!(find_files(&files, "zzzz", 10).is_empty());
        // Upper case in the query asks for it.
        assert!(find_files(&files, "readme", 10)
            .iter()
            .any(|m| m.path == "README.md"));
        assert!(find_files(&files, "README", 10)
            .iter()
            .any(|m| m.path == "README.md"));
        assert!(find_files(&files, "MAIN", 10).is_empty());
    }
}
