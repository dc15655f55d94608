//! The user's login-shell environment. A desktop app started from a launcher does not have the
//! PATH (nvm, cargo, pyenv, …) a terminal has; commands and MCP servers get this one instead.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

const MARKER: &str = "__CODEWRIGHT_ENV__";
/// A login shell whose rc files hang must not hang Codewright.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The environment of `$SHELL -l` (captured once per process); this process's own environment
/// when that fails.
pub fn login_environment() -> &'static HashMap<String, String> {
    static ENV: OnceLock<HashMap<String, String>> = OnceLock::new();
    ENV.get_or_init(|| capture().unwrap_or_else(|| std::env::vars().collect()))
}

fn capture() -> Option<HashMap<String, String>> {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let mut child = Command::new(&shell)
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
