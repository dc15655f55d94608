//! The worktree drill: `codewright-cli` and every git it started SIGKILLed together (as a crash
//! or a power cut would) at random points while a task's worktree is made, committed, discarded,
//! restored and merged into the branch checked out in the project folder. After each kill the next command finishes what was cut short; no committed or
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
    let delay = |random: &mut u64| Duration::from_millis(next(random) % 250);
    let mut merge_took = Duration::from_millis(200);

    // Where the kills landed: made or not, discarded or not (said at the end, to see the drill
    // reaches both sides).
    let (mut unmade, mut discarded, mut cut_merges, mut repaired_merges) = (0, 0, 0, 0);
    for round in 0..rounds {
        let title = format!("round {round}");
        // Made, killed: either no task, or one whose worktree the next command makes whole.
        drill.killed(
            &["tasks", "add", "--project", "1", "--worktree", &title],
            delay(&mut random),
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
        drill.killed(&["tasks", "commit", &id, "-m", "work"], delay(&mut random));
        drill.ok(&["tasks", "commit", &id, "-m", "work"]);
        std::fs::write(tree.join("draft.txt"), format!("draft {round}\n")).unwrap();

        // Discarded, killed, then restored (perhaps killed too): all of it comes back.
        drill.killed(&["tasks", "discard", &id, "--yes"], delay(&mut random));
        let state = drill.run(&["tasks", "diff", &id, "--stat"]);
        if !state.status.success() {
            discarded += 1;
            let said = String::from_utf8_lossy(&state.stderr);
            assert!(
                said.contains("restore it first"),
                "round {round} (seed {seed}): {said}"
            );
            drill.killed(&["tasks", "restore", &id], delay(&mut random));
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

        // Merged into main (checked out in the project folder), killed: main is where it was
        // with its folder as it was, or merged; never half of it.
        if round % 2 == 1 {
            // main moves on first: a merge commit, not a fast-forward.
            std::fs::write(drill.repo.join(format!("main-{round}.txt")), "main\n").unwrap();
            git(&drill.repo, &["add", "-A"]);
            assert!(git(&drill.repo, &["commit", "-q", "-m", "main"])
                .status
                .success());
        }
        let before = git(&drill.repo, &["rev-parse", "HEAD"]).stdout;
        // The merge itself is the end of the command (after the repair pass and the plan): the
        // kills land from its middle to just after it, by how long the last one took.
        let at = merge_took.mul_f64(0.5 + (next(&mut random) % 60) as f64 / 100.0);
        drill.killed(&["tasks", "merge", &id], at);
        let after = drill.run(&["tasks", "diff", &id, "--stat"]);
        assert!(after.status.success(), "round {round} (seed {seed})");
        if String::from_utf8_lossy(&after.stderr).contains("merging into main was cut short") {
            repaired_merges += 1;
        }
        let status = git(&drill.repo, &["status", "--porcelain"]);
        assert_eq!(
            String::from_utf8_lossy(&status.stdout),
            "",
            "round {round} (seed {seed}): the project folder after a merge cut short"
        );
        drill.consistent();
        if git(&drill.repo, &["rev-parse", "HEAD"]).stdout == before {
            cut_merges += 1;
            // Its folder as main had it: the last round's work, nothing of this one's.
            assert_eq!(
                std::fs::read_to_string(drill.repo.join("draft.txt")).ok(),
                round.checked_sub(1).map(|last| format!("draft {last}\n")),
                "round {round} (seed {seed})"
            );
            let started = std::time::Instant::now();
            drill.ok(&["tasks", "merge", &id]);
            merge_took = started.elapsed();
        }
        assert_eq!(
            std::fs::read_to_string(drill.repo.join("committed.txt")).ok(),
            Some(format!("kept {round}\n")),
            "round {round} (seed {seed})"
        );
        drill.consistent();
    }
    eprintln!(
        "worktree drill: {unmade} of {rounds} makes killed before the task was stored, {discarded} discards killed after the task said discarded, {cut_merges} merges killed before main moved, {repaired_merges} repaired"
    );
}
