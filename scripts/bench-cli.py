#!/usr/bin/env python3
"""CLI benchmark: wall time and peak RSS of codewright-cli commands on an empty data folder and on
one with 1,000 projects and 100,000 tasks, interleaved in one run so the ratios are fair.

    apt-get install time    # GNU time, for peak RSS
    cargo build --release -p codewright-cli && cargo build --release -p codewright-store --example seed
    python3 scripts/bench-cli.py [TARGET_DIR]

Wall times include GNU time's own fork/exec (the floor row shows that overhead).
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
cli = os.path.join(target, "release", "codewright-cli")
seed = os.path.join(target, "release", "examples", "seed")
RUNS = 21

def run(args):
    """Wall ms and peak RSS (KiB) of one run. The RSS comes from GNU time: a child forked from
    Python would report Python's own peak (the kernel keeps the pre-exec high-water mark)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        sys.exit(f"{args} failed: {proc.stderr.decode()}")
    return wall, int(proc.stderr.decode().strip().splitlines()[-1])

work = tempfile.mkdtemp(prefix="cw-bench-")
try:
    empty, big = os.path.join(work, "empty"), os.path.join(work, "big")
    subprocess.run([cli, "--home", empty, "projects", "list"], check=True, stdout=subprocess.DEVNULL)
    t0 = time.perf_counter()
    subprocess.run([seed, big, "1000", "100000"], check=True, stdout=subprocess.DEVNULL)
    seed_s = time.perf_counter() - t0
    cases = [
        ("--version (process floor)", [cli, "--version"]),
        ("projects list, empty", [cli, "--home", empty, "projects", "list"]),
        ("projects list, 1k/100k", [cli, "--home", big, "projects", "list"]),
        ("projects list --json, 1k/100k", [cli, "--home", big, "--json", "projects", "list"]),
        ("tasks list (100 tasks), 1k/100k", [cli, "--home", big, "tasks", "list", "--project", "500"]),
    ]
    results = {name: [] for name, _ in cases}
    for _ in range(RUNS):  # interleaved: every case sees the same machine noise
        for name, args in cases:
            results[name].append(run(args))
    floor = statistics.median(w for w, _ in results["--version (process floor)"])
    print(f"seeded 1,000 projects / 100,000 tasks in {seed_s:.1f} s; {RUNS} runs each, interleaved\n")
    print(f"| command | median wall | × floor | peak RSS |")
    print(f"| --- | ---: | ---: | ---: |")
    for name, _ in cases:
        walls = [w for w, _ in results[name]]
        rss = max(r for _, r in results[name])
        med = statistics.median(walls)
        print(f"| {name} | {med:.1f} ms | {med / floor:.2f} | {rss / 1024:.1f} MiB |")
finally:
    shutil.rmtree(work, ignore_errors=True)
