#!/usr/bin/env python3
"""A task's worktree on a large repository: `codewright-cli tasks add --worktree` (the whole
command: a process started, the data folder opened, the repository and base checked, the worktree
made on a new branch, the task stored) next to `git worktree add -b` alone (the floor), runs
interleaved on one repository of BENCH_FILES files (default 100,000, in 1,000 folders).
Then the task's whole change read (`tasks diff --stat --json`) with 5,000 changed lines across
50 files, next to `git diff --numstat` of the same worktree (the floor, which sees neither
new files nor an index of its own).

    cargo build --release -p codewright-cli
    python3 scripts/bench-worktree.py [TARGET_DIR]

Prints medians and ratios; BENCH_RUNS (default 7) runs of each; BENCH_ONLY=diff skips the first
part.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
CLI = os.path.join(target, "release", "codewright-cli")
FILES = int(os.environ.get("BENCH_FILES", 100_000))
RUNS = int(os.environ.get("BENCH_RUNS", 7))
ENV = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
           GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")


def run(*args, cwd=None):
    out = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr}")
    return out.stdout


def timed(*args, cwd=None):
    start = time.perf_counter()
    out = run(*args, cwd=cwd)
    return time.perf_counter() - start, out


def main():
    if not os.path.exists(CLI):
        sys.exit(f"no {CLI}: cargo build --release -p codewright-cli")
    work = tempfile.mkdtemp(prefix="cw-bench-worktree-")
    try:
        repo = os.path.join(work, "repo")
        home = os.path.join(work, "data")
        floor_trees = os.path.join(work, "floor")
        os.makedirs(repo)
        started = time.perf_counter()
        for i in range(FILES):
            folder = os.path.join(repo, f"pkg{i // 100:04d}")
            if i % 100 == 0:
                os.makedirs(folder)
            with open(os.path.join(folder, f"mod{i % 100:03d}.py"), "w") as f:
                f.write(f"def f{i}(x):\n    return x + {i}\n")
        run("git", "init", "-q", "-b", "main", cwd=repo)
        run("git", "add", "-A", cwd=repo)
        run("git", "commit", "-q", "-m", "files", cwd=repo)
        print(f"repository of {FILES:,} files made in {time.perf_counter() - started:.0f} s")
        run(CLI, "--home", home, "projects", "add", repo)

        ours, floor = [], []
        for i in range(0 if os.environ.get("BENCH_ONLY") == "diff" else RUNS):
            # Interleaved, so both see the same page cache and machine load.
            t, out = timed(CLI, "--home", home, "--json", "tasks", "add", "--project", "1", "--worktree", f"bench {i}")
            ours.append(t)
            made = json.loads(out)["worktree"]["path"]
            path = os.path.join(floor_trees, str(i))
            t, _ = timed("git", "-C", repo, "worktree", "add", "-q", "-b", f"floor-{i}", path, "HEAD")
            floor.append(t)
            # Not timed: both worktrees go, so the disk holds two at a time.
            run("git", "-C", repo, "worktree", "remove", "--force", path)
            run("git", "-C", repo, "worktree", "remove", "--force", made)
        if ours:
            m_ours, m_floor = statistics.median(ours), statistics.median(floor)
            print(f"worktree made: codewright {m_ours * 1000:.0f} ms, git worktree add {m_floor * 1000:.0f} ms "
                  f"(median of {RUNS}); ratio {m_ours / m_floor:.2f}x")

        # The change of one task: 5,000 lines over 50 files (half changed, half new).
        added = json.loads(run(CLI, "--home", home, "--json", "tasks", "add", "--project", "1", "--worktree", "bench diff"))
        task, tree = str(added["id"]), added["worktree"]["path"]
        for n in range(25):
            with open(os.path.join(tree, f"pkg{n:04d}", "mod000.py"), "a") as f:
                f.write("".join(f"    y{k} = {k}\n" for k in range(100)))
            with open(os.path.join(tree, f"pkg{n:04d}", "new.py"), "w") as f:
                f.write("".join(f"z{k} = {k}\n" for k in range(100)))
        ours, floor = [], []
        for _ in range(RUNS):
            t, out = timed(CLI, "--home", home, "--json", "tasks", "diff", task)
            ours.append(t)
            t, _ = timed("git", "-C", tree, "diff", "--numstat", "HEAD")
            floor.append(t)
        assert '"added": 100' in out, out[:500]
        m_ours, m_floor = statistics.median(ours), statistics.median(floor)
        print(f"change read (5,000 lines, 50 files, hunks included): codewright {m_ours * 1000:.0f} ms, "
              f"git diff --numstat {m_floor * 1000:.0f} ms (median of {RUNS}); ratio {m_ours / m_floor:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
