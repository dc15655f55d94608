//! Every `git` the engine starts on its own (the Files tab's status, the branch, a task's
//! worktree, its diff, commit and merge) comes from [`Repository::command`], which never runs a
//! program a repository configured.
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
    "gpg.ssh.defaultkeycommand",
    "interactive.difffilter",
    "sendemail.tocmd",
    "sendemail.cccmd",
    "sendemail.sendmailcmd",
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
    ("gpg", "program"),
    ("trailer", "cmd"),
    ("trailer", "command"),
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

/// Why Codewright does not run git on a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Git is older than 2.31, which cannot be told to leave every configured program off.
    TooOld(String),
    /// Git is missing, or the repository's configuration could not be read (so what it would run
    /// is not known).
    Unreadable(String),
}

/// The oldest git whose configuration can be overridden by the environment (`GIT_CONFIG_COUNT`)
/// and listed with its scopes.
const OLDEST: (u32, u32) = (2, 31);

/// How long one of Codewright's own git commands may take (a config that includes a named pipe
/// would otherwise hold it forever).
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A repository Codewright may run git in: git is new enough to be told to leave every
/// configured program off, and the program-running keys the repository's configuration sets are
/// known (read once, by [`Repository::open`]; every [`Repository::command`] sets them off).
pub struct Repository {
    root: std::path::PathBuf,
    keys: Vec<String>,
}

impl Repository {
    /// The repository at (or above) `root`. Refused — fail closed — when git is too old to be
    /// told so, or the repository's configuration cannot be listed.
    pub fn open(root: &Path) -> Result<Repository, Refused> {
        check_version()?;
        Ok(Repository {
            root: root.to_path_buf(),
            keys: repository_program_keys(root)?,
        })
    }

    /// A `git` that runs no program the repository configured; add the subcommand and its
    /// arguments, and run it with [`output`]. Diffs must add `--no-ext-diff --no-textconv` too
    /// (belt and braces for a driver named only in `.gitattributes`).
    pub fn command(&self) -> Command {
        let mut git = base(&self.root);
        // The keys every command sets off, as `-c` (read by every git), then those the
        // repository names, as `GIT_CONFIG_KEY_<n>`/`VALUE_<n>` pairs (a subsection holding `=` —
        // a credential URL — would split a `-c` wrongly). Both outrank every file.
        for key in ALWAYS_OFF {
            git.arg("-c").arg(format!("{key}={}", neutral(key)));
        }
        git.env("GIT_CONFIG_COUNT", self.keys.len().to_string());
        for (i, key) in self.keys.iter().enumerate() {
            git.env(format!("GIT_CONFIG_KEY_{i}"), key).env(
                format!("GIT_CONFIG_VALUE_{i}"),
                neutral(&key.to_lowercase()),
            );
        }
        git
    }
}

/// The keys set off for every command, whatever the repository says.
const ALWAYS_OFF: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.pager",
    "diff.external",
    "core.sshcommand",
    "core.askpass",
];

/// Runs `git` (from [`Repository::command`]) to its end, at most [`TIMEOUT`]: its output, or `None` when it
/// failed to start, failed, or took too long (then it is killed).
pub fn output(mut git: Command) -> Option<std::process::Output> {
    use std::io::Read;
    git.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = git.spawn().ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let stdout = reader.join().ok()?;
    status.success().then_some(std::process::Output {
        status,
        stdout,
        stderr: Vec::new(),
    })
}

/// Refuses a git older than [`OLDEST`] (read once per process).
fn check_version() -> Result<(), Refused> {
    static VERSION: std::sync::OnceLock<Result<(), Refused>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = output({
                let mut git = Command::new("git");
                git.arg("--version");
                git
            })
            .ok_or_else(|| Refused::Unreadable("git could not be run".into()))?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let version = text.split_whitespace().nth(2).unwrap_or_default();
            let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            if found >= OLDEST {
                Ok(())
            } else {
                Err(Refused::TooOld(text.trim().to_string()))
            }
        })
        .clone()
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
/// its case). Reading configuration runs nothing; a listing that fails is a refusal.
fn repository_program_keys(root: &Path) -> Result<Vec<String>, Refused> {
    let mut list = base(root);
    list.args(["config", "--list", "--show-scope", "-z"]);
    let out = output(list).ok_or_else(|| {
        Refused::Unreadable(format!(
            "the git configuration of {} could not be read",
            root.display()
        ))
    })?;
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
    Ok(keys)
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
