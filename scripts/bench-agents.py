#!/usr/bin/env python3
"""Real tasks with a real small model, side by side: Codewright, aider, opencode and Codex on the
same llama.cpp server with the same model and the same Exercism exercises (tests/exercism).

    cargo build --release -p codewright-cli
    python3 scripts/bench-agents.py [--agents codewright,aider,opencode,codex] [--tasks six|all|leap,bob]
                                    [--model 1.5b|0.5b] [--timeout 300] [--runs 1] [--out results.json]

It sources scripts/small-model (the model and llama-server, downloaded once), installs each peer
into ~/.cache/codewright/bench-agents (aider-chat 0.86.2 from PyPI; opencode-ai 1.18.33 and
@openai/codex 0.171.0 from npm) and pytest 8.3.5 for the tests, starts one llama-server
(`-ngl 0 -t 2 --jinja -c 16384`, one slot) and puts a counting proxy in front of it. For each task,
each agent in turn (interleaved, so a busy minute hurts them all alike) gets a fresh folder with
the stub, the tests and INSTRUCTIONS.md, the same prompt, its most permissive mode (no one is there
to approve) and `--timeout` seconds. The task passes when `python3 -m pytest -q` passes afterwards,
run by this script on the agent's stub beside the exercise's own test file in a fresh folder (an
agent that changed the tests is recorded as `tests_changed`). Recorded per run: pass, wall time, model requests (counted by the proxy) and
prompt tokens the server processed (its /metrics, before and after).

How each agent is pointed at the server, from its own documentation:
- codewright: `providers add llama --protocol openai --base-url URL`, `exec --mode yolo --model qwen@llama`
  (the model is not added with `models add`, so its window is asked of the server).
- aider: `--model openai/qwen --openai-api-base URL/v1`, the three files added to its chat, as
  aider is used (`--yes-always --no-git --test-cmd "python3 -m pytest -q" --auto-test`).
- opencode: an `@ai-sdk/openai-compatible` provider in opencode.json, `opencode run`.
- codex: a `model_providers.llama` entry (`wire_api = "responses"`) in CODEX_HOME's config.toml,
  `codex exec --dangerously-bypass-approvals-and-sandbox`.
"""
import argparse, http.client, http.server, json, os, re, shutil, signal, socket, statistics, subprocess
import sys, tempfile, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXERCISES = os.path.join(ROOT, "tests", "exercism")
CACHE = os.path.expanduser("~/.cache/codewright/bench-agents")
SIX = ["leap", "isogram", "pangram", "raindrops", "acronym", "word-count"]
PROMPT = ("Implement the stub in {stub} so that the tests in {test} pass. The task is described in "
          "INSTRUCTIONS.md. Run the tests with `python3 -m pytest -q` to check your work.")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def small_model():
    out = subprocess.run(["bash", "-c", f"source {HERE}/small-model && echo $CODEWRIGHT_SMALL_MODEL_SERVER "
                          "&& echo $CODEWRIGHT_SMALL_MODEL_GGUF && echo $CODEWRIGHT_SMALL_MODEL_GGUF_05B"],
                         check=True, capture_output=True, text=True)
    server, gguf15, gguf05 = out.stdout.split("\n")[:3]
    return server, {"1.5b": gguf15, "0.5b": gguf05}


def install_peers(agents):
    os.makedirs(CACHE, exist_ok=True)
    venv = os.path.join(CACHE, "pytest")
    if not os.path.exists(os.path.join(venv, "bin", "pytest")):
        sh([sys.executable, "-m", "venv", venv])
        sh([f"{venv}/bin/pip", "install", "-q", "--disable-pip-version-check", "pytest==8.3.5"])
    if "aider" in agents and not os.path.exists(os.path.join(CACHE, "aider", "bin", "aider")):
        sh([sys.executable, "-m", "venv", os.path.join(CACHE, "aider")])
        sh([f"{CACHE}/aider/bin/pip", "install", "-q", "--disable-pip-version-check", "aider-chat==0.86.2"])
    npm = os.path.join(CACHE, "npm")
    wanted = [p for a, p in (("opencode", "opencode-ai@1.18.33"), ("codex", "@openai/codex@0.171.0")) if a in agents]
    if wanted and not all(os.path.exists(os.path.join(npm, "node_modules", ".bin", a)) for a in ("opencode", "codex") if a in agents):
        os.makedirs(npm, exist_ok=True)
        sh(["npm", "install", "--silent", "--no-audit", "--no-fund", *wanted], cwd=npm)
    return os.path.join(venv, "bin")


class Counter:
    """A proxy in front of the server that counts the model requests going through it."""

    def __init__(self, upstream_port):
        self.requests = 0
        self.open = set()
        self.lock = threading.Lock()
        counter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and re.search(r"/(chat/completions|responses|completions)$", self.path):
                    counter.requests += 1
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=900)
                with counter.lock:
                    counter.open.add(conn)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    while True:
                        chunk = resp.read1(65536)
                        if not chunk:
                            break
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (OSError, http.client.IncompleteRead):
                    # The agent went away (timed out): closing ours stops the server's work (and
                    # a stream the run's end closed here is cut short).
                    pass
                finally:
                    with counter.lock:
                        counter.open.discard(conn)
                    conn.close()
                self.close_connection = True

            do_GET = do_POST = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.upstream_port = upstream_port
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


    def close_all(self):
        """Ends the requests of an agent that is gone (timed out): the server stops working on a
        request whose connection closes, and the next agent finds its one slot free."""
        with self.lock:
            for conn in list(self.open):
                try:
                    conn.sock and conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for _ in range(300):
            try:
                slots = json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.upstream_port}/slots", timeout=5))
                if not any(s.get("is_processing") for s in slots):
                    return
            except Exception:
                return
            time.sleep(0.2)


def prompt_tokens(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    m = re.search(r"^llamacpp:prompt_tokens_total (\S+)", text, re.M)
    return float(m.group(1)) if m else 0.0


def start_server(binary, gguf):
    port = free_port()
    log = open(os.path.join(tempfile.gettempdir(), f"bench-agents-server-{port}.log"), "w")
    proc = subprocess.Popen([binary, "-m", gguf, "-ngl", "0", "-t", "2", "--jinja", "-c", "16384", "-np", "1",
                             "--metrics", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if proc.poll() is not None:
            code = proc.returncode
            how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
            raise SystemExit(f"llama-server {how} while loading {gguf} (its output: {log.name})")
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).status == 200:
                return proc, port
        except Exception:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"llama-server did not answer within 2 minutes (its output: {log.name})")


def task_folder(name):
    module = name.replace("-", "_")
    folder = tempfile.mkdtemp(prefix=f"bench-{name}-")
    for f in (f"{module}.py", f"{module}_test.py", "INSTRUCTIONS.md"):
        shutil.copy(os.path.join(EXERCISES, name, f), folder)
    return folder, f"{module}.py", f"{module}_test.py"


def agent_command(agent, folder, stub, test, url, env, args, home=None, prompt=PROMPT):
    """The command line and environment one agent is run with in `folder`: with a fresh home
    folder, or the `home` of its earlier runs (set up by the first)."""
    prompt = prompt.format(stub=stub, test=test)
    fresh = home is None or not os.listdir(home)
    home = home or tempfile.mkdtemp(prefix=f"bench-{agent}-home-")
    if agent == "codewright":
        cli = args.cli or os.path.join(args.target, "release", "codewright-cli")
        base = [cli, "--home", home]
        if fresh:
            sh(base + ["providers", "add", "llama", "--protocol", "openai", "--base-url", f"{url}/v1"],
               cwd=folder, stdout=subprocess.DEVNULL)
            sampling = []
            if getattr(args, "temperature", None) is not None:
                sampling += ["--temperature", str(args.temperature)]
            if getattr(args, "constrained", False):
                sampling += ["--constrained"]
            if sampling:
                sh(base + ["models", "add", "qwen@llama"] + sampling, cwd=folder, stdout=subprocess.DEVNULL)
        return base + ["exec", "--mode", "yolo", "--model", "qwen@llama", prompt], env, home
    if agent == "aider":
        return ([f"{CACHE}/aider/bin/aider", "--model", "openai/qwen", "--openai-api-base", f"{url}/v1",
                 "--openai-api-key", "none", "--yes-always", "--no-git", "--no-show-model-warnings",
                 "--no-check-update", "--no-analytics", "--no-pretty",
                 "--test-cmd", "python3 -m pytest -q", "--auto-test",
                 "--message", prompt, stub, test, "INSTRUCTIONS.md"],
                {**env, "HOME": home}, home)
    if agent == "opencode":
        config = {"$schema": "https://opencode.ai/config.json",
                  "provider": {"llama": {"npm": "@ai-sdk/openai-compatible", "name": "llama.cpp",
                                         "options": {"baseURL": f"{url}/v1"},
                                         "models": {"qwen": {"name": "qwen",
                                                             # the server's window (-c 16384)
                                                             "limit": {"context": 16384, "output": 4096}}}}},
                  "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"}}
        with open(os.path.join(folder, "opencode.json"), "w") as f:
            json.dump(config, f)
        return ([f"{CACHE}/npm/node_modules/.bin/opencode", "run", "--print-logs", "--model", "llama/qwen", prompt],
                # PWD too: `opencode run` takes its project folder (where opencode.json is) from $PWD, not the cwd
                {**env, "PWD": folder, "HOME": home, "XDG_DATA_HOME": f"{home}/data", "XDG_CONFIG_HOME": f"{home}/config",
                 "XDG_CACHE_HOME": os.path.join(CACHE, "opencode-cache")}, home)
    if agent == "codex":
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(f'model = "qwen"\nmodel_provider = "llama"\n\n[model_providers.llama]\nname = "llama.cpp"\n'
                    f'base_url = "{url}/v1"\nwire_api = "responses"\n')
        return ([f"{CACHE}/npm/node_modules/.bin/codex", "exec", "--skip-git-repo-check",
                 "--dangerously-bypass-approvals-and-sandbox", prompt],
                {**env, "CODEX_HOME": home}, home)
    raise SystemExit(f"unknown agent {agent}")


def test_env(pybin):
    """pytest for any python3 an agent runs: on PYTHONPATH as well as PATH, since an agent's shell
    may be a login shell that sets PATH again."""
    site = subprocess.run([f"{pybin}/python3", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return {**os.environ, "PATH": f"{pybin}:{os.environ['PATH']}", "PYTHONPATH": site}


def passes(name, folder, stub, test, pybin):
    """Whether the agent's stub passes the exercise's own tests: both copied (never through a link
    the agent left) into a fresh folder, so no conftest.py, pytest.ini or test file of the agent's
    counts."""
    with tempfile.TemporaryDirectory(prefix=f"grade-{name}-") as clean:
        made = os.path.join(folder, stub)
        if os.path.isfile(made) and not os.path.islink(made):
            shutil.copyfile(made, os.path.join(clean, stub))
        shutil.copyfile(os.path.join(EXERCISES, name, test), os.path.join(clean, test))
        r = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", test], cwd=clean,
                           env=test_env(pybin), capture_output=True, text=True, timeout=120)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    return r.returncode == 0, last


def same_file(a, b):
    try:
        with open(a, "rb") as x, open(b, "rb") as y:
            return x.read() == y.read()
    except OSError:
        return False


def run_one(agent, name, counter, server_port, pybin, args, run=0):
    folder, stub, test = task_folder(name)
    env = test_env(pybin)
    cmd, env, home = agent_command(agent, folder, stub, test, f"http://127.0.0.1:{counter.port}", env, args)
    before_requests, before_tokens = counter.requests, prompt_tokens(server_port)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
    wall = time.monotonic() - start
    counter.close_all()
    # Graded against the exercise's own tests, as Exercism and aider's benchmark grade; an agent
    # that changed them is recorded.
    tests_changed = os.path.islink(os.path.join(folder, test)) or \
        not same_file(os.path.join(EXERCISES, name, test), os.path.join(folder, test))
    ok, summary = passes(name, folder, stub, test, pybin)
    result = {"agent": agent, "task": name, "pass": ok, "tests": summary, "tests_changed": tests_changed,
              "wall_s": round(wall, 1),
              "timed_out": timed_out, "exit": proc.returncode, "requests": counter.requests - before_requests,
              "prompt_tokens": int(prompt_tokens(server_port) - before_tokens)}
    if args.keep:
        # (One log per run when there are several.)
        log = os.path.join(args.keep, f"{agent}-{name}{f'-{run + 1}' if args.runs > 1 else ''}.log")
        os.makedirs(args.keep, exist_ok=True)
        with open(log, "wb") as f:
            f.write(output or b"")
        result["log"] = log
        result["folder"] = folder
    else:
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", default="codewright,aider,opencode,codex")
    p.add_argument("--tasks", default="all", help="six, all, or names separated by commas")
    p.add_argument("--model", default="1.5b", choices=["1.5b", "0.5b"])
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--temperature", type=float,
                   help="Codewright's sampling temperature for the model (default: its own; aider sends 0)")
    p.add_argument("--constrained", action="store_true",
                   help="Codewright's answers constrained to one JSON call or a final answer (the server's grammar)")
    p.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
    p.add_argument("--cli", help="the codewright-cli binary (default: TARGET/release/codewright-cli)")
    p.add_argument("--out", help="write every run as JSON here")
    p.add_argument("--keep", help="keep each run's output and folder under this folder")
    p.add_argument("--server", help="use this llama-server port instead of starting one (it needs --metrics)")
    args = p.parse_args()
    agents = args.agents.split(",")
    tasks = SIX if args.tasks == "six" else sorted(os.listdir(EXERCISES)) if args.tasks == "all" else args.tasks.split(",")
    tasks = [t for t in tasks if os.path.isdir(os.path.join(EXERCISES, t))]
    pybin = install_peers(agents)
    binary, ggufs = small_model()
    proc = None
    if args.server:
        port = int(args.server)
    else:
        proc, port = start_server(binary, ggufs[args.model])
    counter = Counter(port)
    results = []
    try:
        for run in range(args.runs):
            for name in tasks:
                for agent in agents:
                    r = run_one(agent, name, counter, port, pybin, args, run)
                    results.append(r)
                    print(json.dumps(r), flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print(f"\nQwen2.5-Coder-{args.model.upper()}, {len(tasks)} tasks x {args.runs} run(s), {args.timeout:.0f} s each")
    print(f"{'agent':<11} {'passed':>8} {'six':>5} {'median s':>9} {'requests':>9} {'prompt tok':>11}")
    for agent in agents:
        mine = [r for r in results if r["agent"] == agent]
        six = [r for r in mine if r["task"] in SIX]
        print(f"{agent:<11} {sum(r['pass'] for r in mine):>3}/{len(mine):<4} {sum(r['pass'] for r in six):>2}/{len(six):<2}"
              f" {statistics.median(r['wall_s'] for r in mine):>9.1f} {statistics.median(r['requests'] for r in mine):>9.0f}"
              f" {statistics.median(r['prompt_tokens'] for r in mine):>11.0f}")


if __name__ == "__main__":
    main()
