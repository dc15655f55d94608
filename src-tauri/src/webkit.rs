//! What the app asks of WebKitGTK before any window exists, through the variables WebKit reads
//! when it starts. A variable the user set is always left alone.
//!
//! **How it paints.** WebKit composites pages with OpenGL; on a machine without a GPU
//! (a virtual machine, a remote desktop, a container, Xvfb) that OpenGL runs in software and costs
//! far more than it saves. Measured on such a machine (BENCHMARKS.md, one run each way): with
//! compositing a streaming reply was drawn at 14–18 frames a second with a 0.8 s stall and each
//! task window took 176 MiB; painting without it drew 64–97 frames a second, no gap over 46 ms,
//! 91 MiB a window. So where no GPU can be used, Codewright asks WebKit not to composite
//! (`WEBKIT_DISABLE_COMPOSITING_MODE=0` from the user keeps compositing on).
//!
//! **No memory poll.** Every 30 s each web process measured its own memory by reading
//! `/proc/self/smaps` on its main thread: 20–60 ms once a window holds a long conversation, the
//! longest frame gaps of a streaming reply (63 ms, against 27 ms without it; BENCHMARKS.md). The
//! poll serves WebKit's memory limits and its reaction to a system short of memory, which free
//! caches that a page of text barely has; the JavaScript heap is collected as before. So the
//! monitor is switched off (`WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR`).
//!
//! **Real-time threads held to 50 ms.** WebKitGTK 2.50 makes its message threads real-time
//! (`SCHED_RR`) wherever it may: directly where the process is allowed to (root, or a `rtprio`
//! limit, as many audio setups grant), else through RealtimeKit. On the direct path nothing bounds
//! them. Under ten streaming windows on two cores such threads kept both cores for 0.95 s at a
//! time (the kernel's real-time throttle), 1–4 times in 30 s: every window, the app and every
//! other program on the machine stood still at once (RELIABILITY.md). WebKit demotes a process's
//! real-time threads when it receives SIGXCPU, which the kernel sends once a real-time thread has
//! run this long without blocking (`RLIMIT_RTTIME`). So the app sets that soft limit to 50 ms
//! before WebKit starts, and the web processes inherit it. Each SIGXCPU makes the kernel raise
//! the soft limit by a second, which would leave threads WebKit makes real-time afterwards (a new
//! window's, a window shown again) bound only by the throttle: every 2 s the app sets it again, in
//! itself and in each WebKit process ([`hold_real_time_runs`]). Where WebKit went through
//! RealtimeKit it set soft and hard limits of 200 ms, at which the kernel kills the process; within
//! 2 s the app puts the 50 ms soft limit under that hard one. A hard limit is never changed, and a
//! lower soft limit the user set is kept. What Codewright itself starts (commands, MCP servers) gets
//! back the limit the app started with (`codewright_tools::reaper`). WebKit has since dropped
//! real-time threads upstream.

use std::path::Path;
use std::sync::OnceLock;

const COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";
const MEMORY_MONITOR: &str = "WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR";

/// Sets WebKit's variables; called first thing, before any other thread or window exists.
pub(crate) fn configure() {
    let var = |name: &str| std::env::var(name).ok();
    for name in variables(var, || usable_render_node(Path::new("/dev/dri"))) {
        std::env::set_var(name, "1");
    }
    limit_real_time_runs();
}

/// How long a real-time thread may run without blocking before SIGXCPU (microseconds).
const REAL_TIME_RUN_US: libc::rlim_t = 50_000;

/// The soft `RLIMIT_RTTIME` the app holds itself and WebKit's processes to.
static REAL_TIME_LIMIT: OnceLock<libc::rlim_t> = OnceLock::new();

/// Lowers this process's soft `RLIMIT_RTTIME` to [`REAL_TIME_RUN_US`] (module docs), once the
/// limits it started with are noted for the processes Codewright starts.
fn limit_real_time_runs() {
    codewright_host::remember_starting_limits();
    let Some(limit) = real_time_limit(0) else {
        return;
    };
    let soft =
        *REAL_TIME_LIMIT.get_or_init(|| real_time_soft_limit(limit.rlim_cur, limit.rlim_max));
    set_real_time_limit(0, limit, soft);
}

/// Sets the soft limit again where the kernel raised it (after a SIGXCPU) or WebKit changed it
/// (RealtimeKit's): in this process and each WebKit process it started. Called every 2 s.
pub(crate) fn hold_real_time_runs() {
    let Some(&soft) = REAL_TIME_LIMIT.get() else {
        return;
    };
    let webkit = webkit_children();
    for pid in std::iter::once(0).chain(webkit) {
        if let Some(limit) = real_time_limit(pid) {
            set_real_time_limit(pid, limit, soft);
        }
    }
}

/// The processes this one started whose name is WebKit's (its web and network processes).
fn webkit_children() -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<libc::pid_t>>()
        })
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|name| name.starts_with("WebKit"))
        })
        .collect()
}

/// The `RLIMIT_RTTIME` of process `pid` (0: this one).
fn real_time_limit(pid: libc::pid_t) -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads nothing (no new limit) and writes only the struct it is given.
    let read = unsafe { libc::prlimit(pid, libc::RLIMIT_RTTIME, std::ptr::null(), &mut limit) };
    (read == 0).then_some(limit)
}

/// Sets the soft limit of process `pid` (0: this one) to `soft`, where it differs and the hard
/// limit allows it; a process that is gone or not ours is left alone.
fn set_real_time_limit(pid: libc::pid_t, limit: libc::rlimit, soft: libc::rlim_t) {
    if limit.rlim_cur == soft || soft > limit.rlim_max {
        return;
    }
    let new = libc::rlimit {
        rlim_cur: soft,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: prlimit reads only the struct it is given and writes nothing (no old limit asked).
    unsafe { libc::prlimit(pid, libc::RLIMIT_RTTIME, &new, std::ptr::null_mut()) };
}

/// The soft limit to set, given the current soft and hard ones (`RLIM_INFINITY` is the largest).
fn real_time_soft_limit(soft: libc::rlim_t, hard: libc::rlim_t) -> libc::rlim_t {
    soft.min(hard).min(REAL_TIME_RUN_US)
}

/// The variables to set to `1`, given the environment's (`var`).
fn variables(
    var: impl Fn(&str) -> Option<String>,
    render_node: impl Fn() -> bool,
) -> Vec<&'static str> {
    let software_forced = var("LIBGL_ALWAYS_SOFTWARE")
        .is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    let mut names = Vec::new();
    if without_compositing(var(COMPOSITING).is_some(), software_forced, render_node()) {
        names.push(COMPOSITING);
    }
    if var(MEMORY_MONITOR).is_none() {
        names.push(MEMORY_MONITOR);
    }
    names
}

/// Whether WebKit should paint without compositing: the user did not choose, and OpenGL would
/// run in software (forced, or no GPU render node this process can open).
fn without_compositing(user_chose: bool, software_forced: bool, render_node: bool) -> bool {
    !user_chose && (software_forced || !render_node)
}

/// Whether `dri` holds a GPU render node (`renderD*`) this process can open for reading and
/// writing, as OpenGL would.
fn usable_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry.file_name().to_string_lossy().starts_with("renderD")
                && std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(entry.path())
                    .is_ok()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_time_runs_are_held_to_50_ms_unless_held_shorter() {
        let unlimited = libc::RLIM_INFINITY;
        assert_eq!(real_time_soft_limit(unlimited, unlimited), 50_000);
        assert_eq!(real_time_soft_limit(200_000, 200_000), 50_000);
        assert_eq!(
            real_time_soft_limit(20_000, unlimited),
            20_000,
            "the user's own"
        );
        assert_eq!(
            real_time_soft_limit(unlimited, 10_000),
            10_000,
            "never above the hard one"
        );
    }

    #[test]
    fn compositing_is_left_on_only_with_a_usable_gpu_and_no_choice_made() {
        assert!(without_compositing(false, false, false), "no GPU");
        assert!(without_compositing(false, true, true), "software forced");
        assert!(!without_compositing(false, false, true), "a GPU");
        assert!(!without_compositing(true, true, false), "the user chose");
    }

    #[test]
    fn the_memory_poll_is_off_unless_the_user_chose() {
        let gpu = || true;
        let none = |_: &str| None;
        assert_eq!(variables(none, gpu), [MEMORY_MONITOR]);
        let chosen = |name: &str| (name == MEMORY_MONITOR).then(|| "0".to_string());
        assert_eq!(variables(chosen, gpu), [] as [&str; 0], "the user chose");
        assert_eq!(variables(none, || false), [COMPOSITING, MEMORY_MONITOR]);
    }

    #[test]
    fn a_render_node_counts_only_if_it_can_be_opened() {
        let dri = tempfile::tempdir().unwrap();
        assert!(!usable_render_node(dri.path()), "empty");
        assert!(
            !usable_render_node(&dri.path().join("missing")),
            "no folder"
        );
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert!(
            !usable_render_node(dri.path()),
            "a card node is not a render node"
        );
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert!(usable_render_node(dri.path()));
    }
}
