#!/usr/bin/env python3
"""Codewright beside opencode, Codex and aider with no model at all: each agent is pointed at the
same scripted mock provider, so what is measured is the agent itself (start-up, what it sends,
memory, and the time it spends between a tool call's answer and its next request).

    cargo build --release -p codewright-cli
    python3 scripts/bench-peers.py [--agents codewright,opencode,codex,aider] [--runs 7] [--n 5]
                                   [--cli PATH] [--base-cli PATH] [--timeout 120] [--ctx 16384] [--out results.json] [--keep DIR]

The agents are installed and pointed at a server exactly as scripts/bench-agents.py does it
(imported: its install_peers, task_folder, agent_command and test_env), each run in a fresh copy of
tests/exercism/leap with the same prompt (bench-agents.py's, without its check command: a
scripted "Done." is to end every agent's run). Each agent keeps one home folder for all its runs,
set up by a first run that is not measured: a user's next run is measured, not the first after
installing (Codewright's first run asks the server about its model; later ones read what it said). The mock is a ThreadingHTTPServer on 127.0.0.1 that
answers like llama-server: GET /v1/models (n_ctx_train 32768) and /props (n_ctx 16384, or --ctx), streamed
POST /v1/chat/completions (OpenAI chat SSE, with a usage chunk) and POST /v1/responses (Responses
API SSE: response.created, response.output_item.added/done, response.completed with usage).

Per run and agent (runs interleaved: for each run, each agent in turn, one agent process at a time):
- one-turn run, under `/usr/bin/time -f %M`, every request that carries tools answered "Done.":
  - cold start: ms from spawning the command to the arrival (body read) of the first model request
    (POST .../chat/completions or .../responses) that carries tools; GETs (/v1/models, /props) are
    not model requests. aider sends no tools: its first model request is taken. The first model
    request of any kind is recorded too (opencode's title request has no tools and may come first);
  - the body bytes and the number of tools of that request;
  - peak RSS, two ways. `/usr/bin/time -f %M` (as scripts/bench-cli.py): the largest single
    process of the tree, tools included (ru_maxrss over waited-for descendants is their maximum,
    not their sum: a tool as large as the agent would count). And "own", sampled in /proc every 30 ms: the sum of the VmHWM of the agent's own
    programs' processes (codewright-cli; opencode; Codex's node launcher plus the native codex;
    aider), leaving out tools and helpers (pytest, bash, git, lsb_release); a process and a child
    of the same name count once, as the larger (a child caught between fork and exec shows its
    parent's memory);
  - wall time of the whole run (including GNU time's fork/exec, about a millisecond), and how many
    model requests it made (one each, but opencode's title request).
- loop run (agents with tools): the mock answers N tool calls of the agent's own file-reading
  tool one after another, then "Done.": Codewright `read_file` {"path": "leap.py"}, opencode
  `read` {"filePath": <absolute path>} (parameter names taken from the request's schema), Codex its
  shell tool (0.171.0 offers `exec_command`; `shell`/`shell_command`/`local_shell` are looked for
  too) with {"cmd": "cat leap.py", "workdir": <folder>}, which Codex runs as `bash -lc 'cat leap.py'`
  (Codex has no file-reading tool: its round trip includes a login shell's start). Loop overhead
  per round trip = arrival of tool-carrying request k+1 − end of the mock's response k (the final
  chunk written and flushed), for k = 1..N. A loop run counts only if every request k+1 carries
  the result of call k (its call id and a line of leap.py); the median and p90 are taken over the
  round trips of all counted runs. Tool-less requests in between (titles) are answered "Leap" and
  left out. aider has no tools: n/a. With the server's 16k window Codewright takes a small local
  model's path and sends no tools' schemas: every request of its is its own (none is a title), and
  its loop is driven by calls written as text, `{"name": "bash", "arguments": {"command": "printf
  'round %s' k"}}`, counted when request k+1 carries `round k` (the output, not in the call's own
  text). `--ctx 65536` reports a larger window, where it is offered its tools and reads leap.py
  with `read_file` as above.
Offline (as on the machine this was written on): where an agent fetches something at start-up and has a switch for it,
the switch is used (opencode: OPENCODE_DISABLE_MODELS_FETCH, else it waits ~2 s on models.dev;
aider: LITELLM_LOCAL_MODEL_COST_MAP; aider's own price-list fetch fails at once on DNS).
The mock sets TCP_NODELAY (else its SSE events wait on the client's delayed ACK, 40 ms a response).
Medians over runs are reported with the ratio to Codewright, as a markdown table; --out writes the
runs, the mock's request log and the summary as JSON.
"""
import argparse, gzip, importlib.util, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile
import threading, time, zlib
import http.server

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("bench_agents", os.path.join(HERE, "bench-agents.py"))
ba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ba)

TASK = "leap"
# The real-model prompt without its check command: a scripted "Done." ends every agent's run
# (Codewright runs a check the user named when a small model ends, and sends it back while it fails).
PROMPT = ba.PROMPT.split(" Run the tests")[0]
MARKER = "def leap_year"  # a line of leap.py, to see that a tool's result came back
# This machine has no network: what an agent fetches from the internet at start fails, after a
# timeout, which is not the agent's own start-up. Where the agent has a switch for it, it is used.
OFFLINE = {"opencode": {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"},
           "aider": {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}}
SHELL_TOOLS = ("shell", "exec_command", "shell_command", "local_shell", "bash")


def tool_name(t):
    return (t.get("function") or {}).get("name") or t.get("name") or t.get("type")


def tool_params(t):
    return (t.get("function") or {}).get("parameters") or t.get("parameters") or {}


class Mock:
    """The scripted provider. `start_run` sets who is talking to it and what it answers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ctx = 16384  # the window it reports (--ctx)
        self.start_run(None, None, "oneturn", 0)
        mock = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                # Each SSE event leaves at once: with Nagle on, an event written while the previous one
                # is unacknowledged waits for the client's delayed ACK (40 ms), which is the mock's delay.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def send_json(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path = self.path.split("?")[0]
                mock.note({"t": time.monotonic(), "method": "GET", "path": path})
                if path in ("/v1/models", "/models"):
                    self.send_json(200, {"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "llamacpp",
                                                                     "meta": {"n_ctx_train": max(32768, mock.ctx)}}]})
                elif path == "/props":
                    self.send_json(200, {"default_generation_settings": {"n_ctx": mock.ctx}})
                else:
                    self.send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                arrived = time.monotonic()
                path = self.path.split("?")[0]
                enc = (self.headers.get("Content-Encoding") or "").lower()
                body = raw
                if enc == "gzip":
                    body = gzip.decompress(raw)
                elif enc == "deflate":
                    body = zlib.decompress(raw)
                kind = "chat" if path.endswith("/chat/completions") else "responses" if path.endswith("/responses") else None
                if kind is None:
                    mock.note({"t": arrived, "method": "POST", "path": path, "bytes": len(raw)})
                    return self.send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})
                try:
                    req = json.loads(body)
                except ValueError:
                    req = {}
                tools = req.get("tools") or []
                entry = {"t": arrived, "method": "POST", "path": path, "model": True, "bytes": len(raw),
                         "encoding": enc or None, "tools": len(tools), "stream": req.get("stream"),
                         # Codex groups some tools in a namespace entry: those counted one by one
                         "tools_flat": sum(len(t.get("tools") or []) if t.get("type") == "namespace" else 1 for t in tools),
                         "text": body.decode("utf-8", "replace")}
                events = mock.answer(kind, req, tools, entry)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for ev in events:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    entry["broken"] = True
                entry["end"] = time.monotonic()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def start_run(self, agent, folder, mode, n):
        with self.lock:
            self.agent, self.folder, self.mode, self.n = agent, folder, mode, n
            self.log, self.calls = [], 0

    def note(self, entry):
        with self.lock:
            self.log.append(entry)

    def answer(self, kind, req, tools, entry):
        with self.lock:
            self.log.append(entry)
            if not tools and self.agent != "codewright":
                text, call = ("Done." if self.agent == "aider" else "Leap"), None
            elif not tools:
                # Codewright sends a small local model (this server's 16k window) no tools'
                # schemas: its loop is driven by calls written as text, which it reads as calls.
                # A shell command whose output is not in its own text shows the result came back.
                k = self.calls
                self.calls += 1
                call = None
                text = "Done."
                if self.mode == "loop" and k < self.n:
                    text = json.dumps({"name": "bash", "arguments": {"command": f"printf 'round %s' {k + 1}"}})
                    entry["answer"], entry["call_id"] = "bash", f"round {k + 1}"
            else:
                k = self.calls
                self.calls += 1
                call = self.tool_call(tools, k) if self.mode == "loop" and k < self.n else None
                text = "Done."
            entry.setdefault("answer", call["name"] if call else text)
            entry.setdefault("call_id", call["call_id"] if call else None)
        return chat_events(text, call) if kind == "chat" else responses_events(text, call)

    def tool_call(self, tools, k):
        """The agent's own file-reading call of leap.py, with arguments after the tool's schema."""
        names = {tool_name(t): t for t in tools}
        abs_path = os.path.join(self.folder, "leap.py")
        call_id = f"call_{k + 1}_{int(time.monotonic() * 1e6) % 10**9}"
        if self.agent == "codewright":
            return {"name": "read_file", "args": {"path": "leap.py"}, "call_id": call_id}
        if self.agent == "opencode":
            props = tool_params(names["read"]).get("properties", {})
            key = next((p for p in ("filePath", "file_path", "path") if p in props), "filePath")
            return {"name": "read", "args": {key: abs_path}, "call_id": call_id}
        if self.agent == "codex":
            name = next(n for n in SHELL_TOOLS if n in names)
            t = names[name]
            if t.get("type") == "local_shell":
                return {"name": name, "local_shell": True, "call_id": call_id,
                        "args": {"type": "exec", "command": ["bash", "-lc", "cat leap.py"], "working_directory": self.folder}}
            props = tool_params(t).get("properties", {})
            key = next((p for p in ("command", "cmd") if p in props), "command")
            value = "cat leap.py" if props.get(key, {}).get("type") == "string" else ["bash", "-lc", "cat leap.py"]
            args = {key: value}
            if "workdir" in props:
                args["workdir"] = self.folder
            return {"name": name, "args": args, "call_id": call_id}
        raise RuntimeError(f"no tool call for {self.agent}")


def sse(obj, event=None):
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def chat_events(text, call):
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()), "model": "qwen"}
    if call:
        delta = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": call["call_id"], "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": text}, "stop"
    return [sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            sse({**base, "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}}),
            b"data: [DONE]\n\n"]


def responses_events(text, call):
    rid = f"resp_{int(time.monotonic() * 1e6)}"
    response = {"id": rid, "object": "response", "created_at": int(time.time()), "model": "qwen",
                "status": "in_progress", "output": []}
    if call and call.get("local_shell"):
        item = {"type": "local_shell_call", "id": f"lsh_{call['call_id']}", "call_id": call["call_id"],
                "status": "completed", "action": call["args"]}
    elif call:
        item = {"type": "function_call", "id": f"fc_{call['call_id']}", "call_id": call["call_id"], "name": call["name"],
                "arguments": json.dumps(call["args"]), "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    added = {**item, "status": "in_progress"}
    if item["type"] == "message":
        added["content"] = []
    events = [("response.created", {"response": response}),
              ("response.output_item.added", {"output_index": 0, "item": added})]
    if item["type"] == "message":
        events.append(("response.output_text.delta", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                                      "delta": text}))
    events += [("response.output_item.done", {"output_index": 0, "item": item}),
               ("response.completed", {"response": {**response, "status": "completed", "output": [item], "usage": {
                   "input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                   "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1010}}})]
    return [sse({"type": t, "sequence_number": i, **d}, t) for i, (t, d) in enumerate(events)]


# The agents' own programs (the npm launcher of Codex is node; it starts the native codex). What
# else runs in an agent's session is a tool (pytest, a shell, git), a helper (lsb_release, uname)
# or a child between fork and exec (named as its parent or as the thread that forked it).
AGENT_COMMS = {"codewright-cli", "opencode", ".opencode", "codex", "node", "aider"}


class RssSampler(threading.Thread):
    """Every `every` s, the high-water RSS (VmHWM) of each process in the agent's session (it is
    started in a new one), read in /proc, for the agent's own memory apart from the tools it runs."""

    def __init__(self, sid, every=0.03):
        super().__init__(daemon=True)
        self.sid, self.every, self.stop, self.peaks = sid, every, threading.Event(), {}

    def sample(self):
        for d in os.scandir("/proc"):
            if not d.name.isdigit():
                continue
            try:
                with open(f"/proc/{d.name}/stat", "rb") as f:
                    st = f.read()
                fields = st[st.rindex(b")") + 2:].split()
                if int(fields[3]) != self.sid:
                    continue
                comm = st[st.index(b"(") + 1:st.rindex(b")")].decode(errors="replace")
                with open(f"/proc/{d.name}/status") as f:
                    hwm = next((int(l.split()[1]) for l in f if l.startswith("VmHWM:")), 0)
            except (OSError, ValueError, IndexError):
                continue
            key = (int(d.name), comm)  # a pid that execs is another program
            self.peaks[key] = (int(fields[1]), max(self.peaks.get(key, (0, 0))[1], hwm))

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every)

    def own_kib(self):
        """The sum of the peaks of the agent's own programs' processes, not its tools or helpers.
        A process and a child of the same name count once, as the larger: a child caught between
        fork and exec shows its parent's memory, and a launcher may start its program again."""
        groups = {}
        for key, (ppid, k) in self.peaks.items():
            if key[1] not in AGENT_COMMS:
                continue
            root, seen = key, set()
            while root not in seen and (self.peaks[root][0], root[1]) in self.peaks:
                seen.add(root)
                root = (self.peaks[root][0], root[1])
            groups[root] = max(groups.get(root, 0), k)
        return sum(groups.values())

    def listing(self):
        return sorted(f"{comm} pid={pid} ppid={ppid} {k} KiB" for (pid, comm), (ppid, k) in self.peaks.items())


def run_agent(agent, mode, mock, pybin, args, home):
    folder, stub, test = ba.task_folder(TASK)
    env = ba.test_env(pybin)
    # `codewright-base` is Codewright too, another build of it (--base-cli): a change measured
    # beside the commit before it, in one run.
    real, real_args = agent, args
    if agent == BASE:
        real, real_args = "codewright", argparse.Namespace(**{**vars(args), "cli": args.base_cli})
    cmd, env, home = ba.agent_command(real, folder, stub, test, mock.url, env, real_args, home, PROMPT)
    env = {**env, **OFFLINE.get(real, {})}
    rss_file = os.path.join(home, "time-rss")
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss_file, *cmd]
    mock.start_run(real, folder, mode, args.n)
    out = open(os.path.join(home, "output.log"), "wb")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    sampler = RssSampler(proc.pid)
    sampler.start()
    timed_out = False
    try:
        proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    wall = (time.monotonic() - start) * 1000
    sampler.stop.set()
    sampler.join()
    out.close()
    try:  # anything the agent left running in its group
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    time.sleep(0.05)  # a response still being written is logged
    with mock.lock:
        log = list(mock.log)
    rss = None
    try:
        with open(rss_file) as f:
            rss = int(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        pass
    model = [e for e in log if e.get("model")]
    # (Codewright's requests to this small local model carry no tools: each is its own.)
    tooled = [e for e in model if e["tools"] > 0 or real == "codewright"]
    first_any = model[0] if model else None
    first = tooled[0] if tooled else (first_any if agent == "aider" else None)
    r = {"agent": agent, "mode": mode, "exit": proc.returncode, "timed_out": timed_out, "wall_ms": round(wall, 1),
         "rss_kib": rss, "own_rss_kib": sampler.own_kib(),
         "processes": sampler.listing(), "model_requests": len(model), "tool_requests": len(tooled),
         "first_any": first_any and {"path": first_any["path"], "tools": first_any["tools"],
                                     "ms": round((first_any["t"] - start) * 1000, 1)},
         "cold_ms": first and round((first["t"] - start) * 1000, 1),
         "first_bytes": first and first["bytes"], "first_tools": first and first["tools"],
         "first_tools_flat": first and first["tools_flat"],
         "first_encoding": first and first["encoding"],
         "requests": [{k: (round((v - start) * 1000, 2) if k in ("t", "end") else v) for k, v in e.items() if k != "text"}
                      for e in log]}
    if mode == "loop":
        gaps, ok = [], len(tooled) >= args.n + 1
        for k in range(min(args.n, len(tooled) - 1)):
            prev, nxt = tooled[k], tooled[k + 1]
            if not (prev.get("call_id") and prev["call_id"] in nxt["text"] and MARKER in nxt["text"] and "end" in prev):
                ok = False
                continue
            gaps.append(round((nxt["t"] - prev["end"]) * 1000, 2))
        r["round_trips_ms"], r["loop_ok"] = gaps, ok and not timed_out and proc.returncode == 0
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        name = os.path.join(args.keep, f"{agent}-{mode}-{int(start * 1000)}")
        shutil.copy(os.path.join(home, "output.log"), name + ".log")
        with open(name + ".requests.json", "w") as f:
            json.dump([{**{k: v for k, v in e.items() if k not in ("t", "end")}, "t_ms": (e["t"] - start) * 1000, **({"end_ms": (e["end"] - start) * 1000} if "end" in e else {})}
                       for e in log], f, indent=1)
        r["log"] = name + ".log"
    shutil.rmtree(folder, ignore_errors=True)
    return r


# The label of the second Codewright build (--base-cli).
BASE = "codewright-base"


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else None


def summarize(results, agents, n):
    summary = {}
    for agent in agents:
        one = [r for r in results if r["agent"] == agent and r["mode"] == "oneturn" and r["exit"] == 0
               and not r["timed_out"] and r["cold_ms"] is not None]
        loops = [r for r in results if r["agent"] == agent and r["mode"] == "loop"]
        gaps = [g for r in loops if r["loop_ok"] for g in r["round_trips_ms"]]
        med = lambda key: statistics.median(r[key] for r in one) if one else None
        summary[agent] = {
            "runs": len(one), "runs_tried": sum(1 for r in results if r["agent"] == agent and r["mode"] == "oneturn"),
            "cold_ms": med("cold_ms"), "first_bytes": med("first_bytes"), "first_tools": med("first_tools"),
            "first_tools_flat": med("first_tools_flat"),
            "rss_mib": statistics.median(r["rss_kib"] for r in one) / 1024 if one and all(r["rss_kib"] for r in one) else None,
            "own_rss_mib": statistics.median(r["own_rss_kib"] for r in one) / 1024 if one else None,
            "wall_ms": med("wall_ms"), "model_requests": med("model_requests"),
            "first_any_untooled": sum(1 for r in one if r["first_any"] and r["first_any"]["tools"] == 0),
            "loop_runs_ok": f"{sum(r['loop_ok'] for r in loops)}/{len(loops)}" if loops else None,
            "rt_median_ms": statistics.median(gaps) if gaps else None, "rt_p90_ms": pct(gaps, 0.9) if gaps else None}
    return summary


def table(summary, agents, runs, n):
    base = summary.get("codewright") or {}

    def cell(agent, key, fmt):
        v = summary[agent][key]
        if v is None:
            return "n/a"
        s = fmt.format(v)
        b = base.get(key)
        if agent != "codewright" and b:
            s += f" ({v / b:.1f}×)"
        return s

    lines = [f"Mock provider, tests/exercism/{TASK}, {runs} interleaved run(s) per agent, medians (× Codewright); "
             f"loop: {n} tool round trips per run, over all round trips.", "",
             "| agent | cold start → first tooled request | first request bytes | tools | peak RSS (%M) | own RSS (sampled) | one-turn wall | requests (one turn) | loop overhead median | p90 | loop runs ok |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for a in agents:
        s = summary[a]
        reqs = "n/a" if s["model_requests"] is None else f"{s['model_requests']:.0f}"
        tools = "n/a" if s["first_tools"] is None else f"{s['first_tools']:.0f}"
        if s["first_tools_flat"] not in (None, s["first_tools"]):
            tools += f" ({s['first_tools_flat']:.0f} with a namespace's)"
        lines.append(f"| {a}{' (no tools: first request)' if a == 'aider' else ''} | {cell(a, 'cold_ms', '{:.0f} ms')} | "
                     f"{cell(a, 'first_bytes', '{:,.0f}')} | {tools} | {cell(a, 'rss_mib', '{:.1f} MiB')} | {cell(a, 'own_rss_mib', '{:.1f} MiB')} | "
                     f"{cell(a, 'wall_ms', '{:.0f} ms')} | {reqs} | "
                     f"{cell(a, 'rt_median_ms', '{:.1f} ms')} | {cell(a, 'rt_p90_ms', '{:.1f} ms')} | {s['loop_runs_ok'] or 'n/a'} |")
    short = [a for a in agents if summary[a]["runs"] < summary[a]["runs_tried"]]
    if short:
        lines.append("")
        lines.append("Left out (the agent failed, timed out, or sent no model request): " + ", ".join(
            f"{a} {summary[a]['runs_tried'] - summary[a]['runs']} of {summary[a]['runs_tried']} one-turn runs" for a in short) + ".")
    # (Codewright's requests to a small local model carry no tools by design: none is a title.)
    untooled = [a for a in agents if a not in ("aider", "codewright", BASE) and summary[a]["first_any_untooled"]]
    if untooled:
        lines.append("")
        lines.append("First model request without tools (a title request) came before the first tooled one: " +
                     ", ".join(f"{a} in {summary[a]['first_any_untooled']}/{summary[a]['runs']} runs" for a in untooled) +
                     "; cold start is measured to the first request that carries tools.")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", default="codewright,opencode,codex,aider")
    p.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 7)))
    p.add_argument("--n", type=int, default=5, help="tool round trips per loop run")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--ctx", type=int, default=16384,
                   help="the context window the mock reports (/props n_ctx): 16384 as llama-server is run for the real "
                        "model, where Codewright takes a small model's path (no tools' schemas, calls written as text); "
                        "65536 to measure its loop with native tool calls")
    cached = os.path.expanduser("~/.cache/codewright/target")
    p.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR") or
                   (cached if os.path.isdir(cached) else os.path.join(ba.ROOT, "target")))
    p.add_argument("--cli", help="the codewright-cli binary (default: TARGET/release/codewright-cli; TARGET is $CARGO_TARGET_DIR, else ~/.cache/codewright/target if present, else ./target)")
    p.add_argument("--base-cli", help="another codewright-cli build (the commit before a change), run beside the first as `codewright-base`")
    p.add_argument("--out", help="write every run and the summary as JSON here")
    p.add_argument("--keep", help="keep each run's output and the mock's request log under this folder")
    args = p.parse_args()
    agents = args.agents.split(",")
    if args.base_cli and BASE not in agents:
        agents.insert(agents.index("codewright") + 1 if "codewright" in agents else 0, BASE)
    if not os.path.exists("/usr/bin/time"):
        sys.exit("GNU time is needed at /usr/bin/time (apt-get install time)")
    pybin = ba.install_peers([a for a in agents if a != BASE])
    mock = Mock()
    mock.ctx = args.ctx
    results = []
    # Each agent keeps one home folder, as a user's does, set up by a first run that is not
    # measured: what is measured is a user's next run, not the first after installing.
    homes = {agent: tempfile.mkdtemp(prefix=f"bench-peers-{agent}-home-") for agent in agents}
    for agent in agents:
        run_agent(agent, "oneturn", mock, pybin, args, homes[agent])
    for run in range(args.runs):
        for agent in agents:
            for mode in ("oneturn", "loop") if agent != "aider" else ("oneturn",):
                r = run_agent(agent, mode, mock, pybin, args, homes[agent])
                results.append(r)
                brief = {k: r.get(k) for k in ("agent", "mode", "exit", "timed_out", "wall_ms", "rss_kib", "own_rss_kib", "cold_ms", "first_bytes",
                                               "first_tools", "model_requests", "round_trips_ms", "loop_ok") if k in r}
                print(json.dumps(brief), flush=True)
    mock.server.shutdown()
    for home in homes.values():
        shutil.rmtree(home, ignore_errors=True)
    summary = summarize(results, agents, args.n)
    text = table(summary, agents, args.runs, args.n)
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"runs": args.runs, "n": args.n, "summary": summary, "table": text, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
