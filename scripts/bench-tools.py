#!/usr/bin/env python3
"""Benchmarks the grep/glob tools against ripgrep on a generated tree (>= 100,000 files,
>= 500 MB), warm and cold page cache, and edit_file on a 5 MB file. Results: BENCHMARKS.md.

Usage: scripts/bench-tools.py [--tree DIR] [--runs N]
"""
import argparse, os, random, shutil, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("let mut value result config handle request response buffer index count error "
         "parse write read open close stream token state event message task project").split()


def generate(tree, files=100_000, target_bytes=520 * 1024 * 1024):
    """Deterministic source-like files in nested folders, with a .gitignore'd build folder."""
    rng = random.Random(42)
    per_file = target_bytes // files
    os.makedirs(tree, exist_ok=True)
    with open(os.path.join(tree, ".gitignore"), "w") as f:
        f.write("target/\n")
    exts = [".rs", ".py", ".ts", ".go", ".md"]
    for i in range(files):
        d = os.path.join(tree, f"pkg{i % 50}", f"mod{(i // 50) % 40}")
        os.makedirs(d, exist_ok=True)
        lines, size = [], 0
        while size < per_file:
            line = "    " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
            if rng.random() < 0.00002:
                line += f" needle_{i}(x);"
            lines.append(line)
            size += len(line) + 1
        with open(os.path.join(d, f"file{i}{exts[i % len(exts)]}"), "w") as f:
            f.write("\n".join(lines) + "\n")
    ignored = os.path.join(tree, "target")
    os.makedirs(ignored, exist_ok=True)
    for i in range(1000):
        with open(os.path.join(ignored, f"gen{i}.rs"), "w") as f:
            f.write("needle_0(ignored);\n" * 100)
    # A repository, as projects are (ripgrep honours .gitignore only inside one).
    subprocess.run(["git", "init", "-q", tree], check=True)
    with open(os.path.join(tree, ".complete"), "w") as f:
        f.write("ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=os.path.expanduser("~/.cache/codewright/bench-tree"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not shutil.which("rg"):
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "ripgrep"], check=True)
    if not os.path.exists(os.path.join(args.tree, ".complete")):
        print(f"generating {args.tree} …", file=sys.stderr)
        shutil.rmtree(args.tree, ignore_errors=True)
        generate(args.tree)
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/codewright/target"))
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "codewright-tools", "--example", "bench_tools"],
                   cwd=ROOT, env=env, check=True)
    rg = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{rg}; tree: ", end="")
    sys.stdout.flush()
    subprocess.run(["du", "-sh", "--apparent-size", args.tree])
    subprocess.run([os.path.join(env["CARGO_TARGET_DIR"], "release", "examples", "bench_tools"),
                    args.tree, str(args.runs)], check=True)


if __name__ == "__main__":
    main()
