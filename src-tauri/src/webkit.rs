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
//! before WebKit starts, and the web processes inherit it; the hard limit (a thread past it is
//! killed) is left as it was, and a lower limit the user set is kept. On the RealtimeKit path
//! WebKit sets its own limits, as before. WebKit has since dropped real-time threads upstream.
//! Commands the agent runs inherit the soft limit too; it only touches a program that makes
//! itself real-time, and such a program can raise it again.

use std::path::Path;

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

/// Lowers this process's soft `RLIMIT_RTTIME` to [`REAL_TIME_RUN_US`] (module docs).
fn limit_real_time_runs() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_RTTIME, &mut limit) != 0 {
            return;
        }
        let soft = real_time_soft_limit(limit.rlim_cur, limit.rlim_max);
        if soft != limit.rlim_cur {
            limit.rlim_cur = soft;
            libc::setrlimit(libc::RLIMIT_RTTIME, &limit);
        }
    }
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
