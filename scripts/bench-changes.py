#!/usr/bin/env python3
"""The Changes view on a 5,000-line diff, on the release app under Xvfb: a click on "Changes"
in a task window → the task's whole change read (`task_changes`: git in a temporary index, the
patch parsed into hunks) → drawn and painted (the frame after it: every file and hunk, the lines
of those within a screen of the view), BENCH_RUNS times (default 7), the view closed between
runs; then, the view scrolled to its end at once → the last hunk's lines drawn. The task works in a worktree of its own whose change is 5,000 added
lines in 50 files (25 changed, 25 new), of a repository of 2,000 files.

    cargo build --release --features custom-protocol --bin codewright
    cargo build --release -p codewright-cli
    python3 scripts/bench-changes.py [TARGET_DIR]    # needs Xvfb and tauri-driver (scripts/setup --test)
"""
import importlib.util, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_task_window", os.path.join(here, "bench-task-window.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)  # its helpers: the app under Xvfb, a WebDriver session, the CLI

RUNS = int(os.environ.get("BENCH_RUNS", 7))
GIT = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
           GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")


def main():
    for exe in (bench.APP, bench.CLI):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    with tempfile.TemporaryDirectory(prefix="cw-bench-changes-") as work:
        repo, home = os.path.join(work, "repo"), os.path.join(work, "data")
        for i in range(2000):
            folder = os.path.join(repo, f"pkg{i // 40:03d}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"mod{i % 40:02d}.py"), "w") as f:
                f.write("".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(10)))
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "files"]):
            subprocess.run(["git", "-C", repo, *args], env=GIT, check=True)
        bench.cli(home, "projects", "add", repo)
        # A main model, so the main window lists tasks rather than its first-run set-up (never
        # asked: nothing is sent here).
        bench.cli(home, "providers", "add", "bench", "--protocol", "openai", "--base-url",
                  "http://127.0.0.1:9/v1", "--api-key-env", "CODEWRIGHT_BENCH_KEY")
        bench.cli(home, "models", "add", "bench@bench", "--context", "200000")
        bench.cli(home, "models", "role", "main", "bench@bench")
        added = bench.cli(home, "tasks", "add", "--project", "1", "--worktree", "Review a large change")
        task, tree = added["id"], added["worktree"]["path"]
        for n in range(25):
            with open(os.path.join(tree, f"pkg{n:03d}", "mod00.py"), "a") as f:
                f.write("".join(f"    y{k} = {k}  # changed\n" for k in range(100)))
            with open(os.path.join(tree, f"pkg{n:03d}", "new.py"), "w") as f:
                f.write("".join(f"z{k} = {k}  # new\n" for k in range(100)))
        display = f":{bench.free_port() % 400 + 200}"
        with bench.app(home, display) as port:
            s = bench.Session(port)
            s.wait("return document.body.dataset.ready === 'true'")
            s.wait_spare()
            s.open_task(task)
            read, painted, coloured, longest, colouring = [], [], [], [], []
            for _ in range(RUNS):
                s.click("#changes-open")
                s.wait("return performance.getEntriesByName('changes-painted').length")
                opened, got, shown = s.js("const t = (n) => performance.getEntriesByName(n)[0].startTime; "
                                          "return [t('changes-open'), t('changes-read'), t('changes-painted')]")
                hunks = s.js("return document.querySelectorAll('#changes-dialog .change-hunk').length")
                if hunks != 50:
                    sys.exit(f"{hunks} hunks shown, not 50")
                read.append(got - opened)
                painted.append(shown - opened)
                # Then coloured: every hunk drawn at the open, in its language's colours.
                s.wait("const drawn = document.querySelectorAll('#changes-dialog .diff-scroll'); "
                       "return drawn.length > 0 && [...drawn].every((d) => 'coloured' in d.dataset)")
                coloured.append(s.js("const m = performance.getEntriesByName('diff-coloured'); "
                                     "return m[m.length - 1].startTime - performance.getEntriesByName('changes-open')[0].startTime"))
                spans = s.js("const m = performance.getEntriesByName('colour-lines').map((e) => e.duration); "
                             "performance.clearMeasures('colour-lines'); return [Math.max(0, ...m), m.reduce((a, b) => a + b, 0)]")
                longest.append(spans[0])
                colouring.append(spans[1])
                if len(read) == RUNS:
                    # Every line is there to read: to the end at once, its lines drawn.
                    to_end = bench.wd(port, "POST", f"/session/{s.id}/execute/async", {"args": [], "script": """const done = arguments[arguments.length - 1];
                        const list = document.getElementById('changes-files');
                        const t0 = performance.now();
                        list.scrollTop = list.scrollHeight;
                        const check = () => {
                          const last = [...list.querySelectorAll('.change-hunk')].pop();
                          if (last.querySelector('tr[data-line]')) requestAnimationFrame(() => done(performance.now() - t0));
                          else requestAnimationFrame(check);
                        };
                        check();"""})
                s.click("#changes-close")
                time.sleep(0.3)
            print(f"Changes view, 5,000 lines in 50 files, {RUNS} opens: change read p50 {statistics.median(read):.0f} ms; "
                  f"drawn and painted p50 {statistics.median(painted):.0f} ms (max {max(painted):.0f}); "
                  f"coloured p50 {statistics.median(coloured):.0f} ms (max {max(coloured):.0f}; "
                  f"highlighting {statistics.median(colouring):.0f} ms in all, its longest step {statistics.median(longest):.1f} ms, p50); "
                  f"scrolled to the end → its lines drawn {to_end:.0f} ms")
            bench.wd(port, "DELETE", f"/session/{s.id}")


main()
