//! What Codewright starts dies with it, however Codewright ends — `kill -9` and crashes included.
//!
//! Two mechanisms, because neither is enough alone:
//!
//! - [`die_with_us`]: the process Codewright starts (a command's shell, an MCP server) gets the
//!   parent-death signal SIGKILL (`PR_SET_PDEATHSIG`), so the kernel kills it when Codewright
//!   dies. The kernel sends it when the *thread* that started the child ends, not the process, so
//!   such children are started by [`spawn`], on one thread that lives as long as the process (a
//!   tokio blocking thread, which ends after some idle seconds, would take its children with it).
//!   The signal is not inherited: the child's own children are not covered by it.
//! - The watcher, for the rest of a command's process group (`sleep 97 &`, whatever outlives its
//!   shell): one `/bin/sh` per Codewright process, started with the first command, reads lines
//!   from a pipe whose write end only Codewright holds: `+PGID` when a group starts, `-PGID`
//!   when it is empty. When the pipe reaches end of file — Codewright ended, in whatever way —
//!   it kills every group still listed (`kill -s KILL -- -PGID`). It ignores SIGINT, SIGHUP and
//!   SIGTERM and has its own process group, so the Ctrl-C that ends `codewright-cli exec` does
//!   not end it before it cleans up. Rust opens every file close-on-exec, so no command inherits
//!   the write end (which would keep the pipe open).
//!
//! Limits: a process that leaves its group (`setsid`, a daemon) escapes the watcher; if someone
//! kills the watcher, the groups it listed lose this protection (the next command starts a new
//! one); and a group is forgotten up to 200 ms after it empties, so a crash in that moment could
//! kill a group that just took the same number.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How often a group whose leader exited is checked for being empty.
const EMPTY_POLL: Duration = Duration::from_millis(200);

/// Makes the child `command` starts get SIGKILL when Codewright dies. Start it with [`spawn`].
/// The child also gets back the real-time limit Codewright started with
/// ([`remember_starting_limits`]), whatever Codewright set for itself since.
pub fn die_with_us(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    let real_time = starting_real_time_limit();
    // SAFETY: runs in the child between fork and exec, where only async-signal-safe calls are
    // allowed: three syscalls (prctl, getppid, setrlimit) and errno; nothing allocates or locks.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Codewright died between the fork and the line above: the signal will never come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            // Best effort: a limit that cannot be restored is no reason not to run.
            libc::setrlimit(libc::RLIMIT_RTTIME, &real_time);
            Ok(())
        });
    }
}

/// Notes the limits this process started with, for the processes it starts. Call before the
/// process changes its own: the desktop lowers its real-time limit (`RLIMIT_RTTIME`) for
/// WebKit's threads, which a command or an MCP server must not inherit.
pub fn remember_starting_limits() {
    starting_real_time_limit();
}

fn starting_real_time_limit() -> libc::rlimit {
    static STARTING: OnceLock<libc::rlimit> = OnceLock::new();
    *STARTING.get_or_init(|| {
        let mut limit = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: getrlimit only writes the struct it is given.
        unsafe { libc::getrlimit(libc::RLIMIT_RTTIME, &mut limit) };
        limit
    })
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `start` (which starts processes) on the one thread that lives as long as the process,
/// and returns what it returned. Every child given [`die_with_us`] must be started here.
pub fn spawn<T: Send + 'static>(
    start: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("codewright-spawner".into())
            .spawn(move || {
                for job in queue {
                    // A panic must not end the thread: that would kill everything it started.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .ok()
            .map(|_| jobs)
    });
    let gone = || std::io::Error::other("the thread that starts processes is not running");
    let (done, result) = mpsc::sync_channel(1);
    spawner
        .as_ref()
        .ok_or_else(gone)?
        .send(Box::new(move || {
            let _ = done.send(start());
        }))
        .map_err(|_| gone())?;
    result
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("starting the process panicked")))
}

/// The watcher's script: keeps the listed groups (a list with repeats: a number may be reused
/// while an older group of that number is still being forgotten) and kills them at end of input.
const SCRIPT: &str = r#"trap '' INT HUP TERM
groups=' '
while read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*) id=${line#-}
        case $groups in *" $id "*) groups="${groups%% $id *} ${groups#* $id }" ;; esac ;;
  esac
done
for id in $groups; do kill -s KILL -- "-$id" 2>/dev/null; done
"#;

/// The watcher, once started.
static WATCHER: Mutex<Option<Child>> = Mutex::new(None);

/// Lists a process group with the watcher: it is killed if Codewright dies before [`forget`].
pub fn watch(pgid: u32) {
    tell(&format!("+{pgid}\n"));
}

/// Takes a group that is gone off the watcher's list.
pub fn forget(pgid: u32) {
    tell(&format!("-{pgid}\n"));
}

/// Waits (blocking) until no process of the group is left, then [`forget`]s it. The group may
/// outlive its leader while something it started runs on.
pub fn forget_when_empty(pgid: u32) {
    while group_alive(pgid) {
        std::thread::sleep(EMPTY_POLL);
    }
    forget(pgid);
}

/// Sends a line to the watcher, starting it (again, if it died) when needed.
fn tell(line: &str) {
    let mut watcher = WATCHER.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..2 {
        if watcher.is_none() {
            *watcher = start_watcher();
        }
        let Some(child) = watcher.as_mut() else {
            return;
        };
        let sent = child
            .stdin
            .as_mut()
            .is_some_and(|stdin| stdin.write_all(line.as_bytes()).is_ok());
        if sent {
            return;
        }
        // It is gone (the pipe is broken): collect it, and start another.
        let _ = child.kill();
        let _ = child.wait();
        *watcher = None;
    }
}

fn start_watcher() -> Option<Child> {
    Command::new("/bin/sh")
        .arg("-c")
        .arg(SCRIPT)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()
}

/// Whether any process of the group is still alive.
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}
