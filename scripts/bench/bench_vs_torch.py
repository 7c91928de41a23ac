#!/usr/bin/env python3
"""Run TinyTorch's op benchmark and the same work in PyTorch, in one run on one machine, and
print one table: op, shape, PyTorch ms, TinyTorch ms, ratio (PyTorch / TinyTorch; > 1 means
TinyTorch is faster).

Usage: python scripts/bench/bench_vs_torch.py [--threads N] [--repeats R] [--markdown]
Needs torch (pip install torch) and a release build: cargo build --release -p tinytorch-cli.
Each side reports the median of its timed calls; with --repeats R the whole comparison runs R
times and the table shows the median over the R runs of each side.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from bench_stats import compare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_ms(fn, min_reps=5, budget_s=1.0):
    """Median wall time of fn() in ms: 2 warm-up calls, then >= min_reps calls filling budget_s."""
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < budget_s and len(times) < 1000):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def torch_rows():
    """The same rows as `tinytorch bench --suite ops`, keyed by (name, shape)."""
    rows = {}
    g = torch.Generator().manual_seed(0)
    one = torch.ones(1)
    rows[("add (per-op overhead)", "1")] = median_ms(lambda: torch.add(one, one))
    for n, label in [(1 << 20, "1M"), (1 << 24, "16M")]:
        a, b = torch.randn(n, generator=g), torch.randn(n, generator=g)
        rows[("add", label)] = median_ms(lambda: torch.add(a, b))
        rows[("mul", label)] = median_ms(lambda: torch.mul(a, b))
        rows[("relu", label)] = median_ms(lambda: torch.relu(a))
        if label == "16M":
            rows[("sum", label)] = median_ms(lambda: torch.sum(a))
    x = torch.randn(4096, 1024, generator=g)
    rows[("softmax", "4096x1024")] = median_ms(lambda: torch.softmax(x, -1))
    for n in (256, 1024, 2048):
        a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
        rows[("matmul", f"{n}x{n}x{n}")] = median_ms(lambda: torch.matmul(a, b))
    return rows


def tinytorch_rows(threads):
    exe = os.path.join(ROOT, "target", "release", "tinytorch")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tinytorch-cli"], cwd=ROOT, check=True)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run([exe, "bench", "--suite", "ops", "--json"], env=env, check=True,
                         capture_output=True, text=True).stdout
    rows, rates = {}, {}
    for line in out.splitlines():
        r = json.loads(line)
        rows[(r["name"], r["shape"])] = r["tinytorch_ms"]
        if "rate" in r:
            rates[(r["name"], r["shape"])] = (r["rate"], r["rate_unit"])
    return rows, rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pt_runs, tt_runs, rates = [], [], {}
    for _ in range(args.repeats):
        tt, rates = tinytorch_rows(args.threads)
        tt_runs.append(tt)
        pt_runs.append(torch_rows())
    keys = list(tt_runs[0].keys())
    print(f"# torch {torch.__version__}, {args.threads} threads, median of {args.repeats} run(s)", file=sys.stderr)
    if args.markdown:
        print("| op | shape | PyTorch ms | TinyTorch ms | ratio | 95% CI | TinyTorch rate |")
        print("|---|---|---:|---:|---:|---:|---:|")
    else:
        print(f"{'op':<24} {'shape':>12} {'PyTorch ms':>12} {'TinyTorch ms':>13} {'ratio':>7} {'95% CI':>11}  rate")
    for k in keys:
        pt = statistics.median(r[k] for r in pt_runs)
        tt = statistics.median(r[k] for r in tt_runs)
        ratio, ci = compare((r[k] for r in pt_runs), (r[k] for r in tt_runs))
        rate = f"{rates[k][0]:.1f} {rates[k][1]}" if k in rates else ""
        if args.markdown:
            print(f"| {k[0]} | {k[1]} | {pt:.4f} | {tt:.4f} | {ratio:.2f} | {ci} | {rate} |")
        else:
            print(f"{k[0]:<24} {k[1]:>12} {pt:>12.4f} {tt:>13.4f} {ratio:>7.2f} {ci:>11}  {rate}")


if __name__ == "__main__":
    main()
