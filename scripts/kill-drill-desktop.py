#!/usr/bin/env python3
"""The desktop kill drill (RELIABILITY.md): the app is killed with SIGKILL at random points while a
task window works (streaming, an approval waiting, a file being written, a command running),
then relaunched, POINTS times (default 100) in one task. A scripted OpenAI-compatible provider in
this script answers each prompt with streamed text, a write_file of a 400-line file (every line
names one version) and a command, asking approval for both (the task is in normal mode); at a
random moment an open approval is approved with Enter. After every kill, with the app dead:

  - PRAGMA integrity_check is ok;
  - every prompt typed and sent is in the task, or kept in its queue for the next run (0 lost
    user messages);
  - the file on disk is absent or whole (all its lines name one version).

At the end the app is started once more: the task no longer shows as running, a last prompt runs
to the end, and every tool call in the task has a result.

    cargo build -p codewright-cli && cargo build --bin codewright    # or a release build
    python3 scripts/kill-drill-desktop.py [TARGET_DIR/debug]          # needs Xvfb and tauri-driver

POINTS (default 100) and SEED (default: the time) make a run shorter or repeatable.
"""
import importlib.util, json, os, random, signal, sqlite3, subprocess, sys, tempfile, threading, time
import http.server

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench", os.path.join(here, "bench-task-window.py"))
bench = importlib.util.module_from_spec(spec)
args = sys.argv[1:]
sys.argv = sys.argv[:1]  # the bench reads its target from argv; ours is set below
spec.loader.exec_module(bench)

bins = args[0] if args else os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "debug")
bench.APP = os.path.realpath(os.path.join(bins, "codewright"))
bench.CLI = os.path.join(bins, "codewright-cli")
POINTS = int(os.environ.get("POINTS", 100))
SEED = int(os.environ.get("SEED", time.time()))
random.seed(SEED)


def drill_file(version):
    return "".join(f"{version} line {i}\n" for i in range(1, 401))


class Provider(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def chunk(self, delta, finish=None):
        body = {"id": "d", "object": "chat.completion.chunk", "model": "drill",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
        self.wfile.flush()

    def do_POST(self):
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        last = body["messages"][-1]
        prompt = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
        prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
        version = prompt.split()[-1] if prompt.startswith("drill") else "x"
        # What the newest answer called: its result is the newest message.
        called = next((c["function"]["name"] for m in reversed(body["messages"]) if m["role"] == "assistant"
                       for c in (m.get("tool_calls") or [])), None)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.chunk({"role": "assistant", "content": ""})
        try:
            if last["role"] == "user":
                for word in f"Writing version {version} of the drill file, then running a command.".split():
                    self.chunk({"content": word + " "})
                    time.sleep(0.04)
                call = {"index": 0, "id": f"w{version}{time.time_ns()}", "type": "function",
                        "function": {"name": "write_file", "arguments": json.dumps({"path": "drill.txt", "content": drill_file(version)})}}
                self.chunk({"tool_calls": [call]})
                self.chunk({}, "tool_calls")
            elif last["role"] == "tool" and called == "write_file":
                call = {"index": 0, "id": f"b{version}{time.time_ns()}", "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": "sleep 0.6; echo command done"})}}
                self.chunk({"tool_calls": [call]})
                self.chunk({}, "tool_calls")
            else:
                self.chunk({"content": f"Finished version {version}."})
                self.chunk({}, "stop")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the app was killed mid-answer
        self.close_connection = True


def answer_open_dialog(s):
    """Approves the approval asked in the window, if one is; returns whether one was."""
    if not s.js("return !!document.querySelector('dialog[open]')"):
        return False
    s.type("dialog[open] button.primary:not([hidden])", "\ue007")
    time.sleep(0.2)
    return True


def send(s, prompt):
    """Sends `prompt` the way a person does: an approval asked again after the relaunch (a modal
    dialog: the composer takes no keys meanwhile) is answered first, the text is typed and seen in
    the composer, then Enter sends it and the composer lets go of it. Returns the approvals given."""
    approved = 0
    composer = "document.querySelector('#composer-input')"
    deadline = time.time() + 60
    while time.time() < deadline:
        if answer_open_dialog(s):
            approved += 1
            continue
        if s.js(f"return {composer}.value") != prompt:
            el = bench.wd(s.port, "POST", f"/session/{s.id}/element", {"using": "css selector", "value": "#composer-input"})
            bench.wd(s.port, "POST", f"/session/{s.id}/element/{next(iter(el.values()))}/clear", {})
            s.type("#composer-input", prompt)
            continue
        s.type("#composer-input", "\ue007")
        # Sent (the composer let go of it), or a dialog opened first and took the key.
        s.wait(f"return {composer}.value === '' || !!document.querySelector('dialog[open]')")
        if s.js(f"return {composer}.value") == "":
            return approved
    seen = s.js(f"return [{composer}.value, {composer}.disabled, document.querySelector('#composer-error')?.textContent, document.body.innerText.slice(-600)]")
    sys.exit(f"could not send {prompt!r}: the composer did not take it; it holds {seen}")


def kill_app():
    pid = bench.app_pid()
    os.kill(pid, signal.SIGKILL)
    while True:
        try:
            os.kill(pid, 0)
            time.sleep(0.02)
        except ProcessLookupError:
            return


def check(db_path, folder, sent):
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity_check failed"
        texts = [json.loads(p) for (p,) in db.execute("SELECT parts FROM messages WHERE role = 'user'")]
        # A message taken while a run went on and not delivered yet is kept in the queue.
        texts += [json.loads(m)["parts"] for (m,) in db.execute("SELECT message FROM queued_messages")]
        stored = {part.get("text") for parts in texts for part in parts if part.get("type") == "text"}
        lost = [p for p in sent if p not in stored]
        assert not lost, f"user messages lost: {lost}"
        states = dict(db.execute("SELECT state, count(*) FROM calls GROUP BY state").fetchall())
        streaming = db.execute("SELECT count(*) FROM messages WHERE complete = 0").fetchone()[0]
    finally:
        db.close()
    path = os.path.join(folder, "drill.txt")
    if os.path.exists(path):
        content = open(path).read()
        version = content.split(" ")[0]
        assert content == drill_file(version), "drill.txt is half written"
    return states, streaming


def calls_without_results(db_path):
    db = sqlite3.connect(db_path)
    calls, results = set(), set()
    for role, parts in db.execute("SELECT role, parts FROM messages ORDER BY seq"):
        for part in json.loads(parts):
            if part.get("type") == "tool_call":
                calls.add(part["id"])
            if part.get("type") == "tool_result":
                results.add(part["call_id"])
    db.close()
    return calls - results


def main():
    for exe in (bench.APP, bench.CLI):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing; build it first (see the top of this script)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="cw-kill-drill-")
    home = os.path.join(work, "data")
    folder = os.path.join(work, "project")
    os.makedirs(folder)
    project = bench.cli(home, "projects", "add", folder)["id"]
    bench.cli(home, "providers", "add", "drill", "--protocol", "openai", "--base-url",
              f"http://127.0.0.1:{server.server_address[1]}/v1", "--api-key-env", "CODEWRIGHT_BENCH_KEY")
    bench.cli(home, "models", "add", "drill@drill", "--context", "200000")
    bench.cli(home, "models", "role", "main", "drill@drill")
    task = bench.cli(home, "tasks", "add", "--project", str(project), "Kill drill")["id"]
    db_path = os.path.join(home, "codewright.db")
    sent, reached, approved = [], {}, 0
    print(f"kill drill: {POINTS} points, SEED={SEED}, data in {work}", flush=True)
    started = time.time()
    for point in range(POINTS):
        with bench.app(home, ":79") as port:
            s = bench.Session(port)
            s.open_task(task)
            prompt = f"drill {point}"
            approved += send(s, prompt)
            sent.append(prompt)
            time.sleep(random.uniform(0, 2.0))
            if random.random() < 0.6 and s.js("return !!document.querySelector('dialog[open]')"):
                s.type("dialog[open] button.primary:not([hidden])", "\ue007")
                approved += 1
                time.sleep(random.uniform(0, 1.2))
            kill_app()
        states, streaming = check(db_path, folder, sent)
        where = ("streaming" if streaming else "approval waiting" if states.get("asking")
                 else "tool running" if states.get("running") else "between steps")
        reached[where] = reached.get(where, 0) + 1
        if (point + 1) % 10 == 0:
            print(f"  {point + 1} kills, {time.time() - started:.0f} s: {reached}", flush=True)

    # Relaunched once more: not shown as running, a last prompt runs to the end, every call has
    # a result.
    with bench.app(home, ":79") as port:
        s = bench.Session(port)
        s.open_task(task)
        time.sleep(3)
        status = bench.cli(home, "tasks", "show", str(task))["task"]["status"]
        assert status != "running", f"the task still shows as running after the relaunch: {status}"
        send(s, "drill final")
        sent.append("drill final")
        # Approve every edit and command it asks for (messages kept from killed runs are
        # answered too, each with its own), until the run ends.
        deadline = time.time() + 180
        while not s.js("return document.getElementById('composer-stop').hidden && !document.querySelector('dialog[open]')"):
            if time.time() > deadline:
                sys.exit("the last run did not end within 3 minutes")
            if not answer_open_dialog(s):
                time.sleep(0.1)
        time.sleep(1)
    check(db_path, folder, sent)
    missing = calls_without_results(db_path)
    assert not missing, f"calls without a result: {missing}"
    assert open(os.path.join(folder, "drill.txt")).read() == drill_file("final")
    print(f"kill drill passed: {POINTS} kills in {time.time() - started:.0f} s (SEED={SEED}); "
          f"killed while {reached}; Enter pressed {approved} times on an approval before a kill; "
          f"0 lost messages, 0 calls without a result, the file always whole, integrity ok")


if __name__ == "__main__":
    main()
