//! The file tools against a real project folder: reads, listings, searches, writes and edits,
//! with approvals answered by a script.

mod common;

use codewright_protocol::{
    Action, Decision, DecisionKind, PermissionMode, ToolContent, ToolDetail,
};
use common::Harness;
use serde_json::json;

#[tokio::test]
async fn read_file_numbers_lines_reads_ranges_and_explains_limits() {
    let h = Harness::new(PermissionMode::Normal);
    let text: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    h.write("big.txt", &text);
    let out = h.call("read_file", json!({"path": "big.txt"})).await;
    assert!(!out.is_error);
    let t = out.text_content();
    assert!(t.starts_with("     1\tline 1\n"));
    assert!(t.contains("  2000\tline 2000\n") && !t.contains("line 2001\n"));
    assert!(t.contains("has 3000 lines; showing 1–2000. Read more with offset 2001"));
    let out = h
        .call(
            "read_file",
            json!({"path": "big.txt", "offset": 2999, "limit": 5}),
        )
        .await;
    assert_eq!(out.text_content(), "  2999\tline 2999\n  3000\tline 3000\n");
    assert_eq!(
        out.detail,
        Some(ToolDetail::File {
            path: "big.txt".into(),
            first_line: 2999,
            last_line: 3000,
            total_lines: 3000
        })
    );

    // Over 10 MB: a clear message, and a range still works.
    h.write("huge.log", "x".repeat(11 * 1024 * 1024));
    let out = h.call("read_file", json!({"path": "huge.log"})).await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("is 11.0 MB; read a range"),
        "{}",
        out.text_content()
    );
    let out = h
        .call("read_file", json!({"path": "huge.log", "limit": 1}))
        .await;
    assert!(!out.is_error);

    h.write("blob.bin", [0u8, 1, 2, 3, 0, 255]);
    let out = h.call("read_file", json!({"path": "blob.bin"})).await;
    assert!(out.is_error && out.text_content().contains("binary file"));

    // Images come back as images.
    h.write("pixel.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let out = h.call("read_file", json!({"path": "pixel.png"})).await;
    assert!(matches!(&out.content[1], ToolContent::Image { mime, .. } if mime == "image/png"));

    // Not UTF-8: shown lossily, with a note.
    h.write("latin1.txt", b"caf\xe9\nna\xefve\n");
    let out = h.call("read_file", json!({"path": "latin1.txt"})).await;
    assert!(
        out.text_content().contains("caf\u{fffd}")
            && out.text_content().contains("not valid UTF-8")
    );

    let out = h.call("read_file", json!({"path": "missing.rs"})).await;
    assert!(out.is_error && out.text_content().contains("does not exist"));
}

#[tokio::test]
async fn bad_calls_become_errors_that_quote_the_problem() {
    let h = Harness::new(PermissionMode::Normal);
    let out = h.call_raw("read_file", "{\"path\": ").await;
    assert!(
        out.is_error && out.text_content().contains("not valid JSON"),
        "{}",
        out.text_content()
    );
    let out = h.call("read_file", json!({"file": "x"})).await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("path"),
        "{}",
        out.text_content()
    );
    let out = h.call("read_file", json!({"path": 42})).await;
    assert!(
        out.is_error && out.text_content().contains("/path"),
        "{}",
        out.text_content()
    );
    let out = h.call("frobnicate", json!({})).await;
    assert!(out.is_error && out.text_content().contains("no tool named \"frobnicate\""));
    assert!(out.text_content().contains("read_file"));
    for spec in h.registry.specs() {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(
            !spec.input_schema.to_string().contains("$ref"),
            "{}",
            spec.name
        );
    }
}

#[tokio::test]
async fn paths_that_leave_the_project_need_their_own_approval() {
    let h = Harness::new(PermissionMode::Normal);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink("/etc", h.path("etc-link")).unwrap();
    let rel = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    // Parent of the project temp dir is the same temp root, so `..` reaches the other dir.
    let escapes = [
        rel.clone(),
        outside
            .path()
            .join("secret.txt")
            .to_string_lossy()
            .into_owned(),
        "etc-link/hostname".to_string(),
    ];
    for path in &escapes {
        // Rejected (the scripted approver's default): nothing read.
        let out = h.call("read_file", json!({"path": path})).await;
        assert!(out.is_error, "{path}");
        assert!(!out.text_content().contains("s3cret"));
    }
    let requests = h.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert!(
            matches!(&r.action, Action::ExternalPath { write: false, .. }),
            "{r:?}"
        );
        assert!(r.reason.contains("outside the project"));
    }
    // Approved: read.
    h.decide([Decision::Approve]);
    let out = h.call("read_file", json!({"path": rel})).await;
    assert!(out.text_content().contains("s3cret"));

    // Writes outside ask with the edit itself; rejected means not written.
    let target = outside.path().join("new.txt");
    let out = h
        .call(
            "write_file",
            json!({"path": target.to_string_lossy(), "content": "x"}),
        )
        .await;
    assert!(out.is_error);
    assert!(!target.exists());
    let last = h.requests().pop().unwrap();
    assert!(matches!(last.action, Action::Edit { created: true, .. }));
    assert!(last.reason.contains("outside the project"));
}

#[tokio::test]
async fn non_interactive_runs_refuse_external_paths() {
    let h = Harness::new(PermissionMode::Normal);
    let session = codewright_tools::Session::new(
        codewright_tools::SessionConfig {
            task: h.session.task,
            project: h.session.project,
            root: h.root(),
            home: h.home.path().to_path_buf(),
            mode: PermissionMode::AcceptEdits,
            sandbox: false,
            allow_private_network: false,
            rules: vec![],
        },
        h.store.clone(),
        std::sync::Arc::new(codewright_tools::NonInteractive),
    )
    .unwrap();
    let cx = codewright_tools::CallContext::new(session, "read_file");
    let out = h
        .registry
        .call("read_file", r#"{"path": "/etc/hostname"}"#, &cx)
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("non-interactive"),
        "{}",
        out.text_content()
    );
}

#[tokio::test]
async fn list_glob_and_grep_respect_gitignore() {
    let h = Harness::new(PermissionMode::Normal);
    h.write(".gitignore", "target/\n*.log\n");
    h.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    h.write(
        "src/lib.rs",
        "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n// TODO: more\n",
    );
    h.write("src/deep/mod.rs", "// hello from deep\n");
    h.write("target/debug/out.rs", "hello ignored\n");
    h.write("run.log", "hello log\n");
    h.write("image.bin", b"hello\0binary");

    let out = h.call("list_dir", json!({})).await;
    let t = out.text_content();
    assert!(t.starts_with("src/\ntarget/\n"), "{t}");
    assert!(t.contains("run.log"));
    // An empty path is the top, as a model means it (a small model writes `"path": ""`).
    let out = h.call("list_dir", json!({"path": ""})).await;
    assert_eq!(out.text_content(), t);
    let out = h
        .call("glob", json!({"pattern": "**/*.rs", "path": " "}))
        .await;
    assert!(!out.is_error, "{}", out.text_content());

    let out = h.call("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        out.text_content(),
        "src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs"
    );

    let out = h.call("grep", json!({"pattern": "hello"})).await;
    let t = out.text_content();
    assert!(t.starts_with("3 matching lines in 3 files\n"), "{t}");
    assert!(!t.contains("ignored") && !t.contains("log") && !t.contains("binary"));

    let out = h
        .call(
            "grep",
            json!({"pattern": "hello", "case_insensitive": true, "glob": "*.rs", "path": "src"}),
        )
        .await;
    assert!(
        out.text_content()
            .starts_with("4 matching lines in 3 files"),
        "{}",
        out.text_content()
    );

    let out = h
        .call(
            "grep",
            json!({"pattern": "fn hello() -> &'static", "literal": true, "context": 1}),
        )
        .await;
    let t = out.text_content();
    assert!(
        t.contains("src/lib.rs\n  1: pub fn hello() -> &'static str {\n  2-     \"Hello\"\n"),
        "{t}"
    );

    let out = h.call("grep", json!({"pattern": "[unclosed"})).await;
    assert!(out.is_error && out.text_content().contains("literal: true"));

    let out = h
        .call("grep", json!({"pattern": "e", "max_results": 2}))
        .await;
    let Some(ToolDetail::Matches { truncated, .. }) = out.detail else {
        panic!()
    };
    assert!(truncated);
}

#[tokio::test]
async fn write_file_creates_with_approval_and_overwrites_only_read_files() {
    let h = Harness::new(PermissionMode::Normal);
    h.decide([Decision::Approve]);
    let out = h
        .call(
            "write_file",
            json!({"path": "new/dir/a.txt", "content": "one\ntwo\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(h.read("new/dir/a.txt"), "one\ntwo\n");
    let request = &h.requests()[0];
    assert_eq!(request.summary, "Create new/dir/a.txt (2 lines)");
    assert!(request.decisions.contains(&DecisionKind::ApproveEdited));
    assert_eq!(request.always[0].pattern, "new/dir/a.txt");

    h.write("existing.txt", "old\n");
    let out = h
        .call(
            "write_file",
            json!({"path": "existing.txt", "content": "new\n"}),
        )
        .await;
    assert!(out.is_error && out.text_content().contains("read it first"));
    assert_eq!(h.read("existing.txt"), "old\n");

    // Rejected with feedback: the feedback reaches the model verbatim.
    h.call("read_file", json!({"path": "existing.txt"})).await;
    h.decide([Decision::Reject {
        feedback: Some("Use tabs, not spaces.".into()),
    }]);
    let out = h
        .call(
            "write_file",
            json!({"path": "existing.txt", "content": "new\n"}),
        )
        .await;
    assert!(out.is_error);
    assert!(out
        .text_content()
        .ends_with("The user said:\nUse tabs, not spaces."));
    assert_eq!(h.read("existing.txt"), "old\n");

    // Accept-edits mode writes without asking.
    h.session.set_mode(PermissionMode::AcceptEdits);
    let before = h.requests().len();
    let out = h
        .call(
            "write_file",
            json!({"path": "existing.txt", "content": "new\n"}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(h.requests().len(), before);
    assert_eq!(h.read("existing.txt"), "new\n");

    // Plan mode refuses with a message the model understands.
    h.session.set_mode(PermissionMode::Plan);
    let out = h
        .call("write_file", json!({"path": "plan.txt", "content": "x"}))
        .await;
    assert!(out.is_error && out.text_content().contains("plan mode"));
    assert!(!h.path("plan.txt").exists());
}

#[tokio::test]
async fn edit_file_matches_carefully_and_refuses_stale_files() {
    let h = Harness::new(PermissionMode::AcceptEdits);
    h.write("a.rs", "fn a() {}\nfn b() {}\nfn a() {}\n");
    let edit = |old: &str, new: &str| json!({"path": "a.rs", "old_string": old, "new_string": new});

    let out = h.call("edit_file", edit("fn b() {}", "fn bee() {}")).await;
    assert!(
        out.text_content().contains("you have not read a.rs"),
        "{}",
        out.text_content()
    );
    h.call("read_file", json!({"path": "a.rs"})).await;

    let out = h.call("edit_file", edit("fn b() {}", "fn bee() {}")).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(h.read("a.rs"), "fn a() {}\nfn bee() {}\nfn a() {}\n");

    let out = h.call("edit_file", edit("fn a() {}", "fn z() {}")).await;
    assert!(out.is_error);
    assert!(
        out.text_content()
            .contains("matches 2 places in a.rs (lines 1, 3)"),
        "{}",
        out.text_content()
    );

    let out = h.call("edit_file", edit("fn bea() {}", "x")).await;
    assert!(out.is_error);
    let t = out.text_content();
    assert!(
        t.contains("Read the file again") && t.contains("closest text is at line 2:\nfn bee() {}"),
        "{t}"
    );

    let out = h.call("edit_file", json!({"path": "a.rs", "old_string": "fn a() {}", "new_string": "fn z() {}", "replace_all": true})).await;
    assert!(!out.is_error);
    assert_eq!(h.read("a.rs"), "fn z() {}\nfn bee() {}\nfn z() {}\n");

    // A batch is all or nothing.
    let out = h
        .call(
            "edit_file",
            json!({"path": "a.rs", "edits": [
                {"old_string": "fn bee() {}", "new_string": "fn b() {}"},
                {"old_string": "not there", "new_string": "x"}
            ]}),
        )
        .await;
    assert!(out.is_error && out.text_content().starts_with("edit 2 of 2:"));
    assert_eq!(h.read("a.rs"), "fn z() {}\nfn bee() {}\nfn z() {}\n");

    // Changed on disk since the last read: refused.
    h.write(
        "a.rs",
        "fn z() {}\nfn bee() {}\nfn z() {} // edited by the user\n",
    );
    let out = h.call("edit_file", edit("fn bee() {}", "fn b() {}")).await;
    assert!(
        out.is_error
            && out
                .text_content()
                .contains("changed on disk since you last read it")
    );

    // CRLF files keep CRLF.
    h.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    h.call("read_file", json!({"path": "win.txt"})).await;
    let out = h
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(h.read("win.txt"), "one\r\n2\r\n3\r\n");

    // Not UTF-8: exact matches, other bytes untouched.
    h.write("latin1.txt", b"caf\xe9 = 1\nname = old\n");
    h.call("read_file", json!({"path": "latin1.txt"})).await;
    let out = h
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "name = old", "new_string": "name = new"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(
        std::fs::read(h.path("latin1.txt")).unwrap(),
        b"caf\xe9 = 1\nname = new\n"
    );

    // Indentation-flexible fallback.
    h.write("py.py", "def f():\n    if x:\n        go()\n");
    h.call("read_file", json!({"path": "py.py"})).await;
    let out = h.call("edit_file", json!({"path": "py.py", "old_string": "if x:\n    go()", "new_string": "if y:\n    stop()"})).await;
    assert!(
        out.text_content().contains("ignoring indentation"),
        "{}",
        out.text_content()
    );
    assert_eq!(h.read("py.py"), "def f():\n    if y:\n        stop()\n");
}

#[tokio::test]
async fn per_hunk_review_applies_exactly_the_approved_hunks() {
    let h = Harness::new(PermissionMode::Normal);
    let old: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    h.write("f.txt", &old);
    h.call("read_file", json!({"path": "f.txt"})).await;
    h.decide([Decision::ApproveHunks { hunks: vec![1] }]);
    let out = h
        .call(
            "edit_file",
            json!({"path": "f.txt", "edits": [
                {"old_string": "line 2\n", "new_string": "line two\n"},
                {"old_string": "line 20\n", "new_string": "line twenty\n"},
                {"old_string": "line 38\n", "new_string": "line thirty-eight\n"}
            ]}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let request = &h.requests()[0];
    let Action::Edit {
        hunks,
        created: false,
        content,
        ..
    } = &request.action
    else {
        panic!()
    };
    assert_eq!(hunks.len(), 3);
    assert!(request.decisions.contains(&DecisionKind::ApproveHunks));
    // The whole proposal comes with the request, so the user can change it before approving.
    let proposed = old
        .replace("line 2\n", "line two\n")
        .replace("line 20\n", "line twenty\n")
        .replace("line 38\n", "line thirty-eight\n");
    assert_eq!(content.as_deref(), Some(proposed.as_str()));
    assert!(request.decisions.contains(&DecisionKind::ApproveEdited));
    assert_eq!(h.read("f.txt"), old.replace("line 20\n", "line twenty\n"));
    let t = out.text_content();
    assert!(t.contains("applied hunk #2 (old lines 17–23) and rejected hunk #1 (old lines 1–5), #3 (old lines 35–40) of 3"), "{t}");
    let Some(ToolDetail::Diff {
        applied, rejected, ..
    }) = out.detail
    else {
        panic!()
    };
    assert_eq!((applied, rejected), (vec![1], vec![0, 2]));

    // The user's edited version is what gets written.
    h.decide([Decision::ApproveEdited {
        content: "mine\n".into(),
    }]);
    let out = h
        .call(
            "edit_file",
            json!({"path": "f.txt", "old_string": "line 1\n", "new_string": "line one\n"}),
        )
        .await;
    assert!(out
        .text_content()
        .contains("The user edited the proposed content"));
    assert_eq!(h.read("f.txt"), "mine\n");
}

#[tokio::test]
async fn a_proposal_too_large_to_show_whole_is_not_offered_for_editing() {
    let h = Harness::new(PermissionMode::Normal);
    let big = "x".repeat(codewright_protocol::EDITABLE_BYTES) + "\n";
    h.decide([Decision::Reject { feedback: None }]);
    h.call("write_file", json!({"path": "big.txt", "content": big}))
        .await;
    let request = &h.requests()[0];
    let Action::Edit { content, .. } = &request.action else {
        panic!()
    };
    assert!(content.is_none());
    assert!(!request.decisions.contains(&DecisionKind::ApproveEdited));
    assert!(request.decisions.contains(&DecisionKind::Approve));
}

#[tokio::test]
async fn always_allow_saves_a_project_rule() {
    let h = Harness::new(PermissionMode::Normal);
    h.decide([Decision::ApproveAlways {
        rules: vec![codewright_protocol::PermissionRule {
            tool: "write_file".into(),
            pattern: "notes/**".into(),
            action: codewright_protocol::RuleAction::Allow,
        }],
    }]);
    let out = h
        .call("write_file", json!({"path": "notes/a.md", "content": "a"}))
        .await;
    assert!(!out.is_error);
    let saved = h.store.lock().unwrap().rules(h.session.project).unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].rule.pattern, "notes/**");
    // Applies at once: no second question.
    let out = h
        .call("write_file", json!({"path": "notes/b.md", "content": "b"}))
        .await;
    assert!(!out.is_error);
    assert_eq!(h.requests().len(), 1);
}

#[tokio::test]
async fn what_an_earlier_run_of_the_task_read_still_counts() {
    let mut h = Harness::new(PermissionMode::AcceptEdits);
    h.write("a.rs", "fn a() {}\n");
    h.write("b.rs", "fn b() {}\n");
    h.call("read_file", json!({"path": "a.rs"})).await;
    h.call("read_file", json!({"path": "b.rs"})).await;
    h.next_run();
    let out = h
        .call(
            "edit_file",
            json!({"path": "a.rs", "old_string": "fn a()", "new_string": "fn aa()"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(h.read("a.rs"), "fn aa() {}\n");
    // What the agent wrote is what it knows next time; a change by the user in between is not.
    h.write("b.rs", "fn b() {} // the user's\n");
    h.next_run();
    let out = h
        .call(
            "edit_file",
            json!({"path": "a.rs", "old_string": "fn aa()", "new_string": "fn a()"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let out = h
        .call(
            "write_file",
            json!({"path": "b.rs", "content": "overwritten"}),
        )
        .await;
    assert!(
        out.is_error && out.text_content().contains("changed on disk"),
        "{}",
        out.text_content()
    );
    assert_eq!(h.read("b.rs"), "fn b() {} // the user's\n");
}

#[tokio::test]
async fn a_stop_ends_searches() {
    let h = Harness::new(PermissionMode::Normal);
    for i in 0..50 {
        h.write(&format!("d/f{i}.txt"), "needle\n");
    }
    for (tool, args) in [
        ("grep", r#"{"pattern": "needle"}"#),
        ("glob", r#"{"pattern": "**/*.txt"}"#),
    ] {
        let cx = codewright_tools::CallContext::new(h.session.clone(), tool);
        cx.cancel.cancel();
        let out = h.registry.call(tool, args, &cx).await;
        assert!(
            out.is_error && out.text_content().contains("stopped"),
            "{tool}: {}",
            out.text_content()
        );
        let out = h.call_raw(tool, args).await;
        assert!(
            !out.is_error && out.text_content().contains("f49.txt"),
            "{tool}"
        );
    }
}

/// A new file gets the mode any program would give it (0666 less the umask), an existing one
/// keeps its mode, and a symlink is written through: a dangling one creates its target and stays
/// a link; one that leads out of the project is asked for as the outside path it is.
#[tokio::test]
async fn write_file_follows_the_umask_and_writes_through_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new(PermissionMode::AcceptEdits);
    let mode = |rel: &str| std::fs::metadata(h.path(rel)).unwrap().permissions().mode() & 0o7777;
    let is_link = |rel: &str| {
        std::fs::symlink_metadata(h.path(rel))
            .unwrap()
            .file_type()
            .is_symlink()
    };
    std::fs::File::create(h.path("reference.txt")).unwrap();
    let out = h
        .call("write_file", json!({"path": "new.txt", "content": "x\n"}))
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(mode("new.txt"), mode("reference.txt"));

    h.write("run.sh", "echo hi\n");
    std::fs::set_permissions(h.path("run.sh"), PermissionsExt::from_mode(0o750)).unwrap();
    h.call("read_file", json!({"path": "run.sh"})).await;
    let out = h
        .call(
            "write_file",
            json!({"path": "run.sh", "content": "echo bye\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(mode("run.sh"), 0o750);

    std::os::unix::fs::symlink("sub/target.txt", h.path("link.txt")).unwrap();
    let out = h
        .call(
            "write_file",
            json!({"path": "link.txt", "content": "one\n"}),
        )
        .await;
    assert!(
        !out.is_error && out.text_content().starts_with("Created sub/target.txt"),
        "{}",
        out.text_content()
    );
    assert!(is_link("link.txt"));
    assert_eq!(h.read("sub/target.txt"), "one\n");
    // Now that the target exists, the link leads to it as before.
    let out = h
        .call(
            "write_file",
            json!({"path": "link.txt", "content": "two\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(is_link("link.txt"));
    assert_eq!(h.read("link.txt"), "two\n");
    assert!(h.requests().is_empty(), "inside the project: not asked");

    let other = tempfile::tempdir().unwrap();
    let target = other.path().join("escaped.txt");
    std::os::unix::fs::symlink(&target, h.path("out-link.txt")).unwrap();
    let out = h
        .call(
            "write_file",
            json!({"path": "out-link.txt", "content": "x"}),
        )
        .await;
    assert!(out.is_error);
    assert!(!target.exists());
    assert!(is_link("out-link.txt"));
    let request = h.requests().pop().expect("asked");
    assert!(
        request.reason.contains("outside the project"),
        "{}",
        request.reason
    );
}
