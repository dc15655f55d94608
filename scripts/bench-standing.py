#!/usr/bin/env python3
"""The main window's live branch status of worktree tasks, on the release app under Xvfb: a
repository of 2,000 files with 20 tasks in worktrees of their own (each with a change, five
committed) beside a project of 20 tasks in its folder. Measured: the worktree project chosen →
all 20 rows showing where their branches stand (the first time: read then; after: the window's
last values at once, read again behind them); then the idle CPU of the app and its WebKit
processes with each project shown, alternating (BENCH_ROUNDS rounds of BENCH_IDLE_S seconds
each, default 3 × 20 s): the difference is what following 20 branches costs while nothing
changes; and a commit made in one worktree from a terminal → its row changed.

    cargo build --release --features custom-protocol --bin codewright
    cargo build --release -p codewright-cli
    python3 scripts/bench-standing.py [TARGET_DIR]    # needs Xvfb and tauri-driver (scripts/setup --test)
"""
import importlib.util, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_task_window", os.path.join(here, "bench-task-window.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)  # its helpers: the app under Xvfb, a WebDriver session, the CLI

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 3))
IDLE_S = float(os.environ.get("BENCH_IDLE_S", 20))
TASKS = 20
GIT = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
           GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")


def git(folder, *args):
    subprocess.run(["git", "-C", folder, *args], env=GIT, check=True, capture_output=True)


def idle_cpu(pids, seconds):
    before, t0 = bench.cpu_ticks(pids), time.time()
    time.sleep(seconds)
    return (bench.cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK") / (time.time() - t0) * 100


def main():
    for exe in (bench.APP, bench.CLI):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    with tempfile.TemporaryDirectory(prefix="cw-bench-standing-") as work:
        repo, plain, home = (os.path.join(work, name) for name in ("repo", "plain", "data"))
        for i in range(2000):
            folder = os.path.join(repo, f"pkg{i // 40:03d}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"mod{i % 40:02d}.py"), "w") as f:
                f.write("".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(10)))
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "files")
        os.makedirs(plain)
        bench.cli(home, "projects", "add", repo, "--name", "a-worktrees")
        bench.cli(home, "projects", "add", plain, "--name", "b-folder")
        # A main model, so the main window lists tasks rather than its first-run set-up (never
        # asked: nothing is sent here).
        bench.cli(home, "providers", "add", "bench", "--protocol", "openai", "--base-url",
                  "http://127.0.0.1:9/v1", "--api-key-env", "CODEWRIGHT_BENCH_KEY")
        bench.cli(home, "models", "add", "bench@bench", "--context", "200000")
        bench.cli(home, "models", "role", "main", "bench@bench")
        trees = []
        for n in range(TASKS):
            added = bench.cli(home, "tasks", "add", "--project", "1", "--worktree", f"Task {n}")
            tree = added["worktree"]["path"]
            trees.append(tree)
            with open(os.path.join(tree, f"pkg{n:03d}", "mod00.py"), "a") as f:
                f.write(f"# changed by task {n}\n")
            with open(os.path.join(tree, f"notes-{n}.md"), "w") as f:
                f.write(f"task {n}\n")
            if n % 4 == 0:
                git(tree, "add", "-A")
                git(tree, "commit", "-q", "-m", f"task {n}")
            bench.cli(home, "tasks", "add", "--project", "2", f"In the folder {n}")
        display = f":{bench.free_port() % 400 + 200}"
        with bench.app(home, display) as port:
            s = bench.Session(port)
            s.wait("return document.body.dataset.ready === 'true'")
            s.wait_spare()
            s.switch(s.main)
            pids = bench.tree(bench.app_pid())
            shown = "return document.querySelectorAll('.task-standing').length"

            def choose(name):
                s.click(f".project[data-id='{1 if name == 'a' else 2}'] .project-button")

            # The worktree project chosen → its 20 rows say where their branches stand.
            choose("b")
            s.wait("return document.querySelectorAll('.task').length === 20")
            firsts = []
            for _ in range(5):
                s.js("window.__t0 = performance.now()")
                choose("a")
                s.wait_in_page(f"document.querySelectorAll('.task-standing').length === {TASKS}")
                firsts.append(s.js("return performance.now() - window.__t0"))
                choose("b")
                s.wait("return document.querySelectorAll('.task-standing').length === 0")
            # Idle, alternating: the worktree project shown, then the folder project.
            cpu = {"a": [], "b": []}
            for _ in range(ROUNDS):
                for name in ("a", "b"):
                    choose(name)
                    if name == "a":
                        s.wait(f"{shown} === {TASKS} || null")
                    time.sleep(3)  # the first reads settle
                    cpu[name].append(idle_cpu(pids, IDLE_S))
            # A commit from a terminal in one worktree → its row.
            choose("a")
            s.wait(f"{shown} === {TASKS} || null")
            task = 2  # task ids: 1 is the first worktree task
            before = s.js(f"return document.querySelector(\".task[data-id='{task}'] .task-standing\").title")
            t0 = time.time()
            git(trees[1], "add", "-A")
            git(trees[1], "commit", "-q", "-m", "by hand")
            s.wait(f"const t = document.querySelector(\".task[data-id='{task}'] .task-standing\").title; "
                   f"return t !== {before!r} ? t : null", every=0.01)
            moved = (time.time() - t0) * 1000
            a, b = statistics.median(cpu["a"]), statistics.median(cpu["b"])
            print(f"{TASKS} worktree tasks of a 2,000-file repository: chosen the first time → all rows with their "
                  f"status {firsts[0]:.0f} ms (read then); chosen again → shown {statistics.median(firsts[1:]):.0f} ms p50 "
                  f"(the window's last values, read again behind them); idle CPU, app + WebKit, "
                  f"{ROUNDS} × {IDLE_S:.0f} s alternating: worktree project shown {a:.2f} %, folder project shown "
                  f"{b:.2f} % of one core (difference {a - b:+.2f} %; runs {', '.join(f'{x:.2f}' for x in cpu['a'])} "
                  f"vs {', '.join(f'{x:.2f}' for x in cpu['b'])}); a commit from a terminal → its row changed "
                  f"{moved:.0f} ms")
            bench.wd(port, "DELETE", f"/session/{s.id}")


main()
