#!/usr/bin/env python3
"""Desktop benchmark of the main window: launch → first painted sidebar, and idle memory (PSS of
the app and its WebKit processes), for Codewright with a few projects, Codewright with 1,000
projects / 100,000 tasks / 1,000,000 messages, and the floor (an empty Tauri page built the same
way), alternating in one run so the ratios are fair; then, in the big data, search latency in the
window and idle CPU; and the Files tab on a 100,000-file git repository (first paint, and a file
created on disk → drawn with its mark).

    cargo build --release --features custom-protocol --bin codewright --example floor
    cargo build --release -p codewright-cli
    cargo build --release -p codewright-store --example seed
    python3 scripts/bench-desktop.py [TARGET_DIR]     # needs Xvfb and tauri-driver (scripts/setup --test)

Launch time = the page's `sidebar-painted` performance mark (epoch ms, taken the frame after the
first full render) minus the app process's start time from /proc (10 ms resolution). WebDriver is
only used to start the app and read the mark afterwards, so its own latency is not counted.
"""
import http.client, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
APPS = {
    "Codewright": os.path.realpath(os.path.join(target, "release", "codewright")),
    "floor (empty Tauri page)": os.path.realpath(os.path.join(target, "release", "examples", "floor")),
}
CLI = os.path.join(target, "release", "codewright-cli")
SEED = os.path.join(target, "release", "examples", "seed")
BIG = (1_000, 100_000, 1_000_000)  # projects, tasks, messages
ONLY = os.environ.get("BENCH_ONLY")  # "tree": only the Files tab (no big data to seed)
RUNS, IDLE_S = 7, 3

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def wd(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read() or b"{}")
    conn.close()
    return reply.get("value")

def boot_epoch_ms():
    with open("/proc/stat") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("btime")) * 1000

def start_ms(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return boot_epoch_ms() + int(fields[19]) * 1000 / os.sysconf("SC_CLK_TCK")

def pids_of(exe):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == exe:
                found.append(int(pid))
        except OSError:
            pass
    return found

def tree(pid):
    children = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(p))
        except OSError:
            pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out

def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0

def session(port, exe):
    return wd(port, "POST", "/session", {"capabilities": {"alwaysMatch": {"tauri:options": {"application": exe}}}})["sessionId"]

def js(port, sid, script):
    return wd(port, "POST", f"/session/{sid}/execute/sync", {"script": script, "args": []})

def wait_js(port, sid, script, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = js(port, sid, script)
        if value is not None:
            return value
        time.sleep(0.02)
    raise RuntimeError(f"timed out: {script}")

def find(port, sid, css):
    found = wd(port, "POST", f"/session/{sid}/element", {"using": "css selector", "value": css})
    return next(iter(found.values()))

def keys(port, sid, css, text):
    wd(port, "POST", f"/session/{sid}/element/{find(port, sid, css)}/value", {"text": text})

def click(port, sid, css):
    wd(port, "POST", f"/session/{sid}/element/{find(port, sid, css)}/click", {})

def measure(port, exe):
    sid = session(port, exe)
    try:
        script = ("const m = performance.getEntriesByName('sidebar-painted')[0];"
                  "return m ? performance.timeOrigin + m.startTime : null")
        painted = wait_js(port, sid, script, 30)
        pid = pids_of(exe)[0]
        launch = painted - start_ms(pid)
        time.sleep(IDLE_S)
        procs = tree(pid)
        return launch, sum(pss_kib(p) for p in procs) / 1024, len(procs)
    finally:
        wd(port, "DELETE", f"/session/{sid}")
        time.sleep(0.5)

def cpu_ticks(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total

def search_and_idle(port, exe):
    """Search latency in the window (query sent → results painted), and idle CPU for 30 s."""
    sid = session(port, exe)
    try:
        wait_js(port, sid, "return document.body.dataset.ready === 'true' ? true : null", 60)
        pid = pids_of(exe)[0]
        time.sleep(5)
        procs = tree(pid)
        before, t0 = cpu_ticks(procs), time.time()
        time.sleep(30)
        idle = (cpu_ticks(procs) - before) / os.sysconf("SC_CLK_TCK") / (time.time() - t0) * 100
        keys(port, sid, "#new-task-title", "\ue009f\ue000")  # Ctrl+F
        wait_js(port, sid, "return document.activeElement.id === 'search-input' ? true : null")
        rows = []
        for label, query in [("a rare word", "w15000"), ("two mid-frequency words", "w300 w700"),
                             ("the most common word", "w1"), ("a prefix", "w123*")]:
            times = []
            for _ in range(7):
                js(port, sid, "performance.clearMarks('search-painted'); performance.clearMarks('search-sent'); document.getElementById('search-input').value = ''")
                keys(port, sid, "#search-input", query)
                wait_js(port, sid, "return performance.getEntriesByName('search-painted').length ? true : null")
                times.append(js(port, sid, "return performance.getEntriesByName('search-painted')[0].startTime - performance.getEntriesByName('search-sent').at(-1).startTime"))
            hits = js(port, sid, "return document.querySelectorAll('.search-hit').length")
            rows.append((label, query, statistics.median(times), max(times), hits))
        return rows, idle
    finally:
        wd(port, "DELETE", f"/session/{sid}")
        time.sleep(0.5)

def file_tree(port, exe, repo_project_name, repo):
    """The Files tab on the big repository: first paint, and a new file → drawn with its mark."""
    sid = session(port, exe)
    try:
        wait_js(port, sid, "return document.body.dataset.ready === 'true' ? true : null", 60)
        click(port, sid, f".project[data-id] .project-button[title$='{repo_project_name}']")
        wait_js(port, sid, f"return document.getElementById('project-name').textContent === '{repo_project_name}' ? true : null")
        firsts, refreshes = [], []
        # Each render of the tree is numbered (#tree's data-renders); its painted mark says which.
        painted = ("const m = performance.getEntriesByName('tree-painted').find(m => m.detail === '{n}');"
                   "return m ? performance.timeOrigin + m.startTime : null")
        for i in range(5):
            before = int(js(port, sid, "return document.getElementById('tree').dataset.renders ?? '0'"))
            click(port, sid, "#tab-files")
            shown = wait_js(port, sid, painted.format(n=before + 1))
            asked = js(port, sid, "return performance.timeOrigin + performance.getEntriesByName('tree-asked').at(-1).startTime")
            firsts.append(shown - asked)
            written = time.time() * 1000
            with open(os.path.join(repo, f"new-{i}.txt"), "w") as f:
                f.write("x")
            n = wait_js(port, sid, f"return [...document.querySelectorAll('.tree-item')].some(r => r.dataset.path === 'new-{i}.txt' && r.textContent.includes('U')) ? document.getElementById('tree').dataset.renders : null")
            refreshes.append(wait_js(port, sid, painted.format(n=n)) - written)
            click(port, sid, "#tab-tasks")
            time.sleep(1)  # nothing left to draw before the tab is chosen again
        return firsts, refreshes
    finally:
        wd(port, "DELETE", f"/session/{sid}")
        time.sleep(0.5)

def tree_section(port, exe, repo):
    firsts, refreshes = file_tree(port, exe, "big-repo", repo)
    print("\nFiles tab on a 100,000-file git repository (5 runs):\n")
    print(f"- the tab chosen → top folder drawn with its marks: {', '.join(f'{t:.0f}' for t in firsts)} ms")
    print(f"- a file created on disk → drawn with its mark: {', '.join(f'{t:.0f}' for t in refreshes)} ms (200 ms of each is the settle time)")

def start_driver(home, display):
    port = free_port()
    env = dict(os.environ, DISPLAY=display, CODEWRIGHT_HOME=home)
    driver = subprocess.Popen(["tauri-driver", "--port", str(port), "--native-port", str(free_port())],
                              env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    for _ in range(100):
        try:
            wd(port, "GET", "/status")
            break
        except OSError:
            time.sleep(0.1)
    return port, driver

def big_repository(path, dirs=1_000, files=100):
    os.makedirs(path)
    for d in range(dirs):
        sub = os.path.join(path, f"dir-{d:04}")
        os.makedirs(sub)
        for f in range(files):
            with open(os.path.join(sub, f"file-{f:03}.rs"), "w") as out:
                out.write(f"// {d} {f}\n")
    git = ["git", "-C", path, "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "files"], check=True)

def main():
    for exe in [*APPS.values(), CLI, SEED]:
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    work = tempfile.mkdtemp(prefix="cw-bench-desktop-")
    home = os.path.join(work, "data")
    for i in range(5):  # a realistic sidebar: a few projects with tasks
        folder = os.path.join(work, f"project-{i}")
        os.makedirs(folder)
        out = subprocess.run([CLI, "--home", home, "--json", "projects", "add", folder], check=True, capture_output=True)
        pid = str(json.loads(out.stdout)["id"])
        for t in range(20):
            subprocess.run([CLI, "--home", home, "tasks", "add", "--project", pid, f"Task {t}"], check=True, capture_output=True)
    repo = os.path.join(work, "big-repo")
    t0 = time.time()
    big_repository(repo)
    subprocess.run([CLI, "--home", home, "projects", "add", repo], check=True, capture_output=True)
    print(f"made a 100,000-file repository in {time.time() - t0:.0f} s", file=sys.stderr)
    big = os.path.join(work, "big")
    t0 = time.time()
    subprocess.run([SEED, big, *map(str, (1, 1, 0) if ONLY == "tree" else BIG)], check=True, capture_output=True)
    print(f"seeded {BIG} in {time.time() - t0:.0f} s", file=sys.stderr)
    # A main model, so the windows open on the projects rather than the first-run form.
    for data in (home, big):
        subprocess.run([CLI, "--home", data, "models", "role", "main", "llama3.2@ollama"], check=True, capture_output=True)
    display = ":77"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset"], stderr=subprocess.DEVNULL)
    time.sleep(1)
    small_port, small_driver = start_driver(home, display)
    big_port, big_driver = start_driver(big, display)
    try:
        codewright = APPS["Codewright"]
        runs = {
            "floor (empty Tauri page)": (small_port, APPS["floor (empty Tauri page)"]),
            "Codewright, 6 projects / 100 tasks": (small_port, codewright),
            "Codewright, 1,000 projects / 100,000 tasks / 1,000,000 messages": (big_port, codewright),
        }
        results = {name: [] for name in runs}
        for _ in range(0 if ONLY == "tree" else RUNS):
            for name, (port, exe) in runs.items():
                results[name].append(measure(port, exe))
        if ONLY == "tree":
            return tree_section(small_port, codewright, repo)
        floor = results["floor (empty Tauri page)"]
        f_launch = statistics.median(r[0] for r in floor)
        f_pss = statistics.median(r[1] for r in floor)
        print(f"{RUNS} launches each, alternating; memory after {IDLE_S} s idle\n")
        print("| app | launch → painted (median) | × floor | idle PSS, app + WebKit (median) | × floor | processes |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, rows in results.items():
            launch = statistics.median(r[0] for r in rows)
            pss = statistics.median(r[1] for r in rows)
            print(f"| {name} | {launch:.0f} ms | {launch / f_launch:.2f} | {pss:.0f} MiB | {pss / f_pss:.2f} | {rows[0][2]} |")

        rows, idle = search_and_idle(big_port, codewright)
        print(f"\nIn the window over {BIG[2]:,} messages (query sent → results painted; 7 runs each):\n")
        print("| search | query | median | max | results shown |")
        print("| --- | --- | ---: | ---: | ---: |")
        for label, query, median, worst, hits in rows:
            print(f"| {label} | `{query}` | {median:.0f} ms | {worst:.0f} ms | {hits} |")
        print(f"\nIdle CPU of the main window (app + WebKit, 30 s, nothing changing): {idle:.2f} % of one core")

        tree_section(small_port, codewright, repo)
    finally:
        for driver in (small_driver, big_driver):
            os.killpg(driver.pid, signal.SIGTERM)
            driver.wait()
        xvfb.terminate()
        shutil.rmtree(work, ignore_errors=True)

main()
