//! A project's folders as a tree a person browses: one folder at a time (a 100,000-file project
//! is never walked whole), what `.gitignore` ignores left out, each entry marked with its git
//! status (`git status --porcelain=v2`), and a watcher of the folders open in the tree that says,
//! debounced, which of them changed on disk.

use crate::HostError;
use codewright_protocol::ErrorKind;
use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Entries listed at most in one folder; a bigger one says it was cut.
pub const FOLDER_MAX: usize = 5_000;
/// How long changes settle before a watcher reports them.
pub const SETTLE: Duration = Duration::from_millis(200);

/// What git says of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GitMark {
    Modified,
    Added,
    Deleted,
    Renamed,
    Untracked,
    /// A merge left it conflicted.
    Conflicted,
}

/// One row of a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub name: String,
    /// Project-relative, with `/`.
    pub path: String,
    pub dir: bool,
    /// Its own status (a deleted file is listed with `deleted`, though it is gone from disk).
    pub git: Option<GitMark>,
    /// A folder with something changed inside it.
    pub changed_inside: bool,
}

/// A folder's rows: folders first, then files, each by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Folder {
    pub path: String,
    pub entries: Vec<Entry>,
    /// More than [`FOLDER_MAX`] entries: the rest are not listed.
    pub truncated: bool,
}

/// The changed paths of a project, project-relative (`dir/` for an untracked folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitStatus {
    marks: HashMap<String, GitMark>,
}

impl GitStatus {
    /// The status of the project at `root`: `None` when it is not in a git repository or git
    /// cannot be run.
    pub fn read(root: &Path) -> Option<GitStatus> {
        // (Runs no program the repository configured, and never for long: see `crate::git`.)
        let repository = codewright_git::safe::Repository::open(root).ok()?;
        let git = |args: &[&str]| {
            let mut git = repository.command();
            git.args(args);
            codewright_git::safe::output(git)
        };
        // Paths come relative to the repository; the project may be a folder inside it.
        let prefix = String::from_utf8(git(&["rev-parse", "--show-prefix"])?.stdout).ok()?;
        let prefix = prefix.trim_end_matches('\n').to_string();
        let out = git(&[
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=normal",
            "--ignore-submodules=all",
            "--",
            ".",
        ])?;
        Some(GitStatus::parse(&out.stdout, &prefix))
    }

    /// Reads `git status --porcelain=v2 -z` output; `prefix` is the project's place in the
    /// repository (`sub/dir/`, or empty).
    pub fn parse(out: &[u8], prefix: &str) -> GitStatus {
        let mut marks = HashMap::new();
        let mut records = out.split(|b| *b == 0).map(|r| String::from_utf8_lossy(r));
        while let Some(record) = records.next() {
            // Ordinary changes, renames or copies (the original path follows), conflicts, and
            // untracked paths; their fields before the path, space-separated.
            let (path, mark) = match record.split_at_checked(2) {
                Some(("1 ", rest)) => (rest.splitn(8, ' ').nth(7), mark_of(rest)),
                Some(("2 ", rest)) => {
                    records.next();
                    (rest.splitn(9, ' ').nth(8), Some(GitMark::Renamed))
                }
                Some(("u ", rest)) => (rest.splitn(10, ' ').nth(9), Some(GitMark::Conflicted)),
                Some(("? ", rest)) => (Some(rest), Some(GitMark::Untracked)),
                _ => continue,
            };
            if let (Some(path), Some(mark)) = (path, mark) {
                if let Some(path) = path.strip_prefix(prefix) {
                    marks.insert(path.to_string(), mark);
                }
            }
        }
        GitStatus { marks }
    }

    /// The mark of `path` itself, or of an untracked folder that holds it.
    fn mark(&self, path: &str, dir: bool) -> Option<GitMark> {
        let own = if dir {
            self.marks.get(&format!("{path}/"))
        } else {
            self.marks.get(path)
        };
        own.copied().or_else(|| {
            self.marks.iter().find_map(|(p, m)| {
                (*m == GitMark::Untracked && p.ends_with('/') && path.starts_with(p.as_str()))
                    .then_some(*m)
            })
        })
    }

    fn changed_inside(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.marks
            .keys()
            .any(|p| p.starts_with(&prefix) && p != &prefix)
    }

    /// Deleted files directly in the folder `dir` ("" for the root).
    fn deleted_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.marks.iter().filter_map(move |(p, m)| {
            let parent = p.rsplit_once('/').map_or("", |(parent, _)| parent);
            (*m == GitMark::Deleted && parent == dir).then_some(p.as_str())
        })
    }
}

fn mark_of(xy: &str) -> Option<GitMark> {
    let (x, y) = (xy.chars().next()?, xy.chars().nth(1)?);
    Some(match (x, y) {
        ('D', _) | (_, 'D') => GitMark::Deleted,
        ('A', _) => GitMark::Added,
        ('R', _) | ('C', _) => GitMark::Renamed,
        ('.', '.') => return None,
        _ => GitMark::Modified,
    })
}

/// `rel` ("" or `a/b`) as a folder of `root`, refused if it leaves the project.
pub fn folder_path(root: &Path, rel: &str) -> Result<PathBuf, HostError> {
    let rel = Path::new(rel.trim_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(HostError::new(
            ErrorKind::NotFound,
            format!("{} is not a folder of the project", rel.display()),
        ));
    }
    Ok(root.join(rel))
}

/// Lists the folder `rel` of the project at `root`, with `status` marks.
pub fn list_folder(
    root: &Path,
    rel: &str,
    status: Option<&GitStatus>,
) -> Result<Folder, HostError> {
    let rel = rel.trim_matches('/');
    let dir = folder_path(root, rel)?;
    if !dir.is_dir() {
        return Err(HostError::new(
            ErrorKind::NotFound,
            format!("the folder {rel} is not there any more"),
        ));
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    // (The engine's walker: an ignore file a repository made hostile is never opened.)
    let walk = codewright_tools::files::walker(&dir)
        .max_depth(Some(1))
        .build();
    for entry in walk.filter_map(Result::ok).filter(|e| e.depth() == 1) {
        if entries.len() == FOLDER_MAX {
            truncated = true;
            break;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        entries.push(Entry {
            git: status.and_then(|s| s.mark(&path, is_dir)),
            changed_inside: is_dir && status.is_some_and(|s| s.changed_inside(&path)),
            name,
            path,
            dir: is_dir,
        });
    }
    if let Some(status) = status {
        for path in status.deleted_in(rel) {
            entries.push(Entry {
                name: path.rsplit('/').next().unwrap_or(path).to_string(),
                path: path.to_string(),
                dir: false,
                git: Some(GitMark::Deleted),
                changed_inside: false,
            });
        }
    }
    entries.sort_by(|a, b| {
        (!a.dir, a.name.to_lowercase(), &a.name).cmp(&(!b.dir, b.name.to_lowercase(), &b.name))
    });
    Ok(Folder {
        path: rel.to_string(),
        entries,
        truncated,
    })
}

/// git's own folder for the checkout `root` is in (where its index and HEAD are); `None` when
/// it is in no repository or git cannot be run.
fn git_dir_of(root: &Path) -> Option<PathBuf> {
    let repository = codewright_git::safe::Repository::open(root).ok()?;
    let mut git = repository.command();
    git.args(["rev-parse", "--absolute-git-dir"]);
    let out = codewright_git::safe::output(git)?;
    let dir = String::from_utf8(out.stdout).ok()?;
    Some(PathBuf::from(dir.trim_end_matches('\n')))
}

/// Watches the folders open in a project's tree (each on its own, not recursively) and the
/// repository's index, and reports which folders changed, once changes settle.
pub struct TreeWatcher {
    root: PathBuf,
    debouncer: Debouncer<RecommendedWatcher>,
    watched: BTreeSet<String>,
}

impl TreeWatcher {
    /// Starts watching nothing yet; `changed` gets the project-relative folders that changed
    /// ("" for the root; a change to git's index reports the root too, since every mark may
    /// have changed).
    pub fn new(
        root: &Path,
        changed: impl Fn(Vec<String>) + Send + 'static,
    ) -> Result<TreeWatcher, HostError> {
        let base = root.to_path_buf();
        // Commits, checkouts and staging change the marks without touching a listed folder:
        // git's own folder for this checkout is watched too — `.git` at the top of a main
        // checkout, elsewhere (a linked worktree, whose `.git` is a file; a project inside a
        // bigger repository) where git says it is.
        let git_dir = match root.join(".git") {
            git if git.is_dir() => Some(git),
            _ => git_dir_of(root),
        };
        let git_events = git_dir.clone();
        let debouncer = new_debouncer(SETTLE, move |events: DebounceEventResult| {
            let Ok(events) = events else { return };
            let mut folders = BTreeSet::new();
            for event in events {
                if git_events
                    .as_ref()
                    .is_some_and(|git| event.path.starts_with(git))
                {
                    folders.insert(String::new());
                    continue;
                }
                let Ok(rel) = event.path.strip_prefix(&base) else {
                    continue;
                };
                let rel = rel.to_string_lossy().replace('\\', "/");
                if rel == ".git" || rel.starts_with(".git/") {
                    folders.insert(String::new());
                    continue;
                }
                let parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_string();
                folders.insert(parent);
                folders.insert(rel); // the folder itself, when it was one
            }
            changed(folders.into_iter().collect());
        })
        .map_err(|e| {
            HostError::new(
                ErrorKind::Setup,
                format!("the project's files cannot be watched: {e}"),
            )
        })?;
        let mut watcher = TreeWatcher {
            root: root.to_path_buf(),
            debouncer,
            watched: BTreeSet::new(),
        };
        if let Some(git) = git_dir {
            let _ = watcher
                .debouncer
                .watcher()
                .watch(&git, RecursiveMode::NonRecursive);
        }
        Ok(watcher)
    }

    /// Watches exactly the folders `open` (project-relative; "" is the root).
    pub fn watch_only(&mut self, open: &[String]) {
        let wanted: BTreeSet<String> = open
            .iter()
            .map(|f| f.trim_matches('/').to_string())
            .filter(|f| folder_path(&self.root, f).is_ok())
            .collect();
        for gone in self.watched.difference(&wanted) {
            let _ = self.debouncer.watcher().unwatch(&self.root.join(gone));
        }
        for new in wanted.difference(&self.watched) {
            let _ = self
                .debouncer
                .watcher()
                .watch(&self.root.join(new), RecursiveMode::NonRecursive);
        }
        self.watched = wanted;
    }
}
