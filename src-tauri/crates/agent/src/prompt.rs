//! The system prompt, in this order: how the agent works, the project's own instructions
//! (AGENTS.md, else CLAUDE.md), the project's context and rules from Codewright, the memory
//! (the project's and the user's), the skills (names and descriptions only), and facts about the
//! environment.

use codewright_extensions::{memory, Installed};
use std::path::Path;

const INSTRUCTIONS: &str = "You are Codewright, a coding agent working in the user's project. \
Use the tools to read, search, edit and run code; the user approves changes and commands. \
Read a file before editing it, make focused changes with edit_file, and check your work (build, \
tests) with bash when the project has them. When a call is rejected, respect the user's feedback. \
For multi-step work keep a plan with todo_write. Be concise: say what you did and what is left. The user may point at project files as @path (e.g. @src/main.rs): read them when they matter.";

/// Project instruction files, in order of preference (the first found is used).
const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Instruction files larger than this are cut.
const MAX_INSTRUCTIONS: usize = 32 * 1024;

/// Builds the system prompt for a project.
pub fn system_prompt(
    root: &Path,
    project_context: &str,
    project_rules: &str,
    installed: &Installed,
    date: &str,
) -> String {
    let mut out = String::from(INSTRUCTIONS);
    for name in INSTRUCTION_FILES {
        if let Ok(text) = std::fs::read_to_string(root.join(name)) {
            let text: String = text.chars().take(MAX_INSTRUCTIONS).collect();
            out.push_str(&format!(
                "\n\n# Project instructions ({name})\n\n{}",
                text.trim()
            ));
            break;
        }
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
    if let Some(section) = installed.places.as_ref().and_then(memory::prompt_section) {
        out.push_str(&format!("\n\n{section}"));
    }
    if let Some(section) = installed.skills.prompt_section() {
        out.push_str(&format!("\n\n{section}"));
    }
    out.push_str(&format!(
        "\n\n# Environment\n\n- OS: {}\n- Working directory (the project root): {}\n- Date: {date}\n",
        std::env::consts::OS,
        root.display()
    ));
    if let Some(branch) = git_branch(root) {
        out.push_str(&format!("- Git branch: {branch}\n"));
    }
    out
}

/// The checked-out branch, read from `.git/HEAD` (no process started).
fn git_branch(root: &Path) -> Option<String> {
    let head = std::fs::read_to_string(root.join(".git/HEAD")).ok()?;
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
    fn agents_md_wins_over_claude_md_and_facts_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules").unwrap();
        let prompt = system_prompt(dir.path(), "", "", &Installed::default(), "2026-11-22");
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
        );
        assert!(prompt.contains("(AGENTS.md)\n\nagents rules") && !prompt.contains("claude rules"));
        assert!(prompt.contains("A CLI tool") && prompt.contains("Use tabs"));
        assert!(prompt.contains("- Git branch: main") && prompt.contains("- Date: 2026-11-22"));
    }
}
