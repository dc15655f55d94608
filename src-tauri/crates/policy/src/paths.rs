//! Resolving the paths a model writes against the project root. A path that leaves the root —
//! through `..`, as an absolute path, or through a symlink that points outside (dangling or not)
//! — is external and needs its own approval.

use std::path::{Component, Path, PathBuf};

/// A path a tool call names, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Where it really is: absolute, `..` and symlinks resolved (as far as the path exists).
    pub real: PathBuf,
    /// How to show it: relative to the project root when inside, absolute otherwise.
    pub display: String,
    /// Inside the project root.
    pub inside: bool,
}

/// Folders of a project whose files steer what runs later, beyond the file itself: git's (its
/// config and hooks run programs), Codewright's and Claude's (memory, agents, commands and skills
/// that every later task obeys). A write into one is asked in every mode but yolo.
pub const PROTECTED_FOLDERS: &[&str] = &[".git", ".codewright", ".claude"];

impl ResolvedPath {
    /// The protected folder ([`PROTECTED_FOLDERS`]) this path of the project is in, if any (at
    /// any depth: a nested repository's `.git` too).
    pub fn protected(&self) -> Option<&'static str> {
        if !self.inside {
            return None;
        }
        protected_folder(&self.display)
    }
}

/// The protected folder ([`PROTECTED_FOLDERS`]) a path written as `text` goes into, if any.
pub fn protected_folder(text: &str) -> Option<&'static str> {
    Path::new(text).components().find_map(|c| match c {
        Component::Normal(name) => PROTECTED_FOLDERS
            .iter()
            .find(|p| name == std::ffi::OsStr::new(p))
            .copied(),
        _ => None,
    })
}

/// Why a write into the protected folder `folder` is asked (the approval shows it).
pub fn protected_reason(folder: &str) -> String {
    match folder {
        ".git" => {
            "it changes .git/, git's own folder: its config and hooks can make git run programs"
                .into()
        }
        other => format!(
            "it changes {other}/, whose memory, agents, commands and skills steer every later task"
        ),
    }
}

/// Resolves `input` (relative to `root`, or absolute; `~/` is the home folder). `root` must be
/// canonical.
pub fn resolve(root: &Path, input: &str) -> Result<ResolvedPath, String> {
    let input = input.trim();
    if input.is_empty() {
        return Err("the path is empty; give a path relative to the project root".into());
    }
    if input.contains('\0') {
        return Err("the path contains a NUL byte".into());
    }
    // `@src/main.rs`, as the user points at files (and small models copy): the file, when the
    // path with the `@` does not exist and the one without it does.
    let input = match input.strip_prefix('@') {
        Some(rest) if !root.join(input).exists() && root.join(rest).exists() => rest,
        _ => input,
    };
    let joined = if let Some(rest) = input.strip_prefix("~/") {
        dirs_home().join(rest)
    } else {
        root.join(input)
    };
    let lexical = normalize(&joined);
    let real = real_path(&lexical)?;
    let inside = real.starts_with(root);
    let display = if inside {
        let rel = real.strip_prefix(root).unwrap_or(Path::new(""));
        if rel.as_os_str().is_empty() {
            ".".to_string()
        } else {
            rel.to_string_lossy().into_owned()
        }
    } else {
        real.to_string_lossy().into_owned()
    };
    Ok(ResolvedPath {
        real,
        display,
        inside,
    })
}

fn dirs_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Removes `.` and applies `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Symlinks followed at most while resolving one path (Linux's limit too).
const MAX_SYMLINKS: usize = 40;

/// Canonicalizes the longest existing prefix of `input` (following symlinks) and appends the rest,
/// so a new file under a symlinked folder still resolves to where it would really be written. A
/// dangling symlink on the way is followed to its target too: writing through it creates the
/// target, so the target is what a path check must judge.
fn real_path(input: &Path) -> Result<PathBuf, String> {
    let mut path = input.to_path_buf();
    'links: for _ in 0..MAX_SYMLINKS {
        let mut existing = path.clone();
        let mut rest: Vec<std::ffi::OsString> = Vec::new();
        loop {
            if let Ok(real) = existing.canonicalize() {
                return Ok(normalize(&with_rest(real, &rest)));
            }
            if let Ok(target) = std::fs::read_link(&existing) {
                let parent = existing.parent().unwrap_or(Path::new("/"));
                let parent = parent
                    .canonicalize()
                    .unwrap_or_else(|_| parent.to_path_buf());
                path = with_rest(normalize(&parent.join(target)), &rest);
                continue 'links;
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent.to_path_buf();
                }
                _ => return Ok(path),
            }
        }
    }
    Err(format!(
        "{} goes through more than {MAX_SYMLINKS} symlinks (a symlink loop?)",
        input.display()
    ))
}

/// `base` with the names of `rest` (innermost first) appended.
fn with_rest(mut base: PathBuf, rest: &[std::ffi::OsString]) -> PathBuf {
    for part in rest.iter().rev() {
        base.push(part);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_and_outside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("src-link")).unwrap();

        let inside = |p: &str| resolve(&root, p).unwrap();
        assert_eq!(inside("src/main.rs").display, "src/main.rs");
        // `@path`, as the user points at files: the file, while no file is named with the `@`.
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        assert_eq!(inside("@src/main.rs").display, "src/main.rs");
        assert_eq!(inside("@src/nothing.rs").display, "@src/nothing.rs");
        assert!(inside("src/main.rs").inside);
        assert_eq!(
            inside("./src/../src/new/deep.rs").display,
            "src/new/deep.rs"
        );
        assert_eq!(inside(".").display, ".");
        assert_eq!(inside("src-link/a.rs").display, "src/a.rs");
        let abs = root.join("src/x.rs");
        assert!(inside(abs.to_str().unwrap()).inside);

        for escape in [
            "../outside.txt",
            "/etc/passwd",
            "etc-link/passwd",
            "src/../../x",
        ] {
            let r = resolve(&root, escape).unwrap();
            assert!(!r.inside, "{escape} should be external");
            assert!(r.display.starts_with('/'), "{escape} shown absolute");
        }
        assert_eq!(
            resolve(&root, "etc-link/passwd").unwrap().real,
            PathBuf::from("/etc/passwd")
        );
        assert!(resolve(&root, "  ").is_err());
    }

    #[test]
    fn dangling_symlinks_resolve_to_their_targets() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let other = tempfile::tempdir().unwrap();
        let outside = other.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("new/target.txt", root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(outside.join("gone"), root.join("out-link")).unwrap();
        std::os::unix::fs::symlink("loop-b", root.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", root.join("loop-b")).unwrap();

        let link = resolve(&root, "link.txt").unwrap();
        assert_eq!(link.real, root.join("new/target.txt"));
        assert!(link.inside);
        assert_eq!(link.display, "new/target.txt");
        let out = resolve(&root, "out-link/file.txt").unwrap();
        assert_eq!(out.real, outside.join("gone/file.txt"));
        assert!(!out.inside);
        let looped = resolve(&root, "loop-a").unwrap_err();
        assert!(looped.contains("symlink loop"), "{looped}");
    }
}
