#!/usr/bin/env python3
"""The load drill: 10 tasks streaming at once at ~1,000 tokens/s each (Markdown with code) for
LOAD_S seconds (default 300), on the release build, twice:

  1. in the desktop, each task in its own open window (one app, one host);
  2. headless, ten `codewright-cli exec` runs side by side.

It samples memory every 10 s (PSS of the app and its WebKit processes; of the ten CLI processes),
records every frame gap of every window, and at the end compares each stored answer with what
the provider streamed, character for character.

    cargo build --release --features custom-protocol --bin codewright
    cargo build --release -p codewright-cli
    python3 scripts/load-run.py [TARGET_DIR]      # needs Xvfb and tauri-driver (scripts/setup --test)

LOAD_S=30 shortens a run while iterating; LOAD_TASKS (default 10) changes the number of tasks.
"""
import importlib.util, http.server, json, os, sqlite3, subprocess, sys, tempfile, threading, time

spec = importlib.util.spec_from_file_location("bench", os.path.join(os.path.dirname(__file__), "bench-task-window.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

LOAD_S = int(os.environ.get("LOAD_S", 300))
TASKS = int(os.environ.get("LOAD_TASKS", 10))
SAMPLE_S = 10

sent = {}  # marker → the text the provider streamed for it
finished = {}  # marker → whether its stream was written to the end

class Provider(bench.Provider):
    def do_POST(self):
        if not self.path.endswith("/chat/completions"):  # the app asking a local server's window
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = body["messages"][-1]["content"]
        prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
        marker = prompt.split()[-1]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.chunk({"role": "assistant", "content": ""})
        # ~1,000 tokens/s (about 4 characters a token): 100 characters every 25 ms, on a clock so
        # a busy machine does not slow the rate down.
        text, pieces, start = bench.MARKDOWN * 8000, [], time.time()
        step = 0
        while time.time() - start < LOAD_S:
            piece = text[step * 100:(step + 1) * 100]
            self.chunk({"content": piece})
            pieces.append(piece)
            step += 1
            time.sleep(max(0, start + step * 0.025 - time.time()))
        sent[marker] = "".join(pieces)
        self.chunk({}, "stop")
        self.wfile.write(b'data: {"id":"b","object":"chat.completion.chunk","choices":[],'
                         b'"usage":{"prompt_tokens":100,"completion_tokens":10}}\n\ndata: [DONE]\n\n')
        self.wfile.flush()
        finished[marker] = True
        self.close_connection = True

def stored(home, title_or_task):
    """The text of the newest answer of a task (by id, or by its title)."""
    db = sqlite3.connect(os.path.join(home, "codewright.db"))
    try:
        if isinstance(title_or_task, int):
            task = title_or_task
        else:
            task = db.execute("SELECT id FROM tasks WHERE title = ?", (title_or_task,)).fetchone()[0]
        row = db.execute("SELECT parts, complete FROM messages WHERE task_id = ? AND role = 'assistant' "
                         "ORDER BY seq DESC LIMIT 1", (task,)).fetchone()
        parts = json.loads(row[0])
        return "".join(p.get("text", "") for p in parts if p.get("type") == "text"), row[1]
    finally:
        db.close()

def compare(home, keys):
    """How many stored answers differ from what was streamed, and a line per difference."""
    bad = []
    for marker, key in keys.items():
        text, complete = stored(home, key)
        if text != sent.get(marker) or not complete:
            want = sent.get(marker, "")
            at = next((i for i, (a, b) in enumerate(zip(text, want)) if a != b), min(len(text), len(want)))
            bad.append(f"{marker}: stored {len(text):,} characters (complete {complete}), streamed {len(want):,}; first difference at {at:,}")
    return bad

def curve(samples):
    """Memory over the run: the samples, and the growth from the first half after warm-up to the last quarter."""
    values = [v for _, v in samples]
    warm = values[len(values) // 4: len(values) // 2] or values
    late = values[-max(1, len(values) // 4):]
    growth = sum(late) / len(late) - sum(warm) / len(warm)
    return " ".join(f"{v:.0f}" for v in values), growth

def sample_until_done(pids_of, done):
    samples, start = [], time.time()
    while True:
        samples.append((time.time() - start, bench.pss_mib(pids_of())))
        if done() or time.time() - start > LOAD_S * 6:  # a machine that cannot keep up stretches the streams
            break
        time.sleep(SAMPLE_S)
    return samples

def desktop(home, tasks):
    with bench.app(home, ":79") as port:
        s = bench.Session(port)
        s.wait("return document.body.dataset.ready === 'true'")
        pid = bench.app_pid()
        handles = []
        for task in tasks:
            s.open_task(task)
            handles.append(bench.wd(port, "GET", f"/session/{s.id}/window"))
        # The front window's frame gaps (a rAF loop); in every window, how late a 50 ms timer fires
        # (its main thread's responsiveness). A rAF loop in every window would itself make each
        # one paint 60 times a second.
        gaps_js = """window.__gaps = []; let last = performance.now(); window.__frames = true;
                     const tick = (t) => { window.__gaps.push(t - last); last = t; if (window.__frames) requestAnimationFrame(tick); };
                     requestAnimationFrame(tick);"""
        lag_js = """window.__lags = []; let due = performance.now() + 50;
                    window.__lag = setInterval(() => { const now = performance.now(); window.__lags.push(now - due); due = now + 50; }, 50);"""
        for i, handle in enumerate(handles):
            s.switch(handle)
            s.js(lag_js)
            if i == len(handles) - 1:
                s.js(gaps_js)
            s.type("#composer-input", f"load w{i}\ue007")
        keys = {f"w{i}": task for i, task in enumerate(tasks)}
        procs = bench.tree(pid)
        webkit = [p for p in procs if open(f"/proc/{p}/comm").read().startswith("WebKit")]
        cpu_before = (bench.cpu_ticks([pid]), bench.cpu_ticks(webkit), time.time())
        samples = sample_until_done(lambda: bench.tree(pid), lambda: all(m in finished for m in keys))
        cpu = ((bench.cpu_ticks([pid]) - cpu_before[0]) / os.sysconf("SC_CLK_TCK") / (time.time() - cpu_before[2]) * 100,
               (bench.cpu_ticks(webkit) - cpu_before[1]) / os.sysconf("SC_CLK_TCK") / (time.time() - cpu_before[2]) * 100)
        # Let the last writes land, then read the measures and the stored answers.
        lags, focused = [], []
        for handle in handles:
            s.switch(handle)
            focused.append(s.js("return document.hasFocus()"))
            s.wait("return document.getElementById('composer-stop').hidden", LOAD_S * 2)
            lags.append(max(s.js("clearInterval(window.__lag); return window.__lags")))
        front = s.js("window.__frames = false; return window.__gaps")[1:]
        print(f"  windows with the focus at the end: {sum(map(bool, focused))} of {len(focused)}")
        bad = compare(home, keys)
        bench.wd(port, "DELETE", f"/session/{s.id}")
        return samples, front, lags, cpu, bad

def headless(home, folder):
    procs = [subprocess.Popen([bench.CLI, "--home", home, "exec", "--json", "--model", "bench@bench", f"load h{i}"],
                              cwd=folder, env=dict(os.environ, CODEWRIGHT_BENCH_KEY="bench"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for i in range(TASKS)]
    samples = sample_until_done(lambda: [p.pid for p in procs], lambda: all(p.poll() is not None for p in procs))
    codes = [p.wait() for p in procs]
    errors = [p.stderr.read().decode()[-300:] for p in procs if p.returncode != 0]
    bad = compare(home, {f"h{i}": f"load h{i}" for i in range(TASKS)})
    return samples, codes, errors, bad

def main():
    for exe in (bench.APP, bench.CLI):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="cw-load-")
    home = os.path.join(work, "data")
    folder = os.path.join(work, "project")
    os.makedirs(folder)
    project = bench.cli(home, "projects", "add", folder)["id"]
    bench.cli(home, "providers", "add", "bench", "--protocol", "openai", "--base-url",
              f"http://127.0.0.1:{server.server_address[1]}/v1", "--api-key-env", "CODEWRIGHT_BENCH_KEY")
    bench.cli(home, "models", "add", "bench@bench", "--context", "2000000")
    bench.cli(home, "models", "role", "main", "bench@bench")

    print(f"{TASKS} tasks × ~1,000 tokens/s × {LOAD_S} s, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores")
    tasks = [bench.cli(home, "tasks", "add", "--project", str(project), f"Window task {i}")["id"] for i in range(TASKS)]
    samples, front, lags, cpu, bad = desktop(home, tasks)
    mem, growth = curve(samples)
    print(f"desktop, {TASKS} windows open: PSS every {SAMPLE_S} s (MiB): {mem}")
    print(f"  growth from the warm-up to the last quarter: {growth:+.0f} MiB")
    print(f"  the front window's frame gaps: longest {max(front):.0f} ms, p99 {bench.pct(front, 99):.0f} ms, p50 {bench.pct(front, 50):.0f} ms")
    print(f"  each window's longest timer delay (main thread busy): {', '.join(f'{l:.0f}' for l in lags)} ms")
    print(f"  CPU while streaming: app {cpu[0]:.0f} %, WebKit web processes {cpu[1]:.0f} % of one core")
    print(f"  stored answers identical to what was streamed: {TASKS - len(bad)} of {TASKS}" + "".join(f"\n    {b}" for b in bad))

    samples, codes, errors, bad = headless(home, folder)
    mem, growth = curve(samples)
    print(f"headless, {TASKS} exec runs: PSS every {SAMPLE_S} s (MiB, all {TASKS}): {mem}")
    print(f"  growth from the warm-up to the last quarter: {growth:+.0f} MiB; exit codes {sorted(set(codes))}")
    print(f"  stored answers identical to what was streamed: {TASKS - len(bad)} of {TASKS}" + "".join(f"\n    {b}" for b in bad + errors))

if __name__ == "__main__":
    main()
