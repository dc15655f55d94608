#!/usr/bin/env python3
"""Task window benchmark, on the release app under Xvfb (a scripted OpenAI-compatible provider
in this script stands in for the model):

  1. a model's first delta → painted in the window (p50 / p99 over 40 prompts): the provider
     notes the wall clock when it writes the first delta; the page notes it in the frame that
     shows it (a MutationObserver, then requestAnimationFrame);
  2. the longest gap between frames while 60 s of Markdown with code stream at ~1,000 tokens/s,
     next to the same page idle for 10 s (the floor of this display);
  3. opening a task of 5,000 messages → its newest messages painted (the click on its Open button
     in the main window → the `conversation-painted` mark in its window), next to a task of 10
     messages, each in the spare window the app keeps ready, and a task of 10 messages opened
     right after another, before the next spare is ready (a new web process: built and started);
  4. idle CPU of the app and its WebKit processes with 3 task windows open, over 30 s, with the
     front window's composer focused (as a person leaves it) and with no field focused;
  5. memory (PSS) of each extra open task window, and of the spare one;
  6. another process's write to the store (a task renamed, as `codewright-cli` would) → its
     event in that task's open window.

    cargo build --release --features custom-protocol --bin codewright
    cargo build --release -p codewright-cli
    python3 scripts/bench-task-window.py [TARGET_DIR]    # needs Xvfb and tauri-driver (scripts/setup --test)

BENCH_PROMPTS and BENCH_STREAM_S (default 40 and 60) shorten parts 1 and 2 while iterating;
BENCH_FIRST_DELAY_MS (default 0) makes the scripted model think before its first delta.
"""
import contextlib, http.client, http.server, json, os, socket, sqlite3, statistics, subprocess, sys, tempfile, threading, time

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
APP = os.path.realpath(os.path.join(target, "release", "codewright"))
CLI = os.path.join(target, "release", "codewright-cli")
PROMPTS = int(os.environ.get("BENCH_PROMPTS", 40))
STREAM_S = int(os.environ.get("BENCH_STREAM_S", 60))
IDLE_CPU_S = 30
RENAMES = 20
# How long the scripted model thinks before its first delta (a real one takes 0.3–2 s): 0 by
# default, the hardest case, where the delta arrives while the window is still showing the message
# just sent.
FIRST_DELAY_S = float(os.environ.get("BENCH_FIRST_DELAY_MS", 0)) / 1000

# ---- the scripted provider ----------------------------------------------------------------

first_delta = {}  # marker → wall-clock ms when its first delta was written
MARKDOWN = ("Here is **the change** and why it works, with `inline code` and a list:\n\n"
            "- one item that explains a step\n- another item with *emphasis*\n\n"
            "```rust\nfn main() {\n    let total: u64 = (1..=10).sum();\n    println!(\"{total}\");\n}\n```\n\n")

class Provider(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def chunk(self, delta, finish=None):
        body = {"id": "b", "object": "chat.completion.chunk", "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
        self.wfile.flush()

    def do_POST(self):
        if not self.path.endswith("/chat/completions"):  # the app asking a local server's window
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = body["messages"][-1]["content"]
        prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.chunk({"role": "assistant", "content": ""})
        if prompt.startswith("stream"):
            # ~1,000 tokens/s (about 4 characters a token): 100 characters every 25 ms.
            # (Each block numbered: a reply that repeats itself byte for byte is stopped by the
            # agent as a model's loop.)
            text = "".join(MARKDOWN.replace("the change", f"change {i}") for i in range(2000))
            sent, start = 0, time.time()
            while time.time() - start < STREAM_S:
                self.chunk({"content": text[sent:sent + 100]})
                sent += 100
                time.sleep(0.025)
        else:
            marker = prompt.split()[-1]
            time.sleep(FIRST_DELAY_S)
            first_delta[marker] = time.time() * 1000
            self.chunk({"content": f"Answer {marker} "})
            self.chunk({"content": "and the rest of it."})
        self.chunk({}, "stop")
        self.wfile.write(b'data: {"id":"b","object":"chat.completion.chunk","choices":[],'
                         b'"usage":{"prompt_tokens":100,"completion_tokens":10}}\n\ndata: [DONE]\n\n')
        self.wfile.flush()
        self.close_connection = True

# ---- WebDriver and processes ----------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def wd(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read() or b"{}")
    conn.close()
    return reply.get("value")

class Session:
    def __init__(self, port):
        self.port = port
        self.id = wd(port, "POST", "/session", {"capabilities": {"alwaysMatch": {"tauri:options": {"application": APP}}}})["sessionId"]
        self.main = wd(port, "GET", f"/session/{self.id}/window")

    def js(self, script, *args):
        return wd(self.port, "POST", f"/session/{self.id}/execute/sync", {"script": script, "args": list(args)})

    def wait(self, script, timeout=60, every=0.02):
        """Runs `script` in the current window every `every` seconds until it returns something."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.js(script)
            if value:
                return value
            time.sleep(every)
        sys.exit(f"timed out waiting for: {script}")

    def wait_in_page(self, expression, timeout=60):
        """Waits until `expression` is true in the current window, checked by the page itself
        (every 50 ms, a property read): no WebDriver script runs in the page meanwhile, so waiting
        does not delay what is measured (a script run over WebDriver costs the page's main thread
        a few milliseconds, and asking every 20 ms charged the first delta for it)."""
        wd(self.port, "POST", f"/session/{self.id}/timeouts", {"script": int(timeout * 1000)})
        return wd(self.port, "POST", f"/session/{self.id}/execute/async", {"script": f"""
            const done = arguments[arguments.length - 1];
            const check = () => {{ let v; try {{ v = ({expression}); }} catch (e) {{}} if (v) {{ clearInterval(t); done(v); }} }};
            const t = setInterval(check, 50);""", "args": []})

    def handles(self):
        return wd(self.port, "GET", f"/session/{self.id}/window/handles")

    def window_of(self, task):
        """The window showing `task`, if one does (visits each window to ask)."""
        for handle in self.handles():
            try:
                self.switch(handle)
                if wd(self.port, "POST", f"/session/{self.id}/execute/sync", {
                        "script": "return new URLSearchParams(location.search).get('id')", "args": []}) == str(task):
                    return handle
            except Exception:
                pass  # a window closing or still starting
        return None

    def wait_spare(self, timeout=30):
        """Waits until the app's spare task window is ready for a task."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for handle in self.handles():
                try:
                    self.switch(handle)
                    if self.js("return document.body?.dataset.spare ?? null") == "ready":
                        self.switch(self.main)
                        return
                except Exception:
                    pass  # a window closing or still starting
            time.sleep(0.1)
        sys.exit("no spare task window was made ready")

    def wait_gone(self, handle, timeout=30):
        deadline = time.time() + timeout
        while handle in self.handles():
            if time.time() > deadline:
                sys.exit("the window did not close")
            time.sleep(0.05)

    def click(self, css):
        el = wd(self.port, "POST", f"/session/{self.id}/element", {"using": "css selector", "value": css})
        wd(self.port, "POST", f"/session/{self.id}/element/{next(iter(el.values()))}/click", {})

    def switch(self, handle):
        wd(self.port, "POST", f"/session/{self.id}/window", {"handle": handle})

    def type(self, css, text):
        el = wd(self.port, "POST", f"/session/{self.id}/element", {"using": "css selector", "value": css})
        ref = next(iter(el.values()))
        wd(self.port, "POST", f"/session/{self.id}/element/{ref}/value", {"text": text})

    def open_task(self, task):
        """Opens a task's window from the main window and switches to it (a spare window already
        open may be the one that shows it)."""
        self.switch(self.main)
        self.wait(f"return document.querySelector('.task[data-id=\"{task}\"] .task-open') !== null")
        el = wd(self.port, "POST", f"/session/{self.id}/element",
                {"using": "css selector", "value": f'.task[data-id="{task}"] .task-open'})
        wd(self.port, "POST", f"/session/{self.id}/element/{next(iter(el.values()))}/click", {})
        deadline = time.time() + 30
        while not (shown := self.window_of(task)):
            if time.time() > deadline:
                sys.exit("the task window did not open")
            time.sleep(0.02)
        self.switch(shown)
        self.wait("return document.body.dataset.ready === 'true'")

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

def app_pid():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == APP:
                return int(pid)
        except OSError:
            pass
    sys.exit("the app is not running")

def pss_mib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total / 1024

def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total

@contextlib.contextmanager
def app(home, display):
    """Xvfb on `display` and tauri-driver for the app on `home`; yields the driver's port."""
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset"], stderr=subprocess.DEVNULL)
    time.sleep(1)
    port = free_port()
    env = dict(os.environ, DISPLAY=display, CODEWRIGHT_HOME=home, CODEWRIGHT_BENCH_KEY="bench")
    driver = subprocess.Popen(["tauri-driver", "--port", str(port), "--native-port", str(free_port())],
                              env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            try:
                wd(port, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        os.killpg(driver.pid, 15)
        driver.wait()
        xvfb.terminate()
        xvfb.wait()

# ---- set-up -----------------------------------------------------------------------------------

def cli(home, *args):
    out = subprocess.run([CLI, "--home", home, "--json", *args], check=True, capture_output=True)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None

def fill(home, task, count):
    """Writes `count` messages (user and assistant in turn) straight into the store."""
    db = sqlite3.connect(os.path.join(home, "codewright.db"))
    now = int(time.time() * 1000)
    rows = []
    for seq in range(1, count + 1):
        user = seq % 2 == 1
        text = f"Question {seq}: why does the build fail?" if user else MARKDOWN
        parts = json.dumps([{"type": "text", "text": text}])
        rows.append((task, seq, "user" if user else "assistant", parts, now, now))
    db.executemany("INSERT INTO messages (task_id, seq, role, parts, complete, created_at, updated_at) "
                   "VALUES (?, ?, ?, ?, 1, ?, ?)", rows)
    db.commit()
    db.close()

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

def main():
    for exe in (APP, CLI):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="cw-bench-task-")
    home = os.path.join(work, "data")
    folder = os.path.join(work, "project")
    os.makedirs(folder)
    project = cli(home, "projects", "add", folder)["id"]
    cli(home, "providers", "add", "bench", "--protocol", "openai", "--base-url",
        f"http://127.0.0.1:{server.server_address[1]}/v1", "--api-key-env", "CODEWRIGHT_BENCH_KEY")
    cli(home, "models", "add", "bench@bench", "--context", "200000")
    cli(home, "models", "role", "main", "bench@bench")
    tasks = [cli(home, "tasks", "add", "--project", str(project), f"Task {i}")["id"] for i in range(6)]
    fill(home, tasks[3], 5000)
    fill(home, tasks[4], 10)
    fill(home, tasks[5], 10)

    with app(home, ":78") as port:
        s = Session(port)
        s.wait("return document.body.dataset.ready === 'true'")
        pid = app_pid()
        s.wait_spare()
        time.sleep(2)
        procs = tree(pid)
        main_only = pss_mib(procs)
        # The spare's web process is the one started last (the main window's came first).
        web = [p for p in procs if open(f"/proc/{p}/comm").read().startswith("WebKitWebProces")]
        spare_mib = pss_mib([max(web, key=lambda p: int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[19]))])

        # 1. First delta → painted.
        s.open_task(tasks[0])
        s.js("""window.__painted = {};
                window.__observer = new MutationObserver(() => {
                  const all = document.querySelectorAll('.message.assistant');
                  for (const m of [...all].slice(-1)) {  // only the newest answer's text is read
                    const k = (m.textContent.match(/Answer (k\\d+)/) || [])[1];
                    if (k && !(k in window.__painted)) {
                      window.__painted[k] = null;
                      window.__seen = window.__seen || {};
                      window.__seen[k] = performance.timeOrigin + performance.now();
                      requestAnimationFrame(() => { window.__painted[k] = performance.timeOrigin + performance.now(); });
                    }
                  }
                }).observe(document.getElementById('messages'), {childList: true, subtree: true, characterData: true});
                window.__arrived = {};
                window.__TAURI__.event.listen('agent', (e) => {
                  const k = e.payload.type === 'textDelta' && (e.payload.text.match(/Answer (k\\d+)/) || [])[1];
                  if (k && !(k in window.__arrived)) window.__arrived[k] = performance.timeOrigin + performance.now();
                });""")
        delays, arrivals, in_dom = [], [], []
        for i in range(PROMPTS):
            marker = f"k{i}"
            s.type("#composer-input", f"go {marker}\ue007")
            painted = s.wait_in_page(f"window.__painted['{marker}']")
            s.wait_in_page("document.getElementById('composer-stop').hidden")
            delays.append(painted - first_delta[marker])
            arrivals.append(s.js(f"return window.__arrived['{marker}']") - first_delta[marker])
            in_dom.append(s.js(f"return window.__seen['{marker}']") - first_delta[marker])

        # 2. Frame gaps: idle, then while streaming. The observer of part 1 reads every answer's
        # text at each change: it would cost the page more with every character streamed.
        s.js("window.__observer.disconnect()")
        # Each measure's own loop of frames: the loop of the one before may still have a frame
        # due when the next starts, and two loops would count every frame twice.
        gaps_js = """const gen = (window.__gen || 0) + 1; window.__gen = gen;
                     window.__gaps = []; let last = performance.now(); window.__frames = true;
                     const tick = (t) => { if (window.__gen !== gen) return; window.__gaps.push(t - last); last = t; if (window.__frames) requestAnimationFrame(tick); };
                     requestAnimationFrame(tick);"""
        s.js(gaps_js)
        time.sleep(10)
        idle_gaps = s.js("window.__frames = false; return window.__gaps")
        s.js(gaps_js)
        s.type("#composer-input", "stream it\ue007")
        s.wait("return !document.getElementById('composer-stop').hidden", 30)
        # Asked twice a second: each question is a script run in the streaming page, and 50 a
        # second made the page show the 60 s stream over ~120 s in some runs.
        s.wait("return document.getElementById('composer-stop').hidden", STREAM_S + 60, every=0.5)
        stream_gaps = s.js("window.__frames = false; return window.__gaps")
        # What was streamed, as stored (the window holds only the part near its view).
        with sqlite3.connect(os.path.join(home, "codewright.db")) as db:
            parts = db.execute("SELECT parts FROM messages WHERE task_id = ? AND role = 'assistant' ORDER BY seq DESC LIMIT 1",
                               (tasks[0],)).fetchone()[0]
        streamed = sum(len(p.get("text", "")) for p in json.loads(parts) if p.get("type") == "text")

        # 3. Open a long and a short task, each in a ready spare window; and another short one a
        #    moment after the short one, before the next spare can be made (1 s after an open),
        #    so a window is built and started for it (closed again after).
        opened = {}
        s.switch(s.main)
        s.js("window.__clicked = {}; document.addEventListener('click', (e) => { "
             "const row = e.target.closest('.task'); if (row) window.__clicked[row.dataset.id] = performance.timeOrigin + e.timeStamp; }, true)")
        def painted_in(task):
            """When `task`'s window painted its newest messages, and whether it was the spare."""
            deadline = time.time() + 30
            while not (handle := s.window_of(task)):
                if time.time() > deadline:
                    sys.exit(f"task {task}'s window did not open")
                time.sleep(0.02)
            s.switch(handle)
            s.wait("return performance.getEntriesByName('conversation-painted').length")
            painted, adopted = s.js("const t = (n) => performance.getEntriesByName(n)[0]; "
                                    "return [performance.timeOrigin + t('conversation-painted').startTime, Boolean(t('adopted'))]")
            return handle, painted, adopted
        for names in ((("5,000 messages", tasks[3], True),),
                      (("10 messages", tasks[4], True), ("10 messages, no spare ready", tasks[5], False))):
            s.wait_spare()
            s.switch(s.main)
            for _, task, _ in names:
                s.click(f'.task[data-id="{task}"] .task-open')
            for name, task, spare in names:
                handle, painted, adopted = painted_in(task)
                if adopted != spare:
                    sys.exit(f"opening {name}: expected {'a' if spare else 'no'} spare window")
                s.switch(s.main)
                opened[name] = painted - s.js(f"return window.__clicked['{task}']")
                if spare:
                    previous, front = handle, task
                else:
                    s.switch(handle)
                    s.type("#composer-input", "\ue009w\ue000")  # Ctrl+W
                    s.wait_gone(handle)
        # Back in the last window opened in the spare, its composer focused, as a person would be.
        s.switch(previous)
        s.click("#composer-input")
        # 4 and 5. Three task windows are open now (plus the main window); the last one opened is
        # in front, its composer focused (the others' composers let go of focus in the background).
        time.sleep(5)
        procs = tree(pid)
        with_three = pss_mib(procs)
        # Each web process, largest first: the one whose window streamed the long reply leads.
        web_mib = sorted((pss_mib([p]) for p in procs if open(f"/proc/{p}/comm").read().startswith("WebKitWebProces")), reverse=True)
        def idle_cpu():
            """% of one core: all the processes, and each one's (by name)."""
            before = {p: cpu_ticks([p]) for p in procs}
            time.sleep(IDLE_CPU_S)
            share = {p: (cpu_ticks([p]) - before[p]) / os.sysconf("SC_CLK_TCK") / IDLE_CPU_S * 100 for p in procs}
            names = {p: open(f"/proc/{p}/comm").read().strip() if os.path.exists(f"/proc/{p}/comm") else "gone" for p in procs}
            return sum(share.values()), ", ".join(f"{names[p]} {v:.2f}" for p, v in sorted(share.items(), key=lambda x: -x[1]) if v > 0)
        cpu, cpu_by = idle_cpu()
        s.js("document.activeElement.blur()")
        cpu_unfocused, unfocused_by = idle_cpu()
        webkit = len([p for p in procs if open(f"/proc/{p}/comm").read().startswith("WebKitWebProces")])

        # 6. Another process's write → its event in the front window: the window's task renamed
        # by this script straight in the store (as the CLI would write), 0.6–1.2 s apart so that
        # each write finds the app idle and falls anywhere between its reads.
        s.js("""window.__renamed = {};
                window.__TAURI__.event.listen('store', (e) => {
                  const t = e.payload.type === 'taskUpserted' && e.payload.task.title;
                  if (t && t.startsWith('Renamed ') && !(t in window.__renamed)) window.__renamed[t] = performance.timeOrigin + performance.now();
                });""")
        db = sqlite3.connect(os.path.join(home, "codewright.db"))
        feed = []
        for i in range(RENAMES):
            time.sleep(0.6 + (i % 7) / 10)
            title = f"Renamed {i}"
            db.execute("UPDATE tasks SET title = ? WHERE id = ?", (title, front))
            db.commit()
            written = time.time() * 1000
            feed.append(s.wait_in_page(f"window.__renamed['{title}']") - written)
        db.close()

        print(f"first delta → painted, {PROMPTS} prompts: p50 {pct(delays, 50):.1f} ms, p99 {pct(delays, 99):.1f} ms (max {max(delays):.1f})")
        print(f"  of which: → its event in the page p50 {pct(arrivals, 50):.1f} ms; → in the DOM p50 {pct(in_dom, 50):.1f} ms")
        print(f"frame gaps, idle 10 s: longest {max(idle_gaps[1:]):.1f} ms, p99 {pct(idle_gaps[1:], 99):.1f} ms ({len(idle_gaps)} frames)")
        print(f"frame gaps, streaming {STREAM_S} s (~1,000 tokens/s, {streamed:,} characters): longest {max(stream_gaps[1:]):.1f} ms, "
              f"p99 {pct(stream_gaps[1:], 99):.1f} ms ({len(stream_gaps)} frames)")
        # Does a frame cost more as the reply grows? The longest gap and the frame rate per 10 s.
        buckets, elapsed = {}, 0.0
        for gap in stream_gaps[1:]:
            elapsed += gap
            buckets.setdefault(int(elapsed // 10000), []).append(gap)
        print("  per 10 s of the stream: " + ", ".join(
            f"{k * 10}–{k * 10 + 10} s longest {max(v):.0f} ms / {len(v) / 10:.0f} fps" for k, v in sorted(buckets.items())))
        for name, ms in opened.items():
            print(f"open a task of {name}: click → newest painted {ms:.0f} ms")
        print(f"idle CPU, main window + 3 task windows, {IDLE_CPU_S} s: {cpu:.2f} % of one core with the front "
              f"window's composer focused (its caret blinking), {cpu_unfocused:.2f} % with no field focused\n"
              f"  by process: {cpu_by}; unfocused: {unfocused_by}")
        print(f"PSS: main window and the spare {main_only:.0f} MiB (the spare {spare_mib:.0f} MiB); with 3 task windows "
              f"{with_three:.0f} MiB; {(with_three - main_only) / 3:.0f} MiB per task window ({webkit} WebKit web processes: "
              f"{', '.join(f'{m:.0f}' for m in web_mib)} MiB)")
        print(f"another process's write → its event in the window, {RENAMES} writes: p50 {pct(feed, 50):.1f} ms, "
              f"p99 {pct(feed, 99):.1f} ms (max {max(feed):.1f})")
        wd(port, "DELETE", f"/session/{s.id}")

if __name__ == "__main__":
    main()
