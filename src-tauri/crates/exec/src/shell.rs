//! The environment of commands (`bash`, background processes) and stdio MCP servers:
//! [`EnvFilter::environment`].
//!
//! It starts from the user's login-shell environment: a desktop app started from a launcher does
//! not have the PATH (nvm, cargo, pyenv, …) a terminal has. Whatever a command can read, the model
//! can print (`printenv`) into its context and the database, so inherited variables that hold
//! secrets are left out:
//!
//! - the key variables of the user's custom providers (the built-in ones are all `*_API_KEY`);
//! - names that look like secrets, in any case: `KEY`, `TOKEN`, `SECRET` or ending in `_KEY`,
//!   `_TOKEN`, `_SECRET`, `_PASS`, `_PAT`, `_DSN`, `APIKEY` or `AUTHTOKEN` (`OPENAI_API_KEY`,
//!   `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `SMTP_PASS`), and any containing `PASSWORD`,
//!   `PASSWD`, `PASSPHRASE` or `CREDENTIAL`;
//! - values that carry a password in a URL (`postgres://user:pass@host/db`).
//!
//! This is a filter on names and values, not a wall: a command can still reach what the user's
//! session can (the OS keyring over D-Bus, files in the home folder). Codewright's own
//! environment is not readable through `/proc/<pid>/environ`: both binaries make themselves
//! non-dumpable at start, and take the variables that look like secrets out of their environment
//! ([`protect_own_environment`]; proxies and the launcher's activation token stay), so that
//! nothing they start without this filter (WebKit's processes, `git`, `xdg-open`) inherits them,
//! to be read from its `/proc/<pid>/environ`.
//!
//! A project lets variables through by name with its `pass_env` setting
//! (`codewright-cli projects settings ID --pass-env NPM_TOKEN,GITHUB_TOKEN`). An MCP server's own
//! configuration (its `env` and secrets) is added after this filter, so it always reaches the
//! server. Codewright's own variables (`CODEWRIGHT_HOME`) hold no secret and are kept.

use codewright_protocol::ProjectId;
use codewright_store::Store;
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

const MARKER: &str = "__CODEWRIGHT_ENV__";
/// A login shell whose rc files hang must not hang Codewright.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What the store adds to the rules for one project: the names its `pass_env` setting lets
/// through, and the custom providers' key variables. Read it under the store's lock and call
/// [`EnvFilter::environment`] after (the first call runs the login shell).
#[derive(Debug, Clone)]
pub struct EnvFilter {
    /// Names the project lets through although they look like secrets.
    allow: Vec<String>,
    /// The key variables of the user's custom providers.
    provider_keys: Vec<String>,
}

impl EnvFilter {
    /// The filter for commands and MCP servers of `project` (`None`: outside any project,
    /// nothing is let through).
    pub fn read(store: &Store, project: Option<ProjectId>) -> EnvFilter {
        EnvFilter {
            allow: project
                .and_then(|p| store.project_settings(p).ok())
                .map(|settings| settings.pass_env)
                .unwrap_or_default(),
            provider_keys: store
                .custom_providers()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|p| p.api_key_env)
                .collect(),
        }
    }

    /// The login shell's environment without secrets (see the module doc).
    pub fn environment(&self) -> HashMap<String, String> {
        without_secrets(login_environment(), &self.allow, &self.provider_keys)
    }
}

/// `env` without `provider_keys` and secret-looking names, except those in `allow`.
fn without_secrets(
    env: &HashMap<String, String>,
    allow: &[String],
    provider_keys: &[String],
) -> HashMap<String, String> {
    env.iter()
        .filter(|&(name, value)| {
            allow.contains(name)
                || !(provider_keys.contains(name) || looks_secret(name) || has_url_password(value))
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASS", "PAT", "DSN"]
        .iter()
        .any(|word| name == *word || name.ends_with(&format!("_{word}")))
        || name.ends_with("APIKEY")
        || name.ends_with("AUTHTOKEN")
        || ["PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL"]
            .iter()
            .any(|word| name.contains(word))
}

/// `scheme://user:password@host…`: a URL that carries a password.
fn has_url_password(value: &str) -> bool {
    value.split_whitespace().any(|word| {
        word.split_once("://").is_some_and(|(scheme, rest)| {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            !scheme.is_empty()
                && authority
                    .rsplit_once('@')
                    .is_some_and(|(user_info, _)| user_info.contains(':'))
        })
    })
}

/// Makes this process non-dumpable, so the commands it starts (same user) cannot read its
/// environment, with the keys in it, from `/proc/<pid>/environ`; and takes the variables that look
/// like secrets (module doc) out of its environment, so the processes it starts do not inherit
/// them (but for proxies and the launcher's activation token, which it needs itself). A custom
/// provider's key variable whose name does not look like a secret stays. [`env_var`] still reads
/// them; commands and MCP servers get them only as [`EnvFilter::environment`] lets them through.
/// Call first thing in `main`, before any thread starts (changing the environment races with
/// threads reading it).
pub fn protect_own_environment() {
    // SAFETY: prctl with PR_SET_DUMPABLE and a constant argument touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong);
    }
    let taken: HashMap<String, String> = own_environment()
        .filter(|(name, value)| {
            (looks_secret(name) || has_url_password(value)) && !needed_here(name)
        })
        .collect();
    for name in taken.keys() {
        std::env::remove_var(name);
    }
    // Were they read (`env_var`) before this, the map would already be set, empty.
    let first = TAKEN.set(taken).is_ok();
    debug_assert!(first, "protect_own_environment runs once, first in main");
}

/// Variables that look like secrets but that this process itself must keep in its environment:
/// proxies (Codewright's HTTP clients read them from there; one may carry a password) and the
/// launcher's activation token (GTK reads it to give the first window the focus).
fn needed_here(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with("_proxy") || name == "XDG_ACTIVATION_TOKEN"
}

/// This process's environment variables, those that are not UTF-8 left out.
fn own_environment() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
}

/// The variables [`protect_own_environment`] took out of this process's environment.
static TAKEN: OnceLock<HashMap<String, String>> = OnceLock::new();

/// The secrets [`protect_own_environment`] took out of this process's environment (empty if it
/// was not called): to hand on where a process must start as this one did.
pub fn taken_secrets() -> &'static HashMap<String, String> {
    TAKEN.get_or_init(HashMap::new)
}

/// The variable `name` of this process's environment as it started: the secrets
/// [`protect_own_environment`] took out included (provider keys set as variables).
pub fn env_var(name: &str) -> Option<String> {
    taken_secrets()
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
}

/// Captures the login shell's environment now, on a thread of its own, so that the first command
/// does not wait on the user's rc files (~200 ms on a machine with pyenv and nvm; up to
/// [`TIMEOUT`]). A command that comes first waits for the same capture; it runs once either way.
pub fn warm_environment() {
    if ENV.get().is_some() {
        return;
    }
    std::thread::spawn(|| {
        login_environment();
    });
}

static ENV: OnceLock<HashMap<String, String>> = OnceLock::new();

/// The environment of `$SHELL -l` (captured once per process); this process's own environment
/// when that fails. Either with the secrets taken out at start, as a terminal would have them.
/// Unfiltered: what commands get is [`EnvFilter::environment`].
fn login_environment() -> &'static HashMap<String, String> {
    ENV.get_or_init(|| {
        capture().unwrap_or_else(|| own_environment().chain(taken_secrets().clone()).collect())
    })
}

fn capture() -> Option<HashMap<String, String>> {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let mut child = Command::new(&shell)
        .envs(taken_secrets())
        .args(["-l", "-c", &format!("printf '%s' {MARKER}; env -0")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
        let _ = tx.send(out);
    });
    let out = match rx.recv_timeout(TIMEOUT) {
        Ok(out) => out,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    };
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out);
    let (_, vars) = text.split_once(MARKER)?;
    let env: HashMap<String, String> = vars
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.contains_key("PATH").then_some(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_left_out_unless_the_project_lets_them_through() {
        let env: HashMap<String, String> = [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "CODEWRIGHT_HOME",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "github_token",
            "DB_PASSWORD",
            "CLIENT_SECRET",
            "MYLLM_APIKEY",
            "MY_LLM_CREDENTIAL",
            "NPM_TOKEN",
            "SMTP_PASS",
            "GITLAB_PAT",
            "SENTRY_DSN",
            "NPM_AUTHTOKEN",
            "GPG_PASSPHRASE",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ]
        .into_iter()
        .map(|name| (name.to_string(), "value".to_string()))
        .chain([
            (
                "DATABASE_URL".to_string(),
                "postgres://app:hunter2@db.local/app".to_string(),
            ),
            (
                "HOMEPAGE".to_string(),
                "https://example.com/a@b".to_string(),
            ),
        ])
        .collect();
        let kept = without_secrets(
            &env,
            &["NPM_TOKEN".to_string()],
            &["MY_LLM_CREDENTIAL".to_string()],
        );
        let mut names: Vec<&str> = kept.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "CODEWRIGHT_HOME",
                "HOME",
                "HOMEPAGE",
                "NPM_TOKEN",
                "PATH",
                "SSH_AUTH_SOCK"
            ]
        );
        assert_eq!(kept["PATH"], "value");
    }
}
