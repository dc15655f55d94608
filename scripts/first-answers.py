#!/usr/bin/env python3
"""How often the small model's first answer alone solves a task: Codewright's real first request,
sampled N times.

    cargo build --release -p codewright-cli
    python3 scripts/first-answers.py [--tasks six|all|leap,darts] [--samples 8] [--model 1.5b|0.5b]
                                     [--keep DIR]

For each task it runs `codewright-cli exec` as scripts/bench-agents.py does (a fresh folder with
the stub, the tests and INSTRUCTIONS.md, the same prompt), through a proxy that passes every
request to the llama-server but the chat requests: it keeps the first, and ends the run. That
request — byte for byte what Codewright sends first — is then sent to the server `--samples`
times (not streamed, the server's default sampling), and the code of each answer (its largest
fenced block with a `def`, or the `content` of a call it makes) is graded against the exercise's
own tests in a fresh folder. (Every chat request after the first is answered "Done." too, until
the run is ended.) This measures the request a change makes, apart from everything after it (send-backs,
fresh starts): the figures in BENCHMARKS.md's "The files in the message, and no tools' schemas".

With `--reply FILE` the first request is answered with FILE's text instead (an answer of the
model's, say a file one test short), Codewright writes it and runs the tests, and the request it
sends next — the send-back with what failed — is the one kept and sampled: how often the model
finds the fix from there (BENCHMARKS.md's "Near a pass").
"""
import argparse, http.client, http.server, importlib.util, json, os, re, shutil, signal, subprocess
import threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_agents", os.path.join(HERE, "bench-agents.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

DONE = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done."}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
]


class FirstRequest:
    """A proxy that forwards everything to the server except the chat requests: it keeps the
    first and answers it with "Done." — or, given `reply`, answers the first with that text and
    keeps the second."""

    def __init__(self, upstream_port, reply=None):
        self.body = None
        self.kept = threading.Event()
        self.asked = 0
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_one(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and self.path.endswith("/chat/completions"):
                    me.asked += 1
                    answer = DONE
                    if reply is not None and me.asked == 1:
                        answer = [{**DONE[0], "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply}}]}, DONE[1]]
                    elif me.body is None:
                        me.body = json.loads(body)
                        me.kept.set()
                    sse = b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in answer) + b"data: [DONE]\n\n"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(sse)))
                    self.end_headers()
                    self.wfile.write(sse)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = handle_one

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # the run was ended while it asked something: nothing to say

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def first_request(name, server_port, pybin, args):
    """Codewright's first request for the task, as it sent it."""
    folder, stub, test = bench.task_folder(name)
    proxy = FirstRequest(server_port, args.reply and open(args.reply).read())
    cmd, env, home = bench.agent_command("codewright", folder, stub, test, f"http://127.0.0.1:{proxy.port}",
                                         bench.test_env(pybin), args)
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not proxy.kept.wait(0.2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name}: Codewright made no chat request (exit {proc.poll()})")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proxy.server.shutdown()
        shutil.rmtree(home, ignore_errors=True)
    return proxy.body, folder, stub, test


def code_of(message):
    """The code an answer gives: the `content` of a call it makes (native or written as JSON),
    else its largest fenced block with a `def`."""
    for call in message.get("tool_calls") or []:
        try:
            content = json.loads(call["function"]["arguments"]).get("content")
        except (KeyError, TypeError, ValueError, AttributeError):
            content = None
        if isinstance(content, str):
            return content
    text = message.get("content") or ""
    for m in re.finditer(r'"content"\s*:\s*("(?:[^"\\]|\\.)*")', text):
        try:
            return json.loads(m.group(1))
        except ValueError:
            pass
    blocks = [b for b in re.findall(r"```[a-zA-Z0-9]*\n(.*?)```", text, re.S) if "def " in b]
    return max(blocks, key=len) if blocks else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="six", help="six, all, or names separated by commas")
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--model", default="1.5b", choices=["1.5b", "0.5b"])
    p.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(bench.ROOT, "target")))
    p.add_argument("--cli", help="the codewright-cli binary (default: TARGET/release/codewright-cli)")
    p.add_argument("--keep", help="keep each first request and answer under this folder")
    p.add_argument("--server", help="use this llama-server port instead of starting one")
    p.add_argument("--note", help="a folder of TASK.txt files: each is added to its task's request as a "
                   "user message of its own (what a variant of the request would tell the model)")
    p.add_argument("--temperature", type=float, help="sample at this temperature, a new seed each time")
    p.add_argument("--reply", help="answer the first request with this file's text and sample the request "
                   "that follows it (the send-back with what failed)")
    args = p.parse_args()
    tasks = bench.SIX if args.tasks == "six" else sorted(os.listdir(bench.EXERCISES)) \
        if args.tasks == "all" else args.tasks.split(",")
    tasks = [t for t in tasks if os.path.isdir(os.path.join(bench.EXERCISES, t))]
    pybin = bench.install_peers([])
    proc = None
    if args.server:
        port = int(args.server)
    else:
        binary, ggufs = bench.small_model()
        proc, port = bench.start_server(binary, ggufs[args.model])
    totals = []
    try:
        for name in tasks:
            body, folder, stub, test = first_request(name, port, pybin, args)
            body = {**body, "stream": False}
            body.pop("stream_options", None)
            note = args.note and os.path.join(args.note, f"{name}.txt")
            if note and os.path.exists(note):
                body["messages"].append({"role": "user", "content": open(note).read()})
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"{name}-request.json"), "w") as f:
                    json.dump(body, f, indent=1)
            passed = 0
            for i in range(args.samples):
                start = time.monotonic()
                if args.temperature is not None:
                    body = {**body, "temperature": args.temperature, "seed": int.from_bytes(os.urandom(3), "big")}
                request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                                 data=json.dumps(body).encode(),
                                                 headers={"content-type": "application/json"})
                answer = json.load(urllib.request.urlopen(request, timeout=900))
                message = answer["choices"][0]["message"]
                text = (message.get("content") or "") + json.dumps(message.get("tool_calls") or "")
                code = code_of(message)
                ok, summary = False, "no code"
                if code is not None:
                    with open(os.path.join(folder, stub), "w") as f:
                        f.write(code)
                    ok, summary = bench.passes(name, folder, stub, test, pybin)
                passed += ok
                print(f"{name} {i}: {'pass' if ok else 'fail'} {answer['usage']['completion_tokens']} tok "
                      f"{time.monotonic() - start:.0f} s  {summary}", flush=True)
                if args.keep:
                    with open(os.path.join(args.keep, f"{name}-answer{i}.txt"), "w") as f:
                        f.write(text)
            shutil.rmtree(folder, ignore_errors=True)
            totals.append((name, passed, body))
    finally:
        if proc:
            proc.terminate()
            proc.wait()
    which = "the send-back after the reply given" if args.reply else "the first answer alone"
    print(f"\nQwen2.5-Coder-{args.model.upper()}, {which}, {args.samples} samples each")
    for name, passed, body in totals:
        size = len(json.dumps(body))
        print(f"{name:<22} {passed}/{args.samples}   first request {size:,} B, tools: {'tools' in body}")


if __name__ == "__main__":
    main()
