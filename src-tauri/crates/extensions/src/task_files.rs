//! Task files (ayder's convention): Markdown files in `<project>/.codewright/tasks/` (and
//! `.ayder/tasks/`), one piece of work each, with an id, a title and a status, that
//! `codewright-cli exec --implement ID` hands to the agent and marks done when it finishes.
//!
//! The id and status come from front matter (`id:`, `status:`) or from list lines
//! (`- **ID:** TASK-001`, `- **Status:** pending`); without either, the id is the file name's
//! `TASK-001` part and the status is pending. The title is the first `# ` heading.

use crate::{front_matter, Broken, ExtensionError, Source};
use std::path::{Path, PathBuf};

/// One task file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFile {
    pub id: String,
    pub title: String,
    /// As written (`pending`, `in progress`, `done` …).
    pub status: String,
    pub path: PathBuf,
    /// The file without its front matter: what the agent is asked to implement.
    #[serde(skip)]
    pub body: String,
}

impl TaskFile {
    /// Whether its status says it is finished.
    pub fn is_done(&self) -> bool {
        matches!(
            self.status.to_lowercase().as_str(),
            "done" | "completed" | "complete" | "closed"
        )
    }
}

/// The project's task files, sorted by id, and the files that could not be read.
pub fn discover(project: &Path) -> (Vec<TaskFile>, Vec<Broken>) {
    let mut files = Vec::new();
    let mut broken = Vec::new();
    for folder in [".codewright/tasks", ".ayder/tasks"] {
        if !crate::contained::is_dir_inside(project, &project.join(folder)) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(project.join(folder)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            match read(project, &path) {
                Ok(file) if files.iter().any(|f: &TaskFile| f.id == file.id) => {
                    broken.push(Broken {
                        path,
                        source: Source::Project,
                        reason: format!("another task file has the id {}", file.id),
                    })
                }
                Ok(file) => files.push(file),
                Err(reason) => broken.push(Broken {
                    path,
                    source: Source::Project,
                    reason,
                }),
            }
        }
    }
    files.sort_by(|a, b| a.id.cmp(&b.id));
    (files, broken)
}

/// A task file is read whole up to this; a larger one is refused.
const MAX_FILE: u64 = 1024 * 1024;

fn read(project: &Path, path: &Path) -> Result<TaskFile, String> {
    let bytes = crate::contained::read(project, path, MAX_FILE)
        .map_err(|e| e.to_string())?
        .ok_or("it is gone")?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("it is over {} KB", MAX_FILE / 1024));
    }
    let text = String::from_utf8(bytes).map_err(|_| "it is not text".to_string())?;
    parse(&text, path)
}

/// Reads a task file's `text`; `path` is where it lives (its name gives the id when nothing
/// else does). Errors say what is wrong with the file.
pub fn parse(text: &str, path: &Path) -> Result<TaskFile, String> {
    let doc = front_matter::parse(text, false)?;
    let line_field = |name: &str| {
        doc.body.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix("- **")?;
            let (key, value) = rest.split_once(":**")?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = doc
        .text("id")?
        .or_else(|| line_field("ID"))
        .or_else(|| {
            // TASK-001-some-slug.md → TASK-001
            let mut parts = stem.splitn(3, '-');
            match (parts.next(), parts.next()) {
                (Some(word), Some(n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => {
                    Some(format!("{word}-{n}"))
                }
                _ => None,
            }
        })
        .unwrap_or(stem);
    let title = doc
        .text("title")?
        .or_else(|| {
            doc.body
                .lines()
                .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_string()))
        })
        .unwrap_or_else(|| id.clone());
    let status = doc
        .text("status")?
        .or_else(|| line_field("Status"))
        .unwrap_or_else(|| "pending".into());
    Ok(TaskFile {
        id,
        title,
        status,
        path: path.to_path_buf(),
        body: doc.body.trim().to_string(),
    })
}

/// Writes `status` into the file where its status is written (the front matter's `status:`,
/// else the `- **Status:**` line, else a new such line under the title), keeping everything else
/// as it was; the file is replaced whole or not at all.
pub fn set_status(file: &TaskFile, status: &str) -> Result<(), ExtensionError> {
    // (Read and written inside its project, as `discover` read it: a link swapped in since —
    // for the file or its folder — is refused. Task files live in `<project>/.<tool>/tasks/`.)
    let folder = file.path.ancestors().nth(3).unwrap_or(Path::new("."));
    let shown = file.path.display();
    let bytes = crate::contained::read(folder, &file.path, MAX_FILE)?
        .ok_or_else(|| ExtensionError::NotFound(format!("{shown} is gone")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(ExtensionError::Refused(format!(
            "{shown} is over {} KB",
            MAX_FILE / 1024
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ExtensionError::Refused(format!("{shown} is not text")))?;
    let text = with_status(&text, &file.path, status)
        .map_err(|e| ExtensionError::Invalid(format!("{shown}: {e}")))?;
    crate::contained::check_writable(folder, &file.path)?;
    crate::write_whole(&file.path, text.as_bytes())
        .map_err(|e| ExtensionError::File(format!("{shown} could not be written: {e}")))
}

/// `text` (a task file living at `path`) with its status set to `status`, as [`set_status`]
/// writes it. The result is read back: if it would not read as the same task with the new
/// status (front matter too unusual to edit line by line), it is an error and nothing is
/// written.
pub fn with_status(text: &str, path: &Path, status: &str) -> Result<String, String> {
    let before = parse(text, path)?;
    let (bom, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
    let ending = |l: &str| {
        if l.ends_with("\r\n") {
            "\r\n"
        } else if l.ends_with('\n') {
            "\n"
        } else {
            ""
        }
        .to_string()
    };
    let front_end = (lines.first().is_some_and(|l| l.trim_end() == "---"))
        .then(|| {
            lines
                .iter()
                .skip(1)
                .position(|l| l.trim_end() == "---")
                .map(|p| p + 1)
        })
        .flatten();
    let mut done = false;
    if let Some(end) = front_end {
        // The top-level key only (a nested `status:` belongs to something else), and with it the
        // lines that continue its value (indented, or blank).
        if let Some(at) = (1..end).find(|&i| lines[i].starts_with("status:")) {
            let continued = lines[at + 1..end]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.starts_with([' ', '\t']))
                .count();
            let line = format!("status: {status}{}", ending(&lines[at]));
            lines.splice(at..at + 1 + continued, [line]);
            done = true;
        }
    }
    if !done {
        for line in lines.iter_mut().skip(front_end.map_or(0, |e| e + 1)) {
            let trimmed = line.trim_start();
            let named = trimmed
                .strip_prefix("- **")
                .and_then(|rest| rest.split_once(":**"))
                .is_some_and(|(key, _)| key.eq_ignore_ascii_case("Status"));
            if named {
                let indent = &line[..line.len() - trimmed.len()];
                *line = format!("{indent}- **Status:** {status}{}", ending(line));
                done = true;
                break;
            }
        }
    }
    if !done {
        match front_end {
            // In the front matter, before its closing line.
            Some(end) => lines.insert(end, format!("status: {status}{nl}")),
            None => {
                let at = lines
                    .iter()
                    .position(|l| l.starts_with("# "))
                    .map_or(0, |p| p + 1);
                // After a last line without its line ending, the new line starts one.
                let lead = match at.checked_sub(1).map(|p| ending(&lines[p])) {
                    Some(e) if e.is_empty() => nl,
                    _ => "",
                };
                lines.insert(at, format!("{lead}{nl}- **Status:** {status}{nl}"));
            }
        }
    }
    let written = format!("{bom}{}", lines.concat());
    match parse(&written, path) {
        Ok(after)
            if after.status == status && after.id == before.id && after.title == before.title =>
        {
            Ok(written)
        }
        _ => Err(format!(
            "its status could not be changed to \"{status}\" without changing what the file says; change it by hand"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_files_are_read_in_both_styles_and_their_status_is_written_in_place() {
        let project = tempfile::tempdir().unwrap();
        let ours = project.path().join(".codewright/tasks");
        let ayder = project.path().join(".ayder/tasks");
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::create_dir_all(&ayder).unwrap();
        std::fs::write(
            ours.join("login.md"),
            "---\nid: T-2\nstatus: pending\n---\n# Add a login page\n\nUse the form kit.\n",
        )
        .unwrap();
        std::fs::write(ayder.join("TASK-001-fix-notes.md"), "# Fix the notes\n\n- **ID:** TASK-001\n- **Status:** pending\n\nThe notes lose their last line.\n").unwrap();
        std::fs::write(
            ayder.join("TASK-003-plain.md"),
            "# Plain\r\n\r\nNothing else.\r\n",
        )
        .unwrap();
        std::fs::write(ayder.join("TASK-004-dup.md"), "# Dup\n\n- **ID:** T-2\n").unwrap();
        std::fs::write(
            ayder.join("TASK-005-bom.md"),
            "\u{feff}---\nstatus: pending\n---\n# Bom\n",
        )
        .unwrap();
        let (files, broken) = discover(project.path());
        let seen: Vec<(&str, &str, &str)> = files
            .iter()
            .map(|f| (f.id.as_str(), f.title.as_str(), f.status.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("T-2", "Add a login page", "pending"),
                ("TASK-001", "Fix the notes", "pending"),
                ("TASK-003", "Plain", "pending"),
                ("TASK-005", "Bom", "pending")
            ]
        );
        assert_eq!(broken.len(), 1);
        assert!(broken[0]
            .reason
            .contains("another task file has the id T-2"));

        for file in &files {
            set_status(file, "done").unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(ours.join("login.md")).unwrap(),
            "---\nid: T-2\nstatus: done\n---\n# Add a login page\n\nUse the form kit.\n"
        );
        assert_eq!(
            std::fs::read_to_string(ayder.join("TASK-001-fix-notes.md")).unwrap(),
            "# Fix the notes\n\n- **ID:** TASK-001\n- **Status:** done\n\nThe notes lose their last line.\n"
        );
        assert_eq!(
            std::fs::read_to_string(ayder.join("TASK-003-plain.md")).unwrap(),
            "# Plain\r\n\r\n- **Status:** done\r\n\r\nNothing else.\r\n"
        );
        assert_eq!(
            std::fs::read_to_string(ayder.join("TASK-005-bom.md")).unwrap(),
            "\u{feff}---\nstatus: done\n---\n# Bom\n"
        );
        let (files, _) = discover(project.path());
        assert!(files.iter().all(TaskFile::is_done));
    }

    #[test]
    fn a_status_in_unusual_front_matter_is_written_so_the_file_still_reads_or_not_at_all() {
        let path = Path::new("TASK-007.md");
        let set = |text: &str| with_status(text, path, "done");
        // A nested `status:` is someone else's; the task's own is added.
        assert_eq!(
            set("---\nmeta:\n  status: draft\n---\n# T\n").unwrap(),
            "---\nmeta:\n  status: draft\nstatus: done\n---\n# T\n"
        );
        // A value over several lines is replaced whole.
        assert_eq!(
            set("---\nstatus: >\n  in\n\n  progress\nid: X-1\n---\nbody").unwrap(),
            "---\nstatus: done\nid: X-1\n---\nbody"
        );
        // A last line without its line ending.
        assert_eq!(set("# T").unwrap(), "# T\n\n- **Status:** done\n");
        // A `status:` line inside a quoted value cannot be edited by lines: refused, not broken.
        let quoted = "---\ntitle: \"a\nstatus: b\"\n---\n";
        assert!(parse(quoted, path).is_ok());
        assert!(set(quoted).unwrap_err().contains("change it by hand"));
    }
}
