//! The worktree drill: `codewright-cli` and every git it started SIGKILLed together (as a crash
//! or a power cut would) at random points while a task's worktree is made, committed, discarded
//! and restored. After each kill the next command finishes what was cut short; no committed or
//! uncommitted change is ever lost, `git fsck` stays clean, and the task goes on.
//!
//! CODEWRIGHT_DRILL_ROUNDS sets the rounds (default 8); the seed is printed, and
//! CODEWRIGHT_DRILL_SEED replays one.

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Test"),
    ("GIT_AUTHOR_EMAIL", "test@example.com"),
    ("GIT_COMMITTER_NAME", "Test"),
    ("GIT_COMMITTER_EMAIL", "test@example.com"),
];

struct Drill {
    dir: tempfile::TempDir,
    repo: PathBuf,
    seed: u64,
}

impl Drill {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codewright-cli"));
        c.arg("--home")
            .arg(self.dir.path().join("data"))
            .args(args)
            .env("HOME", self.dir.path().join("user"))
            .envs(IDENTITY)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} (seed {}): {}",
            self.seed,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `args` and SIGKILLs it with every process it started after `after`.
    fn killed(&self, args: &[&str], after: Duration) {
        let mut child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        // SAFETY: a plain syscall on the group this test made.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }

    fn task(&self, title: &str) -> Option<Value> {
        let tasks: Value =
            serde_json::from_str(&self.ok(&["tasks", "list", "--project", "1", "--json"])).unwrap();
        tasks
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"] == title)
            .cloned()
    }

    /// The repository is whole: fsck finds nothing, and no git lock file is left anywhere.
    fn consistent(&self) {
        let fsck = git(&self.repo, &["fsck", "--no-progress"]);
        assert!(fsck.status.success(), "fsck (seed {}): {fsck:?}", self.seed);
        let mut locks = Vec::new();
        find_locks(&self.repo.join(".git"), &mut locks);
        assert!(
            locks.is_empty(),
            "lock files left (seed {}): {locks:?}",
            self.seed
        );
    }
}

fn find_locks(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_locks(&path, found);
        } else if path.extension().is_some_and(|e| e == "lock") {
            found.push(path);
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(IDENTITY)
        .output()
        .unwrap()
}

/// A small deterministic generator (xorshift), so a failing round can be replayed by its seed.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn worktree_operations_killed_at_random_points_lose_nothing() {
    let seed = std::env::var("CODEWRIGHT_DRILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let rounds: usize = std::env::var("CODEWRIGHT_DRILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    eprintln!("worktree drill: seed {seed}, {rounds} rounds");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for (i, file) in ["a.txt", "b.txt", "c.txt"].iter().enumerate() {
        std::fs::write(repo.join(file), format!("{i}\n").repeat(200)).unwrap();
    }
    assert!(git(&repo, &["init", "-q", "-b", "main"]).status.success());
    assert!(git(&repo, &["add", "-A"]).status.success());
    assert!(git(&repo, &["commit", "-q", "-m", "first"])
        .status
        .success());
    let drill = Drill { dir, repo, seed };
    drill.ok(&["projects", "add", drill.repo.to_str().unwrap()]);
    let mut random = seed;
    // Kills land anywhere from before the first git to after the last (each command here takes
    // 80–200 ms in a debug build).
    let mut delay = || Duration::from_millis(next(&mut random) % 250);

    // Where the kills landed: made or not, discarded or not (said at the end, to see the drill
    // reaches both sides).
    let (mut unmade, mut discarded) = (0, 0);
    for round in 0..rounds {
        let title = format!("round {round}");
        // Made, killed: either no task, or one whose worktree the next command makes whole.
        drill.killed(
            &["tasks", "add", "--project", "1", "--worktree", &title],
            delay(),
        );
        if drill.task(&title).is_none() {
            unmade += 1;
            drill.ok(&["tasks", "add", "--project", "1", "--worktree", &title]);
        }
        let task = drill.task(&title).unwrap();
        let id = task["id"].to_string();
        drill.ok(&["tasks", "diff", &id, "--stat"]);
        let tree = PathBuf::from(task["worktree"]["path"].as_str().unwrap());
        assert!(tree.join("a.txt").exists(), "round {round} (seed {seed})");

        // Work: one change committed (by a commit that may be killed), one not.
        std::fs::write(tree.join("committed.txt"), format!("kept {round}\n")).unwrap();
        drill.killed(&["tasks", "commit", &id, "-m", "work"], delay());
        drill.ok(&["tasks", "commit", &id, "-m", "work"]);
        std::fs::write(tree.join("draft.txt"), format!("draft {round}\n")).unwrap();

        // Discarded, killed, then restored (perhaps killed too): all of it comes back.
        drill.killed(&["tasks", "discard", &id, "--yes"], delay());
        let state = drill.run(&["tasks", "diff", &id, "--stat"]);
        if !state.status.success() {
            discarded += 1;
            let said = String::from_utf8_lossy(&state.stderr);
            assert!(
                said.contains("restore it first"),
                "round {round} (seed {seed}): {said}"
            );
            drill.killed(&["tasks", "restore", &id], delay());
            // Restored by the cut-short attempt, or now.
            if !drill
                .run(&["tasks", "diff", &id, "--stat"])
                .status
                .success()
            {
                drill.ok(&["tasks", "restore", &id]);
            }
        }
        let task = drill.task(&title).unwrap();
        let tree = PathBuf::from(task["worktree"]["path"].as_str().unwrap());
        assert_eq!(
            std::fs::read_to_string(tree.join("committed.txt")).ok(),
            Some(format!("kept {round}\n")),
            "round {round} (seed {seed})"
        );
        assert_eq!(
            std::fs::read_to_string(tree.join("draft.txt")).ok(),
            Some(format!("draft {round}\n")),
            "round {round} (seed {seed})"
        );
        drill.consistent();
        // The task goes on: its change is read, and committed.
        drill.ok(&["tasks", "commit", &id, "-m", "more"]);
    }
    eprintln!(
        "worktree drill: {unmade} of {rounds} makes killed before the task was stored, {discarded} discards killed after the task said discarded"
    );
    // The project folder never saw a task's work.
    assert!(!drill.repo.join("committed.txt").exists());
    assert!(!drill.repo.join("draft.txt").exists());
}
