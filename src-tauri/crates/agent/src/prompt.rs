//! The system prompt, in this order: how the agent works, the role of the task's agent (a
//! planner, a reviewer… see [`codewright_extensions::agents`]), the project's own instructions
//! (AGENTS.md, else CLAUDE.md, in each folder from the repository's root down to the project's:
//! the nearer, the later), the project's context and rules from Codewright, the memory
//! (the project's and the user's), the skills (names and descriptions only), and facts about the
//! environment.

use codewright_extensions::{contained, memory, Installed};
use std::path::{Path, PathBuf};

const INSTRUCTIONS: &str = "You are Codewright, a coding agent working in the user's project. \
Use the tools to read, search, edit and run code; the user approves changes and commands. \
Read a file before editing it, make focused changes with edit_file, and check your work (build, \
tests) with bash when the project has them. When a call is rejected, respect the user's feedback. \
For multi-step work keep a plan with todo_write. Be concise: say what you did and what is left. The user may point at project files by writing @ before a path: read them when they matter.";

/// How the agent works, for a small local model (see [`is_small`]): short, with no example a
/// model can take for the task, and the ways of working that such a model manages (files shown
/// with the message, whole files in fenced blocks, the user's checks run for it; issue 34). It
/// is sent no tools' schemas ([`crate::Model::sends_tools`]) and told no call format: a call it
/// writes all the same (a JSON object) is still taken. Measured with Qwen2.5-Coder-1.5B, 8
/// samples of the first answer each: with the earlier prompt ("call the bash tool") and the
/// schemas, darts 0 and acronym 0 pass; with this one and the files in the message, darts 2,
/// pangram 6, acronym 1. One line more on how to call read_file and bash in JSON made it read
/// the files it had been shown, again and again (pangram 3 of 8, and a run that ended reading).
const SMALL_INSTRUCTIONS: &str = "You are Codewright, a coding agent working in the user's \
project folder. The files the user's message names are shown with it. To change a file, write \
its path on a line by itself, then the whole new file in one fenced code block. The commands the \
user names to check the work run after each change, and you are shown what they print.";

/// Whether `model` is a small local model: on a local server, with a window of 32k tokens or
/// less (as its server says, or as the user described it). Such a model gets the short prompt
/// and [`SMALL_MODEL_TOOLS`], has the files a message names read for it, and has whole files and
/// check commands in its words taken as calls (issue 34). A hosted model never is.
pub fn is_small(model: &crate::Model) -> bool {
    model.provider.is_local() && model.info.context_window <= 32_768
}

/// The built-in tools a small model may call (with the project's MCP tools), in the words of its
/// answers: a small model picks better among fewer, and a call of another is not taken.
pub const SMALL_MODEL_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "bash",
    "list_dir",
    "glob",
    "grep",
    // What `bash` started in the background is read and stopped with these.
    "process_output",
    "process_kill",
];

/// Project instruction files, in order of preference (the first found is used).
const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Instruction files larger than this (in bytes) are cut, while they are read.
const MAX_INSTRUCTIONS: u64 = 32 * 1024;

/// A run's system prompt and the files it was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub text: String,
    /// The instruction and memory files read into it (project-relative, or `~/…` for the
    /// user's), and the `SKILL.md` of each skill it lists: what the task window shows, so a file
    /// the Files tab hides (ignored by git) still cannot steer the agent unseen.
    pub files: Vec<String>,
    /// Instruction and memory files that were there but not read, each with why (a link out of
    /// the project, a pipe, not text): said to the user, never silently dropped.
    pub refused: Vec<String>,
}

/// Builds the system prompt for a project.
pub fn system_prompt(
    root: &Path,
    project_context: &str,
    project_rules: &str,
    installed: &Installed,
    date: &str,
    small: bool,
) -> SystemPrompt {
    let mut files = Vec::new();
    let mut refused = Vec::new();
    let mut out = String::from(if small {
        SMALL_INSTRUCTIONS
    } else {
        INSTRUCTIONS
    });
    if let Some(agent) = installed
        .agent
        .as_ref()
        .filter(|a| !a.instructions.is_empty())
    {
        out.push_str(&format!(
            "\n\n# Your role: the {} agent\n\n{}",
            agent.name, agent.instructions
        ));
    }
    let folders = instruction_folders(root);
    for folder in &folders {
        // Each must be a regular file inside the repository (a link out of it, to a key, is
        // refused; a pipe is never waited on), read only up to its cap.
        let Some((name, text)) =
            INSTRUCTION_FILES.iter().find_map(|name| {
                match contained::read_text(&folders[0], &folder.join(name), MAX_INSTRUCTIONS) {
                    Ok(found) => Some((name, found?.text)),
                    Err(why) => {
                        refused.push(why.to_string());
                        None
                    }
                }
            })
        else {
            continue;
        };
        // Named from the repository's root: `AGENTS.md`, `packages/web/AGENTS.md`.
        let path = folder
            .strip_prefix(&folders[0])
            .unwrap_or(folder)
            .join(name);
        files.push(path.display().to_string());
        out.push_str(&format!(
            "\n\n# Project instructions ({})\n\n{}",
            path.display(),
            text.trim()
        ));
    }
    if !project_context.trim().is_empty() {
        out.push_str(&format!(
            "\n\n# Project context\n\n{}",
            project_context.trim()
        ));
    }
    if !project_rules.trim().is_empty() {
        out.push_str(&format!("\n\n# Project rules\n\n{}", project_rules.trim()));
    }
    if let Some(places) = &installed.places {
        let memory = memory::prompt_section(places);
        if let Some(section) = memory.section {
            out.push_str(&format!("\n\n{section}"));
        }
        files.extend(memory.used.iter().map(|scope| match scope {
            memory::Scope::Project => ".codewright/memory.md".to_string(),
            memory::Scope::User => "~/.codewright/memory.md".to_string(),
        }));
        refused.extend(memory.refused);
    }
    if let Some(section) = installed.skills.prompt_section() {
        out.push_str(&format!("\n\n{section}"));
        let home = installed.places.as_ref().and_then(|p| p.home.as_deref());
        for skill in &installed.skills.skills {
            let file = skill.dir.join(codewright_extensions::skills::SKILL_FILE);
            let shown = match (file.strip_prefix(root), home.map(|h| file.strip_prefix(h))) {
                (Ok(inside), _) => inside.display().to_string(),
                (_, Some(Ok(mine))) => format!("~/{}", mine.display()),
                _ => file.display().to_string(),
            };
            files.push(shown);
        }
    }
    out.push_str(&format!(
        "\n\n# Environment\n\n- OS: {}\n- Working directory (the project root): {}\n- Date: {date}\n",
        std::env::consts::OS,
        root.display()
    ));
    if let Some(branch) = git_branch(root) {
        out.push_str(&format!("- Git branch: {branch}\n"));
    }
    SystemPrompt {
        text: out,
        files,
        refused,
    }
}

/// The folders whose instruction files apply, outermost first: from the repository's root (the
/// nearest folder at or above the project's with a `.git`) down to the project's root; only the
/// project's root when it is in no repository. A project in a monorepo's package gets the
/// repository's instructions and then its own, which come later and so take precedence.
fn instruction_folders(root: &Path) -> Vec<PathBuf> {
    let chain: Vec<&Path> = root.ancestors().collect();
    match chain.iter().position(|dir| dir.join(".git").exists()) {
        Some(top) => chain[..=top]
            .iter()
            .rev()
            .map(|p| p.to_path_buf())
            .collect(),
        None => vec![root.to_path_buf()],
    }
}

/// The checked-out branch, read from `.git/HEAD` (no process started; a file inside the project,
/// a few hundred bytes at most).
fn git_branch(root: &Path) -> Option<String> {
    let head = contained::read_text(root, &root.join(".git/HEAD"), 512).ok()??;
    let head = head.text;
    if !head.starts_with("ref: ") && !head.trim().chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => format!("(detached at {})", &head[..head.len().min(12)]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_read_into_the_prompt_are_named() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".git")).unwrap();
        std::fs::create_dir_all(project.path().join(".codewright")).unwrap();
        std::fs::create_dir_all(home.path().join(".codewright")).unwrap();
        std::fs::write(project.path().join("CLAUDE.md"), "rules").unwrap();
        std::fs::write(project.path().join(".codewright/memory.md"), "notes").unwrap();
        std::fs::write(home.path().join(".codewright/memory.md"), "mine").unwrap();
        let installed = Installed {
            places: Some(codewright_extensions::Places {
                project: project.path().to_path_buf(),
                home: Some(home.path().to_path_buf()),
                cache: None,
                project_trusted: false,
            }),
            ..Installed::default()
        };
        let prompt = system_prompt(project.path(), "", "", &installed, "2026-11-27", false);
        assert_eq!(
            prompt.files,
            [
                "CLAUDE.md",
                ".codewright/memory.md",
                "~/.codewright/memory.md"
            ]
        );
    }

    #[test]
    fn agents_md_wins_over_claude_md_and_facts_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules").unwrap();
        let prompt = system_prompt(
            dir.path(),
            "",
            "",
            &Installed::default(),
            "2026-11-22",
            false,
        )
        .text;
        assert!(prompt.contains("claude rules"));
        std::fs::write(dir.path().join("AGENTS.md"), "agents rules").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let prompt = system_prompt(
            dir.path(),
            "A CLI tool",
            "Use tabs",
            &Installed::default(),
            "2026-11-22",
            false,
        )
        .text;
        assert!(prompt.contains("(AGENTS.md)\n\nagents rules") && !prompt.contains("claude rules"));
        assert!(prompt.contains("A CLI tool") && prompt.contains("Use tabs"));
        assert!(prompt.contains("- Git branch: main") && prompt.contains("- Date: 2026-11-22"));
    }

    #[test]
    fn instructions_from_the_repository_root_down_to_a_package_nearest_last() {
        let repo = tempfile::tempdir().unwrap();
        let package = repo.path().join("packages/web");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "repo rules").unwrap();
        std::fs::write(repo.path().join("packages/CLAUDE.md"), "packages rules").unwrap();
        std::fs::write(package.join("AGENTS.md"), "web rules").unwrap();
        std::fs::write(package.join("CLAUDE.md"), "web claude rules").unwrap();
        let prompt =
            system_prompt(&package, "", "", &Installed::default(), "2026-11-25", false).text;
        let at = |text: &str| {
            prompt
                .find(text)
                .unwrap_or_else(|| panic!("{text}: {prompt}"))
        };
        assert!(at("(AGENTS.md)\n\nrepo rules") < at("(packages/CLAUDE.md)\n\npackages rules"));
        assert!(at("packages rules") < at("(packages/web/AGENTS.md)\n\nweb rules"));
        assert!(!prompt.contains("web claude rules"));

        // Outside any repository only the project's own folder counts, not the folders above.
        let outside = tempfile::tempdir().unwrap();
        let project = outside.path().join("project");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(outside.path().join("AGENTS.md"), "above rules").unwrap();
        std::fs::write(project.join("AGENTS.md"), "own rules").unwrap();
        let prompt =
            system_prompt(&project, "", "", &Installed::default(), "2026-11-25", false).text;
        assert!(prompt.contains("(AGENTS.md)\n\nown rules") && !prompt.contains("above rules"));
    }
}
