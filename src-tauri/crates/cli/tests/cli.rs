//! Runs the built `codewright-cli` binary against a temporary data folder.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

struct Cli {
    home: tempfile::TempDir,
}

impl Cli {
    fn new() -> Cli {
        Cli {
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The CLI on this data folder, with the user's own skills looked for here, never in the
    /// machine's real home.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        command
            .arg("--home")
            .arg(self.home.path().join("data"))
            .args(args)
            .env_remove("CODEWRIGHT_HOME")
            .env("HOME", self.home.path().join("user"));
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs a command in the folder `cwd`; it must succeed, and its stdout is returned.
    fn ok_in(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.command(args).current_dir(cwd).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} in {} failed: {}",
            cwd.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command in the folder `cwd`; it must fail, and its stderr is returned.
    fn fails_in(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.command(args).current_dir(cwd).output().unwrap();
        assert!(
            !out.status.success(),
            "{args:?} in {} should have failed",
            cwd.display()
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// Runs a command that must succeed and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_str(&self.ok(&args)).unwrap()
    }

    /// Runs a command that must fail and returns its one-line error.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "{args:?} should have failed");
        assert!(out.stdout.is_empty(), "a failure printed to stdout");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "error is not one line: {err}"
        );
        err
    }

    fn folder(&self, name: &str) -> String {
        let dir = self.home.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir.to_str().unwrap().to_string()
    }
}

#[test]
fn projects_and_tasks_round_trip() {
    let cli = Cli::new();
    assert!(cli.ok(&["projects", "list"]).contains("No projects yet"));
    assert_eq!(cli.json(&["projects", "list"]), serde_json::json!([]));

    let dir = cli.folder("app");
    let project = cli.json(&["projects", "add", &dir, "--name", "My App"]);
    let pid = project["id"].as_i64().unwrap().to_string();
    assert_eq!(project["name"], "My App");
    assert_eq!(project["rootPath"], dir);

    let text = cli.ok(&["projects", "list"]);
    assert!(
        text.starts_with("ID") && text.contains("My App") && text.contains(&dir),
        "{text}"
    );

    let task = cli.json(&["tasks", "add", "--project", &pid, "Fix the login bug"]);
    assert_eq!(task["title"], "Fix the login bug");
    assert_eq!(task["status"], "idle");
    let tid = task["id"].as_i64().unwrap().to_string();
    cli.ok(&["tasks", "add", "--project", &pid, "Second"]);
    let tasks = cli.json(&["tasks", "list", "--project", &pid]);
    assert_eq!(tasks.as_array().unwrap().len(), 2);
    assert!(cli
        .ok(&["tasks", "list", "--project", &pid])
        .contains("Fix the login bug"));

    // Settings: off by default, changed one at a time, bad values refused.
    assert_eq!(
        cli.json(&["projects", "settings", &pid]),
        serde_json::json!({"sandbox": false, "allowPrivateNetwork": false, "passEnv": [], "trusted": false, "worktrees": false, "worktreeSetUp": ""})
    );
    cli.ok(&["projects", "settings", &pid, "--sandbox", "on"]);
    let shown = cli.ok(&["projects", "settings", &pid, "--private-network", "on"]);
    assert!(
        shown.contains("sandbox          on") && shown.contains("private-network  on"),
        "{shown}"
    );
    let shown = cli.ok(&[
        "projects",
        "settings",
        &pid,
        "--pass-env",
        "GITHUB_TOKEN, NPM_TOKEN",
    ]);
    assert!(
        shown.contains("pass-env         GITHUB_TOKEN, NPM_TOKEN"),
        "{shown}"
    );
    assert_eq!(
        cli.json(&["projects", "settings", &pid])["passEnv"],
        serde_json::json!(["GITHUB_TOKEN", "NPM_TOKEN"])
    );
    let shown = cli.ok(&[
        "projects",
        "settings",
        &pid,
        "--worktree-set-up",
        "  npm ci  ",
    ]);
    assert!(shown.contains("worktree-set-up  npm ci\n"), "{shown}");
    let too_long = "x".repeat(2_001);
    let out = cli.run(&["projects", "settings", &pid, "--worktree-set-up", &too_long]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("keep it under 2000"),
        "{out:?}"
    );
    let shown = cli.ok(&["projects", "settings", &pid, "--worktrees", "on"]);
    assert!(shown.contains("worktrees        on"), "{shown}");
    let out = cli.run(&["projects", "settings", &pid, "--sandbox", "yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither on nor off"));

    cli.ok(&["tasks", "rename", &tid, "Fixed"]);
    cli.ok(&["projects", "rename", &pid, "Renamed"]);
    assert_eq!(cli.json(&["projects", "list"])[0]["name"], "Renamed");
    cli.ok(&["tasks", "rm", &tid]);
    assert_eq!(
        cli.json(&["tasks", "list", "--project", &pid])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    std::fs::write(Path::new(&dir).join("keep.txt"), "x").unwrap();
    let removed = cli.ok(&["projects", "rm", &pid]);
    assert!(removed.contains("not touched"), "{removed}");
    assert!(Path::new(&dir).join("keep.txt").exists());
    assert_eq!(cli.json(&["projects", "list"]), serde_json::json!([]));
}

/// `--project` takes an id or a folder and defaults to the current folder's project, so a user
/// in their project (or a folder inside it) types no id at all.
#[test]
fn project_is_an_id_or_a_folder_and_defaults_to_the_current_one() {
    let cli = Cli::new();
    let folder = cli.home.path().join("shop");
    std::fs::create_dir_all(folder.join("src/deep")).unwrap();
    let id = cli.json(&["projects", "add", folder.to_str().unwrap()])["id"].to_string();

    // In the project's folder, and in a folder inside it: no --project needed.
    cli.ok_in(&folder, &["tasks", "add", "from the folder"]);
    cli.ok_in(&folder.join("src/deep"), &["tasks", "add", "from inside"]);
    let by_id = cli.json(&["tasks", "list", "--project", &id]);
    let by_folder = cli.json(&["tasks", "list", "--project", folder.to_str().unwrap()]);
    assert_eq!(by_id, by_folder);
    let titles: Vec<&str> = by_id
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(titles.contains(&"from the folder") && titles.contains(&"from inside"));
    let rules = cli.ok_in(&folder.join("src"), &["rules", "list"]);
    assert!(rules.contains("No saved rules"), "{rules}");
    // `exec` in a folder inside the project works in that project; it adds no nested one.
    let no_model = cli.fails_in(&folder.join("src/deep"), &["exec", "hello"]);
    assert!(no_model.contains("--model"), "{no_model}");
    assert_eq!(cli.json(&["projects", "list"]).as_array().unwrap().len(), 1);

    // A folder in no project says how to add it, and adds nothing.
    let elsewhere = cli.home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let err = cli.fails(&["tasks", "list", "--project", elsewhere.to_str().unwrap()]);
    assert!(
        err.contains("is in no project") && err.contains("projects add"),
        "{err}"
    );
    let err = cli.fails(&["tasks", "list", "--project", "999"]);
    assert!(err.contains("999"), "{err}");
    assert_eq!(cli.json(&["projects", "list"]).as_array().unwrap().len(), 1);
}

#[test]
fn bad_input_is_a_one_line_error_naming_the_problem() {
    let cli = Cli::new();
    let missing = cli.home.path().join("missing");
    let err = cli.fails(&["projects", "add", missing.to_str().unwrap()]);
    assert!(
        err.contains("does not exist") && err.contains(missing.to_str().unwrap()),
        "{err}"
    );

    let file = cli.home.path().join("f.txt");
    std::fs::write(&file, "x").unwrap();
    assert!(cli
        .fails(&["projects", "add", file.to_str().unwrap()])
        .contains("not a folder"));

    let dir = cli.folder("p");
    cli.ok(&["projects", "add", &dir]);
    let err = cli.fails(&["projects", "add", &dir]);
    assert!(
        err.contains("already a project") && err.contains(&dir),
        "{err}"
    );
    assert_eq!(cli.json(&["projects", "list"]).as_array().unwrap().len(), 1);

    assert!(cli
        .fails(&["projects", "rename", "1", "   "])
        .contains("cannot be empty"));
    assert!(cli
        .fails(&["tasks", "add", "--project", "42", "x"])
        .contains("project 42 does not exist"));
    assert!(cli
        .fails(&["tasks", "rm", "7"])
        .contains("task 7 does not exist"));
    assert!(cli
        .fails(&["tasks", "list", "--project", "abc"])
        .contains("there is no folder abc: --project takes a project's id"));

    // With --json, every command's error is one line on stdout in one shape (the events'),
    // its kind from the engine's vocabulary; stderr still says it in words.
    for (args, kind, says) in [
        (
            vec!["tasks", "rm", "7", "--json"],
            "notFound",
            "task 7 does not exist",
        ),
        (
            vec!["projects", "add", &dir, "--json"],
            "alreadyAdded",
            "already a project",
        ),
        (
            vec!["tasks", "list", "--project", "abc", "--json"],
            "badInput",
            "there is no folder abc",
        ),
        (
            vec!["mcp", "tools", "nothing", "--json"],
            "notFound",
            "mcp list",
        ),
    ] {
        let out = cli.run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let error: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON line ({e}): {stdout}"));
        assert_eq!(error["type"], "error", "{args:?}: {error}");
        assert_eq!(error["kind"], kind, "{args:?}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(says),
            "{args:?}: {error}"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}"
        );
    }
}

#[test]
fn unicode_is_preserved_exactly() {
    let cli = Cli::new();
    let dir = cli.folder("代码 🚀");
    let p = cli.json(&["projects", "add", &dir]);
    assert_eq!(p["name"], "代码 🚀");
    let pid = p["id"].to_string();
    for title in ["修复 bug 🐛", "تحسين الأداء", "👩‍💻"] {
        assert_eq!(
            cli.json(&["tasks", "add", "--project", &pid, title])["title"],
            title
        );
    }
    let text = cli.ok(&["tasks", "list", "--project", &pid]);
    assert!(
        text.contains("تحسين الأداء") && text.contains("👩‍💻"),
        "{text}"
    );
}

#[test]
fn a_corrupt_database_fails_with_its_path_and_is_not_touched() {
    let cli = Cli::new();
    let data = cli.home.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("codewright.db");
    let garbage =
        b"this is not a sqlite database, it is a text file that got in the way".repeat(100);
    std::fs::write(&db, &garbage).unwrap();
    let err = cli.fails(&["projects", "list"]);
    assert!(
        err.contains(db.to_str().unwrap()) && err.contains("corrupt"),
        "{err}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), garbage);
}

/// Another process holds a write on the database: the CLI says it waits, then which process
/// holds the file — not that it should be made writable.
#[test]
fn a_database_another_process_holds_is_waited_for_and_named() {
    let cli = Cli::new();
    cli.ok(&["projects", "list"]);
    let db = cli.home.path().join("data/codewright.db");
    assert!(db.exists());
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN EXCLUSIVE')\n\
             print('held', flush=True)\n\
             time.sleep(60)",
        ])
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 (scripts/setup)");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let out = cli.run(&["projects", "add", &cli.folder("p")]);
    let pid = holder.id();
    let _ = holder.kill();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let _ = holder.wait();
    assert!(err.contains("waiting for the database"), "{err}");
    assert!(
        err.contains("in use by another process") && err.contains(&format!("(process {pid})")),
        "{err}"
    );
    assert!(!err.contains("writable"), "{err}");
}

#[test]
fn an_unusable_data_folder_fails_with_its_path() {
    let cli = Cli::new();
    let file = cli.home.path().join("blocker");
    std::fs::write(&file, "x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
        .args(["projects", "list"])
        .env("CODEWRIGHT_HOME", file.join("inner"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("blocker") && err.contains("CODEWRIGHT_HOME"),
        "{err}"
    );
}

#[test]
fn concurrent_cli_processes_do_not_lose_writes() {
    let cli = Cli::new();
    let dir = cli.folder("p");
    let pid = cli.json(&["projects", "add", &dir])["id"].to_string();
    let home = cli.home.path().join("data");
    let children: Vec<_> = (0..8)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
                .arg("--home")
                .arg(&home)
                .args(["tasks", "add", "--project", &pid, &format!("task {i}")])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(
        cli.json(&["tasks", "list", "--project", &pid])
            .as_array()
            .unwrap()
            .len(),
        8
    );
}

#[test]
fn skills_from_a_claude_folder_are_listed_shown_and_switched_per_task() {
    let cli = Cli::new();
    let project = cli.folder("proj");
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // A user's existing ~/.claude/skills, unchanged: a skill with scripts and a reference file.
    let user = cli.home.path().join("user/.claude/skills");
    write(
        &user.join("pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Extract text and tables from PDF files, fill forms\nlicense: MIT\n---\n\n# PDF\nSee reference.md; run scripts/extract.py FILE.\n",
    );
    write(&user.join("pdf/reference.md"), "pypdf notes");
    write(&user.join("pdf/scripts/extract.py"), "print('text')");
    write(
        &user.join("broken/SKILL.md"),
        "---\nname: broken\ndescription: \"unclosed\n---\n",
    );
    // The project's own skill of the same name wins.
    write(
        &Path::new(&project).join(".codewright/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: The project's PDF rules\n---\nUse our tool.\n",
    );
    write(
        &Path::new(&project).join(".claude/skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review the diff\n---\n",
    );
    let p = cli.json(&["projects", "add", &project])["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let t = cli.json(&["tasks", "add", "--project", &p, "Work"])["id"]
        .as_i64()
        .unwrap()
        .to_string();

    // Until the project is trusted, only the user's own skills are offered.
    let untrusted = cli.ok(&["skills", "list", "--project", &p]);
    assert!(
        !untrusted.contains("review") && !untrusted.contains("The project's PDF rules"),
        "{untrusted}"
    );
    // `exec` there (no terminal to ask on) says what is not used and how to trust it.
    let out = cli.run(&["exec", "--project", &project, "hi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("this project's own skills pdf, review are not used until you trust it")
            && err.contains(&format!("projects settings {p} --trusted on")),
        "{err}"
    );
    cli.ok(&["projects", "settings", &p, "--trusted", "on"]);
    let listed = cli.ok(&["skills", "list", "--project", &p]);
    let lines: Vec<&str> = listed.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("FROM") && !lines[0].contains(" ON "),
        "{listed}"
    );
    assert!(
        lines[1].starts_with("pdf")
            && lines[1].contains("project ")
            && lines[1].contains("The project's PDF rules"),
        "{listed}"
    );
    assert!(
        lines[2].starts_with("review") && lines[2].contains("project (.claude)"),
        "{listed}"
    );
    assert!(
        lines[3].starts_with("Not loaded: ")
            && lines[3].contains("broken")
            && lines[3].contains("not valid YAML"),
        "{listed}"
    );
    let json = cli.json(&["skills", "list", "--project", &p]);
    assert_eq!(json["skills"].as_array().unwrap().len(), 2);
    assert_eq!(json["skills"][0]["source"], "project");
    assert_eq!(json["broken"][0]["source"], "userClaude");

    let shown = cli.ok(&["skills", "show", "review", "--project", &p]);
    assert!(shown.starts_with("# Skill: review\n"), "{shown}");
    let err = cli.fails(&["skills", "show", "reveiw", "--project", &p]);
    assert!(err.contains("did you mean review?"), "{err}");

    let off = cli.json(&["skills", "off", "review", "--task", &t]);
    assert_eq!(off["skills"][1]["name"], "review");
    assert_eq!(off["skills"][1]["on"], false);
    assert_eq!(off["skills"][0]["on"], true);
    let listed = cli.ok(&["skills", "list", "--task", &t]);
    assert!(
        listed.lines().nth(2).unwrap().starts_with("review") && listed.contains(" no "),
        "{listed}"
    );
    cli.ok(&["skills", "on", "review", "--task", &t]);
    assert_eq!(
        cli.json(&["skills", "list", "--task", &t])["skills"][1]["on"],
        true
    );
    let err = cli.fails(&["skills", "off", "nosuch", "--task", &t]);
    assert!(
        err.contains("No skill named \"nosuch\" is installed for this project."),
        "{err}"
    );
    // Agents: the built-in ones and the project's (Claude Code's file, unchanged), a broken one
    // with why; the task's is marked.
    write(
        &Path::new(&project).join(".claude/agents/test-runner.md"),
        "---\nname: test-runner\ndescription: Runs the tests\ntools: Read, Bash\n---\nRun them.\n",
    );
    write(
        &Path::new(&project).join(".codewright/agents/broken.md"),
        "no front matter",
    );
    let listed = cli.ok(&["agents", "--project", &p]);
    for name in ["coder", "explorer", "planner", "reviewer"] {
        assert!(
            listed
                .lines()
                .any(|l| l.starts_with(name) && l.contains("built-in")),
            "{listed}"
        );
    }
    assert!(
        listed.lines().any(|l| l.starts_with("test-runner")
            && l.contains("project (.claude)")
            && l.contains(" 5 ")),
        "{listed}"
    );
    assert!(
        listed.contains("Not loaded: ")
            && listed.contains("broken.md — it does not start with front matter"),
        "{listed}"
    );
    let err = cli.fails(&["exec", "--project", &project, "--agent", "test-runer", "hi"]);
    assert!(err.contains("did you mean test-runner?"), "{err}");
    let agents = cli.json(&["agents", "--task", &t]);
    assert_eq!(agents["current"], "coder");

    // Ranked higher, listed first; a negative rank is a rank, not an option.
    let ranked = cli.json(&["skills", "rank", "review", "2", "--task", &t]);
    assert_eq!(ranked["skills"][0]["name"], "review");
    assert_eq!(ranked["skills"][0]["priority"], 2);
    let ranked = cli.json(&["skills", "rank", "review", "-1", "--task", &t]);
    assert_eq!(ranked["skills"][1]["name"], "review");
    assert_eq!(ranked["skills"][1]["priority"], -1);
}
