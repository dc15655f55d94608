//! Shell processes: starting a command in its own process group (so the whole tree can be killed
//! — no orphans), collecting its output with the middle cut out when large, and the table of
//! background processes a task started.

use codewright_protocol::ProcessInfo;
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Output kept from the start and from the end of a command's output.
pub(crate) const HEAD_BYTES: usize = 12 * 1024;
pub(crate) const TAIL_BYTES: usize = 12 * 1024;

/// How long a process group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(1000);

/// Output with the middle cut out past a size.
#[derive(Debug, Default)]
pub(crate) struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted: u64,
    head_limit: usize,
    tail_limit: usize,
}

impl CappedOutput {
    pub fn new(head_limit: usize, tail_limit: usize) -> CappedOutput {
        CappedOutput {
            head_limit,
            tail_limit,
            ..Default::default()
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_limit.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_limit {
            self.omitted += (self.tail.len() + bytes.len() - self.tail_limit) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
            return;
        }
        self.tail.extend(bytes);
        while self.tail.len() > self.tail_limit {
            let excess = self.tail.len() - self.tail_limit;
            self.tail.drain(..excess);
            self.omitted += excess as u64;
        }
    }

    /// Bytes cut from the middle.
    pub fn omitted(&self) -> u64 {
        self.omitted
    }

    /// The kept text (lossy UTF-8), with a marker where the middle was cut.
    pub fn text(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            out.push_str(&format!(
                "\n[… {} of output omitted …]\n",
                crate::builtin::human_bytes(self.omitted)
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// A started shell command.
pub(crate) struct Started {
    /// Process id, which is also its process group id.
    pub pid: u32,
    /// Output chunks (stdout and stderr interleaved, in order); closed at end of output.
    pub output: mpsc::UnboundedReceiver<Vec<u8>>,
    /// The exit code (`None` when killed by a signal).
    pub exit: oneshot::Receiver<Option<i32>>,
}

/// Starts `command` under bash (or sh) in `cwd` with `env`, in a new process group, optionally
/// confined by a Landlock ruleset.
pub(crate) fn spawn_shell(
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
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {shell}: {e}"))?;
    // The Command (and its copies of the pipe's write end) must be gone so EOF can arrive.
    drop(cmd);
    let pid = child.id();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut reader = reader;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out_tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (exit_tx, exit_rx) = oneshot::channel();
    std::thread::spawn(move || {
        let code = child.wait().ok().and_then(|s| s.code());
        let _ = exit_tx.send(code);
    });
    Ok(Started {
        pid,
        output: out_rx,
        exit: exit_rx,
    })
}

/// Sends `signal` to every process of the group.
pub(crate) fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: plain syscall; a group that is already gone gives ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid as libc::pid_t, signal);
    }
}

/// Whether any process of the group is still alive.
pub(crate) fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

/// SIGTERM to the group, then SIGKILL to whatever is left after a grace period.
pub(crate) async fn terminate_group(pgid: u32) {
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
    output: Mutex<BackgroundOutput>,
    exit: Mutex<Option<Option<i32>>>,
}

#[derive(Default)]
struct BackgroundOutput {
    /// The newest output (bounded).
    buffer: VecDeque<u8>,
    /// Bytes ever produced, and how far the model has read.
    total: u64,
    read: u64,
}

/// Output a background process keeps for reading.
const BACKGROUND_KEEP: usize = 256 * 1024;

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
    /// Registers a started process and collects its output in the background.
    pub(crate) fn adopt(&self, command: &str, started: Started) -> u32 {
        let Started {
            pid,
            mut output,
            exit,
        } = started;
        let bg = Arc::new(Background {
            command: command.to_string(),
            pid,
            output: Mutex::new(BackgroundOutput::default()),
            exit: Mutex::new(None),
        });
        let reader = bg.clone();
        tokio::spawn(async move {
            while let Some(chunk) = output.recv().await {
                let mut out = reader.output.lock().expect("output lock");
                out.total += chunk.len() as u64;
                out.buffer.extend(chunk);
                let excess = out.buffer.len().saturating_sub(BACKGROUND_KEEP);
                out.buffer.drain(..excess);
            }
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

    /// New output since the last read (or the newest part of it when more was produced than is
    /// kept), and the process's state.
    pub fn read(&self, id: u32) -> Option<(String, u64, ProcessInfo)> {
        let bg = self
            .processes
            .lock()
            .expect("processes lock")
            .get(&id)?
            .clone();
        let mut out = bg.output.lock().expect("output lock");
        let unread = (out.total - out.read) as usize;
        let available = unread.min(out.buffer.len());
        let skipped = (unread - available) as u64;
        let start = out.buffer.len() - available;
        let bytes: Vec<u8> = out.buffer.range(start..).copied().collect();
        out.read = out.total;
        drop(out);
        Some((
            String::from_utf8_lossy(&bytes).into_owned(),
            skipped,
            info(&bg),
        ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_keeps_head_and_tail() {
        let mut out = CappedOutput::new(10, 10);
        out.push(b"0123456789abc");
        for _ in 0..1000 {
            out.push(b"xyz");
        }
        out.push(b"THE END.");
        assert_eq!(out.omitted(), 13 + 3000 + 8 - 20);
        let text = out.text();
        assert!(text.starts_with("0123456789"));
        assert!(text.ends_with("zTHE END."), "{text}");
        assert!(text.contains("omitted"));
    }
}
