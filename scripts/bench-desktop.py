#!/usr/bin/env python3
"""Desktop benchmark: launch → first painted sidebar, and idle memory (PSS of the app and its
WebKit processes), for Codewright and for the floor (an empty Tauri page built the same way),
alternating in one run so the ratios are fair.

    cargo build --release --features custom-protocol --bin codewright --example floor
    cargo build --release -p codewright-cli
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

def measure(port, exe):
    session = wd(port, "POST", "/session", {"capabilities": {"alwaysMatch": {"tauri:options": {"application": exe}}}})
    sid = session["sessionId"]
    try:
        script = ("const m = performance.getEntriesByName('sidebar-painted')[0];"
                  "return m ? performance.timeOrigin + m.startTime : null")
        deadline = time.time() + 30
        painted = None
        while painted is None and time.time() < deadline:
            painted = wd(port, "POST", f"/session/{sid}/execute/sync", {"script": script, "args": []})
            if painted is None:
                time.sleep(0.05)
        pid = pids_of(exe)[0]
        launch = painted - start_ms(pid)
        time.sleep(IDLE_S)
        procs = tree(pid)
        return launch, sum(pss_kib(p) for p in procs) / 1024, len(procs)
    finally:
        wd(port, "DELETE", f"/session/{sid}")
        time.sleep(0.5)

def main():
    for exe in [*APPS.values(), CLI]:
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
    display = ":77"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"], stderr=subprocess.DEVNULL)
    time.sleep(1)
    port = free_port()
    env = dict(os.environ, DISPLAY=display, CODEWRIGHT_HOME=home)
    driver = subprocess.Popen(["tauri-driver", "--port", str(port), "--native-port", str(free_port())],
                              env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            try:
                wd(port, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        results = {name: [] for name in APPS}
        for _ in range(RUNS):
            for name, exe in APPS.items():
                results[name].append(measure(port, exe))
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
    finally:
        os.killpg(driver.pid, signal.SIGTERM)
        driver.wait()
        xvfb.terminate()
        shutil.rmtree(work, ignore_errors=True)

main()
