//! Codewright's own git: every `git` the engine starts on its own (the Files tab's status, the
//! branch, later worktrees and commits) comes from [`command`], which never runs a program a
//! repository configured.
//!
//! A repository's `.git/config` is written by whoever made it — an archive's author, or a model
//! that wrote the file or ran `git config` — and git runs programs it names: the fsmonitor hook
//! on every status, hooks, filters (clean on a status that rehashes a file), diff drivers and
//! textconv, pagers, editors, credential helpers, ssh and proxy commands. The user's own
//! (global) configuration is theirs and stays; the system's is not read; every such key the
//! repository sets (its own config, a worktree's, or a file it includes) is set back to nothing
//! for the one command.

use std::path::Path;
use std::process::Command;

/// Keys that make git run a program, by their exact name.
const PROGRAM_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "credential.helper",
    "diff.external",
    "diff.tool",
    "merge.tool",
    "sequence.editor",
    "gpg.program",
    "uploadpack.packobjectshook",
    "web.browser",
    "init.templatedir",
];

/// Keys of the form `<section>.<name>.<key>` that run a program, as (section, key).
const PROGRAM_SUBKEYS: &[(&str, &str)] = &[
    ("filter", "clean"),
    ("filter", "smudge"),
    ("filter", "process"),
    ("diff", "command"),
    ("diff", "textconv"),
    ("merge", "driver"),
    ("difftool", "cmd"),
    ("difftool", "path"),
    ("mergetool", "cmd"),
    ("mergetool", "path"),
    ("credential", "helper"),
    ("pager", ""),
    ("gpg", "program"),
    ("remote", "uploadpack"),
    ("remote", "receivepack"),
    ("remote", "vcs"),
    ("submodule", "update"),
    ("browser", "cmd"),
    ("browser", "path"),
    ("man", "cmd"),
    ("man", "path"),
];

/// What a key is set to for Codewright's commands: off.
fn neutral(key: &str) -> &'static str {
    match key {
        "core.fsmonitor" => "false",
        "core.hookspath" => "/dev/null",
        "core.pager" => "cat",
        _ => "",
    }
}

/// `key` with its section and last part in lower case (git compares those so), its subsection
/// as it is.
fn lowercase_outside_subsection(key: &str) -> String {
    match (key.split_once('.'), key.rsplit_once('.')) {
        (Some((section, _)), Some((head, last))) if head.len() > section.len() => format!(
            "{}{}.{}",
            section.to_lowercase(),
            &head[section.len()..],
            last.to_lowercase()
        ),
        _ => key.to_lowercase(),
    }
}

/// Whether git runs a program named by `key` (section and last part in lower case).
pub fn runs_a_program(key: &str) -> bool {
    if PROGRAM_KEYS.contains(&key) {
        return true;
    }
    // `pager.<command>` is two-part; the others are `<section>.<subsection>.<key>`.
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    if section == "pager" {
        return true;
    }
    let last = rest.rsplit('.').next().unwrap_or(rest);
    rest.contains('.')
        && PROGRAM_SUBKEYS
            .iter()
            .any(|(s, k)| *s == section && *k == last)
}

/// A `git` for the repository at (or above) `root` that runs no program the repository
/// configured; add the subcommand and its arguments. Diffs must add `--no-ext-diff
/// --no-textconv` too (belt and braces for a driver named only in `.gitattributes`).
pub fn command(root: &Path) -> Command {
    let mut overrides: Vec<(String, &'static str)> = [
        "core.fsmonitor",
        "core.hookspath",
        "core.pager",
        "diff.external",
        "core.sshcommand",
        "core.askpass",
    ]
    .iter()
    .map(|k| (k.to_string(), neutral(k)))
    .collect();
    for key in repository_program_keys(root) {
        if !overrides.iter().any(|(k, _)| *k == key) {
            let value = neutral(&key.to_lowercase());
            overrides.push((key, value));
        }
    }
    // (As `GIT_CONFIG_KEY_<n>`/`VALUE_<n>` pairs rather than `-c key=value`, which a subsection
    // holding `=` — a credential URL — would split wrongly. Both outrank every file.)
    let mut git = base(root);
    git.env("GIT_CONFIG_COUNT", overrides.len().to_string());
    for (i, (key, value)) in overrides.into_iter().enumerate() {
        git.env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    git
}

/// `git -C root` with an environment that reads no system configuration, asks for nothing on a
/// terminal, pages nothing, and never takes the index lock for what only reads.
fn base(root: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("--no-pager")
        .arg("-C")
        .arg(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_EDITOR", "true")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null());
    git
}

/// The program-running keys the repository's own configuration sets (its `config`, a
/// worktree's `config.worktree`, and what they include), as git names them (a subsection keeps
/// its case). Reading configuration runs nothing.
fn repository_program_keys(root: &Path) -> Vec<String> {
    let Ok(out) = base(root)
        .args(["config", "--list", "--show-scope", "-z"])
        .output()
    else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    let mut fields = out.stdout.split(|b| *b == 0);
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        if !matches!(scope, b"local" | b"worktree") {
            continue;
        }
        let key = entry.split(|b| *b == b'\n').next().unwrap_or_default();
        let key = String::from_utf8_lossy(key).into_owned();
        if runs_a_program(&lowercase_outside_subsection(&key)) && !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_that_run_programs_are_known() {
        for key in [
            "core.fsmonitor",
            "filter.lfs.clean",
            "filter.x.y.process",
            "diff.evil.textconv",
            "pager.status",
            "credential.https://example.com.helper",
            "remote.origin.uploadpack",
            "submodule.lib.update",
        ] {
            assert!(runs_a_program(key), "{key}");
        }
        for key in [
            "core.filemode",
            "user.name",
            "remote.origin.url",
            "filter.clean",
        ] {
            assert!(!runs_a_program(key), "{key}");
        }
    }
}
