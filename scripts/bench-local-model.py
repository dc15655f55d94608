#!/usr/bin/env python3
"""Codewright's overhead against a real local model server: time to first token and tokens/s of
`codewright-cli exec --json`, next to a bare `curl` sending the very same request.

    scripts/local-model                 # once: installs llama-cpp-python + SmolLM2-135M (~12 min)
    cargo build --release -p codewright-cli
    python3 scripts/bench-local-model.py [TARGET_DIR]

The server is llama-cpp-python[server] 0.3.36 serving SmolLM2-135M-Instruct in a 4,096-token
window on this machine's CPU. One `exec` first goes through a small recording proxy to capture the
request Codewright sends (its system prompt and tool schemas included); then `curl` replays that
body and `exec` runs against the server directly, in turn, RUNS times each. Before every measured
request a short unrelated one empties the server's prompt cache, so each one reads its whole
prompt. Time to first token = the process started → the first text of the answer on its stdout
(so `exec`'s own start-up, model lookup and the server's window probe count against it). Tokens/s
= the answer's tokens / first to last text; both get the same answer (checked), so its tokens are
counted once, as the server streams them (one per chunk; this server reports no usage while
streaming, where `exec` estimates it).
"""
import http.server, json, os, statistics, subprocess, sys, tempfile, threading, time, urllib.request

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
CLI = os.path.join(target, "release", "codewright-cli")
RUNS = int(os.environ.get("BENCH_RUNS", 5))
PROMPT = "Without using any tool, write a numbered list of ten short tips for writing clear code."
HERE = os.path.dirname(os.path.abspath(__file__))


def local_model():
    out = subprocess.run(["bash", "-c", f"source {HERE}/local-model && echo \"$CODEWRIGHT_LOCAL_MODEL_PYTHON\" "
                          "&& echo \"$CODEWRIGHT_LOCAL_MODEL_GGUF\""], check=True, capture_output=True, text=True)
    python, gguf = out.stdout.split("\n")[:2]
    return python, gguf


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python, gguf):
    port = free_port()
    server = subprocess.Popen([python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2",
                               "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port), "--chat_format", "chatml"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return server, port
        except OSError:
            if time.time() > deadline:
                sys.exit("the local model server did not start")
            time.sleep(0.2)


class Recorder(http.server.BaseHTTPRequestHandler):
    """Forwards to the server, keeping the last chat request's body."""
    upstream, body = None, None

    def log_message(self, *args):
        pass

    def forward(self, data=None):
        req = urllib.request.Request(f"{Recorder.upstream}{self.path}", data=data, method=self.command,
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                status, kind, payload = r.status, r.headers.get("content-type", ""), r.read()
        except urllib.error.HTTPError as e:
            status, kind, payload = e.code, e.headers.get("content-type", ""), e.read()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self.forward()

    def do_POST(self):
        data = self.rfile.read(int(self.headers["content-length"]))
        if self.path.endswith("/chat/completions"):
            Recorder.body = data
        self.forward(data)


def cli(home, *args):
    return subprocess.run([CLI, "--home", home, *args], check=True, capture_output=True, text=True).stdout


def flush(port):
    """An unrelated request: the server's cached prompt prefix is no longer the measured one's."""
    body = json.dumps({"model": "smollm2", "max_tokens": 1,
                       "messages": [{"role": "user", "content": f"Count to three. {time.time()}"}]}).encode()
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                                  headers={"content-type": "application/json"}), timeout=300).read()


def timed_lines(argv, cwd=None):
    """Runs argv; yields (seconds since start, line) for each line of its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        for line in proc.stdout:
            yield time.perf_counter() - start, line.decode(errors="replace")
    finally:
        proc.kill()
        proc.wait()


def measure_curl(port, body_path):
    first = last = None
    tokens = chunks = 0
    text = ""
    # No `Expect: 100-continue` (curl's default for a body over 1 KB): one round trip, as exec.
    argv = ["curl", "-sN", "-H", "content-type: application/json", "-H", "Expect:", "--data-binary", f"@{body_path}",
            f"http://127.0.0.1:{port}/v1/chat/completions"]
    for t, line in timed_lines(argv):
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        for choice in event.get("choices") or []:
            if (choice.get("delta") or {}).get("content"):
                text += choice["delta"]["content"]
                first = first if first is not None else t
                last, chunks = t, chunks + 1
        if event.get("usage"):
            tokens = event["usage"].get("completion_tokens", 0)
    return first, last, tokens or chunks, text


def measure_exec(home, project):
    first = last = None
    tokens = 0
    text = ""
    for t, line in timed_lines([CLI, "--home", home, "--json", "exec", PROMPT], cwd=project):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type")
        if kind == "textDelta" and event.get("text"):
            text += event["text"]
            first = first if first is not None else t
            last = t
        elif kind == "usage":
            tokens = event["usage"]["output"]
            break  # the first request's answer is complete
    return first, last, tokens, text


def main():
    if not os.path.exists(CLI):
        sys.exit(f"{CLI} is missing: cargo build --release -p codewright-cli")
    python, gguf = local_model()
    server, port = start_server(python, gguf)
    work = tempfile.mkdtemp(prefix="cw-bench-local-")
    home, project = os.path.join(work, "data"), os.path.join(work, "project")
    os.makedirs(project)
    Recorder.upstream = f"http://127.0.0.1:{port}"
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        cli(home, "providers", "add", "rec", "--protocol", "openai", "--base-url", f"http://127.0.0.1:{proxy.server_address[1]}/v1")
        cli(home, "providers", "add", "llama", "--protocol", "openai", "--base-url", f"http://127.0.0.1:{port}/v1")
        for provider in ("rec", "llama"):  # greedy and seeded: the same answer each time
            cli(home, "models", "add", f"smollm2@{provider}", "--temperature", "0", "--seed", "42")
        cli(home, "models", "role", "main", "smollm2@rec")
        measure_exec(home, project)  # through the recorder: the request exec sends
        body = json.loads(Recorder.body)
        body_path = os.path.join(work, "body.json")
        with open(body_path, "wb") as f:
            f.write(Recorder.body)
        cli(home, "models", "role", "main", "smollm2@llama")
        rows, answers = {"curl": [], "exec": []}, {}
        for _ in range(RUNS):
            for name in ("curl", "exec"):
                flush(port)
                first, last, tokens, text = measure_curl(port, body_path) if name == "curl" else measure_exec(home, project)
                if first is None:
                    sys.exit(f"{name}: no answer text")
                answers.setdefault(name, set()).add(text)
                rows[name].append((first * 1000, last - first, tokens))
        print(f"request: {len(Recorder.body):,} bytes, {len(body.get('tools') or [])} tools, max_tokens "
              f"{body.get('max_tokens') or body.get('max_completion_tokens')}; {RUNS} runs each, interleaved\n")
        print("| | time to first token (median, range) | tokens/s (median) | answer tokens |")
        print("| --- | ---: | ---: | ---: |")
        tokens = statistics.median(r[2] for r in rows["curl"])  # the server's chunks of the one answer
        for name, label in (("curl", "bare `curl` of the same request"), ("exec", "`codewright-cli exec --json`")):
            ttft = [r[0] for r in rows[name]]
            print(f"| {label} | {statistics.median(ttft):.0f} ms ({min(ttft):.0f}–{max(ttft):.0f}) | "
                  f"{statistics.median(tokens / r[1] for r in rows[name]):.1f} | {tokens:.0f} |")
        same = len(answers["curl"] | answers["exec"]) == 1
        print(f"\nthe same answer every time, both ways: {'yes' if same else 'no'}")
        if not same or os.environ.get("BENCH_SHOW"):
            for name, texts in answers.items():
                for text in texts:
                    print(f"  {name}: {text[:300]!r}")
        c, e = (statistics.median(r[0] for r in rows[n]) for n in ("curl", "exec"))
        print(f"\nexec / curl, time to first token: ×{e / c:.2f} (+{e - c:.0f} ms)")
    finally:
        proxy.shutdown()
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
