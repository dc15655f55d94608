//! `bash` and background processes: output capping, timeouts, cancellation and process-group
//! kills (nothing left behind), permission rules on parsed commands, and the Landlock sandbox.

mod common;

use codewright_protocol::{
    Action, Decision, PermissionMode, PermissionRule, RuleAction, ToolDetail,
};
use codewright_tools::{sandbox_support, CallContext, SandboxSupport};
use common::{alive, Harness};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn runs_in_the_project_and_reports_the_exit_code() {
    let h = Harness::new(PermissionMode::Yolo);
    let out = h
        .call("bash", json!({"command": "pwd; echo err >&2; exit 3"}))
        .await;
    assert!(out.is_error);
    let t = out.text_content();
    assert!(
        t.starts_with(&format!("{}\nerr\n", h.root().display())),
        "{t}"
    );
    assert!(t.ends_with("[exit code 3]"));
    let Some(ToolDetail::Command {
        exit_code,
        timed_out,
        ..
    }) = out.detail
    else {
        panic!()
    };
    assert_eq!((exit_code, timed_out), (Some(3), false));

    let out = h.call("bash", json!({"command": "true"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text_content(), "(no output)\n[exit code 0]");
}

#[tokio::test]
async fn ten_megabytes_of_output_keep_head_and_tail() {
    let h = Harness::new(PermissionMode::Yolo);
    let out = h
        .call("bash", json!({"command": "echo FIRST; head -c 10485760 /dev/zero | tr '\\0' 'x'; echo; echo LAST"}))
        .await;
    assert!(!out.is_error);
    let t = out.text_content();
    assert!(t.starts_with("FIRST\n"));
    assert!(t.contains("LAST\n[exit code 0]"));
    assert!(
        t.contains("MB / 0 lines left out …]"),
        "omission marker: {t}"
    );
    assert!(t.len() < 30 * 1024, "capped: {} bytes", t.len());
    let Some(ToolDetail::Command { omitted_bytes, .. }) = out.detail else {
        panic!()
    };
    assert!(omitted_bytes > 10_000_000);
}

/// 200 MB as fast as a pipe takes it: the result keeps the head and the true end with a marker
/// between, live progress is a bounded number of bounded events, and a background process's
/// output is read bounded too.
#[tokio::test]
async fn fast_output_is_bounded_end_to_end() {
    let h = Harness::new(PermissionMode::Yolo);
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::<usize>::new()));
    let sink = events.clone();
    let mut cx = CallContext::new(h.session.clone(), "bash");
    cx.progress = Some(std::sync::Arc::new(move |text: &str| {
        sink.lock().unwrap().push(text.len())
    }));
    let command = "yes abcdefghij | head -c 200000000; echo END_MARKER_XYZ";
    let started = std::time::Instant::now();
    let out = h
        .registry
        .call("bash", &json!({ "command": command }).to_string(), &cx)
        .await;
    let took = started.elapsed();
    let t = out.text_content();
    assert!(!out.is_error, "{t}");
    assert!(t.starts_with("abcdefghij\nabcdefghij\n"), "{t}");
    assert!(
        t.contains("END_MARKER_XYZ\n[exit code 0]"),
        "the true end: {t}"
    );
    assert!(t.contains(" lines left out …]\n"), "marker: {t}");
    assert!(t.len() < 26 * 1024, "bounded: {} bytes", t.len());
    let Some(ToolDetail::Command {
        output,
        omitted_bytes,
        ..
    }) = out.detail
    else {
        panic!()
    };
    assert!(output.len() < 26 * 1024 && output.contains("END_MARKER_XYZ"));
    assert!(omitted_bytes > 199_900_000, "{omitted_bytes}");
    let events = events.lock().unwrap().clone();
    assert!(!events.is_empty());
    // At most one every 100 ms, however slow the machine (plus the last one).
    let most = took.as_millis() as usize / 100 + 2;
    assert!(
        events.len() <= most,
        "{} progress events in {took:?}",
        events.len()
    );
    assert!(
        events.iter().all(|n| *n <= 25 * 1024),
        "an event over the bound: {events:?}"
    );

    let out = h
        .call(
            "bash",
            json!({"command": "yes abcdefghij | head -c 20000000; echo BG_END; sleep 30", "background": true}),
        )
        .await;
    let Some(ToolDetail::Processes { processes }) = out.detail else {
        panic!()
    };
    let id = processes[0].id;
    let (mut marked, mut ended) = (false, false);
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = h
            .call("process_output", json!({ "id": id }))
            .await
            .text_content();
        assert!(t.len() < 26 * 1024, "bounded: {} bytes", t.len());
        marked |= t.contains(" lines left out …]\n");
        if t.contains("BG_END\n[process") {
            ended = true;
            break;
        }
    }
    assert!(marked && ended, "marker {marked}, end {ended}");
    h.call("process_kill", json!({ "id": id })).await;
}

/// A grandchild that ignores SIGTERM: a timeout must still leave nothing running.
#[tokio::test]
async fn timeouts_kill_the_whole_process_group() {
    let h = Harness::new(PermissionMode::Yolo);
    let script =
        "sh -c 'trap \"\" TERM; echo $$ > grandchild.pid; while true; do sleep 0.1; done' & \
                  echo $! > child.pid; trap '' TERM; wait";
    let started = Instant::now();
    let out = h
        .call("bash", json!({"command": script, "timeout": 1}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(
        out.text_content().contains("timed out after 1 s"),
        "{}",
        out.text_content()
    );
    let pid: u32 = h.read("grandchild.pid").trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!alive(pid), "grandchild {pid} survived");
}

#[tokio::test]
async fn idle_timeout_and_stop() {
    let h = Harness::new(PermissionMode::Yolo);
    let out = h
        .call(
            "bash",
            json!({"command": "echo start; sleep 30", "idle_timeout": 1}),
        )
        .await;
    assert!(
        out.text_content().contains("printed nothing for 1 s"),
        "{}",
        out.text_content()
    );

    let cx = CallContext::new(h.session.clone(), "bash");
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = h
        .registry
        .call(
            "bash",
            &json!({"command": "echo $$ > shell.pid; sleep 30"}).to_string(),
            &cx,
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.text_content().contains("stopped by the user"));
    let pid: u32 = h.read("shell.pid").trim().parse().unwrap();
    assert!(!alive(pid));
}

#[tokio::test]
async fn background_processes_are_listed_read_and_killed() {
    let h = Harness::new(PermissionMode::Yolo);
    let out = h
        .call("bash", json!({"command": "for i in 1 2 3; do echo tick $i; sleep 0.1; done; sleep 30", "background": true}))
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let Some(ToolDetail::Processes { processes }) = out.detail else {
        panic!()
    };
    let id = processes[0].id;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let out = h.call("process_output", json!({"id": id})).await;
    let t = out.text_content();
    assert!(
        t.contains("tick 1\ntick 2\ntick 3\n") && t.contains("is running"),
        "{t}"
    );
    let out = h.call("process_output", json!({"id": id})).await;
    assert!(out.text_content().starts_with("(no new output)"));
    let out = h.call("process_list", json!({})).await;
    assert!(out.text_content().contains("running"));
    let out = h.call("process_kill", json!({"id": id})).await;
    assert!(!out.is_error);
    assert!(!alive(id));
    let out = h.call("process_list", json!({})).await;
    assert!(
        out.text_content().contains("killed"),
        "{}",
        out.text_content()
    );
    let out = h.call("process_output", json!({"id": 999_999})).await;
    assert!(out.is_error);

    // Dropping the session kills what is still running.
    let out = h
        .call("bash", json!({"command": "sleep 30", "background": true}))
        .await;
    let Some(ToolDetail::Processes { processes }) = out.detail else {
        panic!()
    };
    let pid = processes[0].id;
    h.session.shutdown();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!alive(pid));
}

#[tokio::test]
async fn rules_are_checked_on_the_parsed_command() {
    let h = Harness::new(PermissionMode::Normal);
    for (pattern, action) in [
        ("rm -rf", RuleAction::Deny),
        ("git status", RuleAction::Allow),
        ("echo", RuleAction::Allow),
    ] {
        h.store
            .lock()
            .unwrap()
            .save_rule(
                h.session.project,
                &PermissionRule {
                    tool: "bash".into(),
                    pattern: pattern.into(),
                    action,
                },
            )
            .unwrap();
    }
    // Rules are loaded when the session opens.
    let h = reopen(h);
    h.write("x/keep.txt", "keep");
    for denied in [
        "FOO=1 rm -rf x",
        "git status && rm -rf x",
        "echo $(rm -rf x)",
        "env -i rm -rf x",
    ] {
        let out = h.call("bash", json!({"command": denied})).await;
        assert!(
            out.is_error
                && out
                    .text_content()
                    .contains("denied by the rule `deny bash rm -rf`"),
            "{denied}: {}",
            out.text_content()
        );
    }
    assert!(h.path("x/keep.txt").exists());
    assert!(h.requests().is_empty(), "denied without asking");

    let out = h.call("bash", json!({"command": "echo hi"})).await;
    assert!(!out.is_error && h.requests().is_empty());

    // `$(rm x)` needs approval even inside an allowed echo; the request shows the whole command.
    let out = h
        .call("bash", json!({"command": "echo $(rm x/keep.txt)"}))
        .await;
    assert!(out.is_error);
    assert!(h.path("x/keep.txt").exists());
    let request = h.requests().pop().unwrap();
    assert!(
        matches!(&request.action, Action::Command { command, .. } if command == "echo $(rm x/keep.txt)")
    );
    assert_eq!(
        request
            .always
            .iter()
            .map(|r| r.pattern.as_str())
            .collect::<Vec<_>>(),
        ["rm"]
    );

    // Plan mode: no commands.
    h.session.set_mode(PermissionMode::Plan);
    let out = h.call("bash", json!({"command": "echo hi"})).await;
    assert!(out.text_content().contains("plan mode"));
}

fn reopen(h: Harness) -> Harness {
    let session = codewright_tools::Session::new(
        codewright_tools::SessionConfig {
            task: h.session.task,
            project: h.session.project,
            root: h.root(),
            home: h.home.path().to_path_buf(),
            mode: PermissionMode::Normal,
            sandbox: false,
            allow_private_network: false,
            rules: vec![],
        },
        h.store.clone(),
        h.approver.clone(),
    )
    .unwrap();
    Harness { session, ..h }
}

#[tokio::test]
async fn the_sandbox_confines_writes_or_says_why_it_cannot() {
    let h = Harness::with(PermissionMode::Yolo, false);
    let outside = tempfile::tempdir_in(std::env::var("HOME").unwrap()).unwrap();
    let target = outside.path().join("escaped.txt");
    let h = Harness {
        session: sandboxed(&h),
        ..h
    };
    let command = format!("echo inside > in.txt; echo outside > {}", target.display());
    eprintln!("sandbox support here: {:?}", sandbox_support());
    match sandbox_support() {
        SandboxSupport::Full | SandboxSupport::Partial => {
            let out = h.call("bash", json!({"command": command})).await;
            assert!(h.path("in.txt").exists(), "{}", out.text_content());
            assert!(!target.exists(), "the sandbox let a write out");
            assert!(
                out.text_content().contains("ermission denied"),
                "{}",
                out.text_content()
            );
            let Some(ToolDetail::Command { sandboxed, .. }) = out.detail else {
                panic!()
            };
            assert!(sandboxed);
        }
        SandboxSupport::Unavailable(why) => {
            // Yolo would allow it, but without the sandbox it asks — visibly, with the reason.
            h.decide([Decision::Reject { feedback: None }]);
            let out = h.call("bash", json!({"command": command})).await;
            assert!(out.is_error);
            let request = h
                .requests()
                .pop()
                .expect("asked instead of running unconfined");
            assert!(
                request.reason.contains("sandbox is unavailable"),
                "{} / {why}",
                request.reason
            );
            assert!(!target.exists());
        }
    }
}

fn sandboxed(h: &Harness) -> std::sync::Arc<codewright_tools::Session> {
    codewright_tools::Session::new(
        codewright_tools::SessionConfig {
            task: h.session.task,
            project: h.session.project,
            root: h.root(),
            home: h.home.path().to_path_buf(),
            mode: PermissionMode::Yolo,
            sandbox: true,
            allow_private_network: false,
            rules: vec![],
        },
        h.store.clone(),
        h.approver.clone(),
    )
    .unwrap()
}
