//! Shell processes: starting a command in its own process group (so the whole tree can be killed
//! — no orphans), collecting its output (bounded: [`crate::output`]), and the table of background
//! processes a task started.

use crate::output::CommandOutput;
pub use crate::reaper::group_alive;
use codewright_protocol::ProcessInfo;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a process group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(1000);

/// A started shell command.
pub struct Started {
    /// Process id, which is also its process group id.
    pub pid: u32,
    /// Its output (stdout and stderr interleaved, in order), collected as it arrives.
    pub output: Arc<CommandOutput>,
    /// Resolves when the output has ended (every process holding the pipe closed it).
    pub output_ended: oneshot::Receiver<()>,
    /// The exit code (`None` when killed by a signal).
    pub exit: oneshot::Receiver<Option<i32>>,
}

/// Starts `command` under bash (or sh) in `cwd` with `env`, in a new process group that dies
/// with Codewright ([`crate::reaper`]), optionally confined by a Landlock ruleset.
pub fn spawn_shell(
    command: &str,
    cwd: &Path,
    env: &HashMap<String, String>,
    sandbox: Option<landlock::RulesetCreated>,
) -> Result<Started, String> {
    use std::os::unix::process::CommandExt;
    let shell = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .env("CODEWRIGHT", "1")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .process_group(0);
    if let Some(ruleset) = sandbox {
        crate::sandbox::confine(&mut cmd, ruleset);
    }
    crate::reaper::die_with_us(&mut cmd);
    let mut child = crate::reaper::spawn(move || {
        let child = cmd.spawn();
        // The Command (and its copies of the pipe's write end) must be gone so EOF can arrive.
        drop(cmd);
        child
    })
    .map_err(|e| format!("cannot start {shell}: {e}"))?;
    let pid = child.id();
    crate::reaper::watch(pid);
    let (output, output_ended) = CommandOutput::collect(reader);
    let (exit_tx, exit_rx) = oneshot::channel();
    std::thread::spawn(move || {
        let code = child.wait().ok().and_then(|s| s.code());
        let _ = exit_tx.send(code);
        crate::reaper::forget_when_empty(pid);
    });
    Ok(Started {
        pid,
        output,
        output_ended,
        exit: exit_rx,
    })
}

/// Sends `signal` to every process of the group.
pub fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: plain syscall; a group that is already gone gives ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid as libc::pid_t, signal);
    }
}

/// SIGTERM to the group, then SIGKILL to whatever is left after a grace period.
pub async fn terminate_group(pgid: u32) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + GRACE;
    while group_alive(pgid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal_group(pgid, libc::SIGKILL);
}

/// A background process.
struct Background {
    command: String,
    pid: u32,
    output: Arc<CommandOutput>,
    exit: Mutex<Option<Option<i32>>>,
}

/// The background processes of one task. Dropping the table (with the last session or agent
/// holding it) kills them all.
#[derive(Default)]
pub struct ProcessTable {
    processes: Mutex<HashMap<u32, Arc<Background>>>,
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl ProcessTable {
    /// Registers a started process (its output keeps being collected until it ends).
    pub fn adopt(&self, command: &str, started: Started) -> u32 {
        let Started {
            pid, output, exit, ..
        } = started;
        let bg = Arc::new(Background {
            command: command.to_string(),
            pid,
            output,
            exit: Mutex::new(None),
        });
        let waiter = bg.clone();
        tokio::spawn(async move {
            let code = exit.await.unwrap_or(None);
            *waiter.exit.lock().expect("exit lock") = Some(code);
        });
        self.processes
            .lock()
            .expect("processes lock")
            .insert(pid, bg);
        pid
    }

    /// Every background process, oldest first.
    pub fn list(&self) -> Vec<ProcessInfo> {
        let mut list: Vec<ProcessInfo> = self
            .processes
            .lock()
            .expect("processes lock")
            .values()
            .map(|bg| info(bg))
            .collect();
        list.sort_by_key(|p| p.id);
        list
    }

    /// The output since the last read — its head and tail, with a marker saying what was left
    /// out between them, when more arrived than is kept — and the process's state.
    pub fn read(&self, id: u32) -> Option<(String, ProcessInfo)> {
        let bg = self
            .processes
            .lock()
            .expect("processes lock")
            .get(&id)?
            .clone();
        let text = bg.output.take_unread().text();
        Some((text, info(&bg)))
    }

    /// Kills a background process and its children.
    pub async fn kill(&self, id: u32) -> Option<ProcessInfo> {
        let bg = self
            .processes
            .lock()
            .expect("processes lock")
            .get(&id)?
            .clone();
        terminate_group(bg.pid).await;
        for _ in 0..50 {
            if bg.exit.lock().expect("exit lock").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Some(info(&bg))
    }

    /// Kills every background process still running at once (SIGKILL, its whole process group;
    /// used when the task goes away). A group whose command has exited is left alone: its
    /// number may already belong to someone else's processes.
    pub fn kill_all(&self) {
        for bg in self.processes.lock().expect("processes lock").values() {
            if bg.exit.lock().expect("exit lock").is_none() {
                signal_group(bg.pid, libc::SIGKILL);
            }
        }
    }
}

fn info(bg: &Background) -> ProcessInfo {
    let exit = *bg.exit.lock().expect("exit lock");
    ProcessInfo {
        id: bg.pid,
        command: bg.command.clone(),
        running: exit.is_none(),
        exit_code: exit.flatten(),
    }
}
