//! `tool`, `rules` and `checkpoints` through the built binary.

use serde_json::Value;
use std::process::{Command, Output};

struct Cli {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Cli {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
            .arg("--home")
            .arg(self.home.path())
            .args(args)
            .output()
            .unwrap()
    }
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_str(&self.ok(&args)).unwrap()
    }
    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    }
    fn file(&self, name: &str) -> std::path::PathBuf {
        self.project.path().join(name)
    }
}

#[test]
fn tools_run_with_approvals_and_changes_can_be_undone() {
    let cli = Cli {
        home: tempfile::tempdir().unwrap(),
        project: tempfile::tempdir().unwrap(),
    };
    let project = cli.json(&["projects", "add", cli.project.path().to_str().unwrap()]);
    let project_id = project["id"].to_string();
    let task = cli.json(&["tasks", "add", "--project", &project_id, "edit things"]);
    let task_id = task["id"].to_string();
    std::fs::write(cli.file("a.txt"), "alpha\n").unwrap();

    let list = cli.ok(&["tool", "list"]);
    for name in ["read_file", "edit_file", "bash", "web_fetch", "todo_write"] {
        assert!(list.contains(name), "{list}");
    }

    // Not a terminal and normal mode: asking means rejected, with the reason.
    let err = cli.fails(&[
        "tool",
        "run",
        "write_file",
        r#"{"path": "b.txt", "content": "b"}"#,
        "--task",
        &task_id,
    ]);
    assert!(err.contains("non-interactive"), "{err}");
    assert!(!cli.file("b.txt").exists());

    // Yolo: runs. Turn 1 creates b and deletes a.
    cli.ok(&[
        "tool",
        "run",
        "write_file",
        r#"{"path": "b.txt", "content": "b\n"}"#,
        "--task",
        &task_id,
        "--mode",
        "yolo",
    ]);
    let out = cli.json(&[
        "tool",
        "run",
        "bash",
        r#"{"command": "rm a.txt && echo gone"}"#,
        "--task",
        &task_id,
        "--mode",
        "yolo",
    ]);
    assert_eq!(out["detail"]["exitCode"], 0, "{out}");
    assert!(!cli.file("a.txt").exists());

    let checkpoints = cli.json(&["checkpoints", "list", &task_id]);
    assert_eq!(checkpoints.as_array().unwrap().len(), 1);
    let restored = cli.json(&["checkpoints", "restore", &task_id, "--turn", "1"]);
    assert_eq!(
        std::fs::read_to_string(cli.file("a.txt")).unwrap(),
        "alpha\n"
    );
    assert!(!cli.file("b.txt").exists());
    let undo = restored["undoCheckpoint"].to_string();
    let text = cli.ok(&["checkpoints", "restore", &task_id, "--checkpoint", &undo]);
    assert!(
        text.starts_with("Restored 1 file(s), removed 1 created file(s)"),
        "{text}"
    );
    assert!(!cli.file("a.txt").exists());
    assert!(cli.file("b.txt").exists());

    // Saved rules: listed, applied, removed.
    let rule = cli.json(&[
        "rules",
        "add",
        "--project",
        &project_id,
        "write_file",
        "notes/*",
    ]);
    cli.ok(&[
        "tool",
        "run",
        "write_file",
        r#"{"path": "notes/n.md", "content": "n"}"#,
        "--task",
        &task_id,
    ]);
    assert!(cli.file("notes/n.md").exists());
    let table = cli.ok(&["rules", "list", "--project", &project_id]);
    assert!(table.contains("allow   write_file  notes/*"), "{table}");
    cli.ok(&["rules", "rm", &rule["id"].to_string()]);
    assert_eq!(
        cli.ok(&["rules", "list", "--project", &project_id]),
        "No saved rules for this project.\n"
    );

    // Plan mode refuses commands; an unknown mode is a usage error.
    let err = cli.fails(&[
        "tool",
        "run",
        "bash",
        r#"{"command": "ls"}"#,
        "--task",
        &task_id,
        "--mode",
        "plan",
    ]);
    assert!(err.contains("plan mode"));
    let out = cli.run(&[
        "tool", "run", "bash", "{}", "--task", &task_id, "--mode", "wild",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
