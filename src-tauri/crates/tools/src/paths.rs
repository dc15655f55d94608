//! Resolving the paths a model writes against the project root. A path that leaves the root —
//! through `..`, as an absolute path, or through a symlink that points outside — is external and
//! needs its own approval.

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
    let joined = if let Some(rest) = input.strip_prefix("~/") {
        dirs_home().join(rest)
    } else {
        root.join(input)
    };
    let lexical = normalize(&joined);
    let real = real_path(&lexical);
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

/// Canonicalizes the longest existing prefix of `path` (following symlinks) and appends the rest,
/// so a new file under a symlinked folder still resolves to where it would really be written.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
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
}
