#!/usr/bin/env python3
"""The seed's layer table in TinyTorch and in PyTorch, in one run on one machine: runs
`tinytorch bench --suite layers --device D --json`, times every row it printed (same
parameters, same protocol) in PyTorch, and prints one table with ratio = PyTorch ms /
TinyTorch ms (> 1: TinyTorch is faster), the geometric mean and the worst row.

Protocol (as the seed's): forward + backward with a fixed random upstream gradient where the
output is not a scalar, device synchronised around every iteration, TF32 off. CUDA: 20
warm-up and 80 timed iterations, L2 flushed (~96 MiB scratch sum) between families. CPU:
2 warm-up, then at least 5 timed iterations within --budget-ms; rows were scaled down in
batch by TinyTorch where they would take PyTorch more than ~0.5 s (the batch is in the row).

Usage: python scripts/bench/bench_layers_torch.py [--device cpu|cuda] [--threads N] [--repeats R]
       [--markdown] [--exe target/release/tinytorch]
Needs torch; the TinyTorch binary must be built with --features cuda for --device cuda.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from bench_stats import add_run_args, compare, median_ms


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_row(fn, device, budget_s):
    def timed():
        sync(device)
        fn()
        sync(device)

    if device.type == "cuda":
        for _ in range(20):
            timed()
        times = []
        for _ in range(80):
            t = time.perf_counter()
            timed()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    return median_ms(timed, budget_s, min_runs=5)


def build(name, p, device):
    """The closure timing one row, with the same shapes as TinyTorch's."""
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    def leaf(t):
        return t.detach().requires_grad_(True)

    if name == "conv2d":
        n, ci, hw, co, k, pad = p["n"], p["ci"], p["hw"], p["co"], p["k"], p["padding"]
        out_hw = hw if pad == "same" else hw - k + 1
        x, w, b, gy = randn(n, ci, hw, hw), randn(co, ci, k, k), randn(co), randn(n, co, out_hw, out_hw)
        return lambda: F.conv2d(leaf(x), leaf(w), leaf(b), padding=pad).backward(gy)
    if name == "linear":
        x, w, b, gy = randn(p["batch"], p["in"]), randn(p["out"], p["in"]), randn(p["out"]), randn(p["batch"], p["out"])
        return lambda: F.linear(leaf(x), leaf(w), leaf(b)).backward(gy)
    if name == "relu":
        x, gy = randn(p["n"], p["c"], p["hw"], p["hw"]), randn(p["n"], p["c"], p["hw"], p["hw"])
        return lambda: torch.relu(leaf(x)).backward(gy)
    if name == "global_avg_pool":
        x, gy = randn(p["n"], p["c"], p["hw"], p["hw"]), randn(p["n"], p["c"], 1, 1)
        return lambda: F.adaptive_avg_pool2d(leaf(x), 1).backward(gy)
    if name == "cross_entropy":
        n, c = p["n"], p["classes"]
        logits = randn(n, c)
        y = torch.tensor([(i * 7919) % c for i in range(n)], device=device)
        return lambda: F.cross_entropy(leaf(logits), y).backward()
    raise ValueError(f"unknown layer {name}")


def tinytorch_rows(exe, device, threads, budget_ms):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [exe, "bench", "--suite", "layers", "--device", device, "--json", "--budget-ms", str(budget_ms)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    add_run_args(ap, budget_ms=1000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    tt_runs, pt_runs, rows = [], [], None
    for _ in range(args.repeats):
        tt = tinytorch_rows(args.exe, args.device, args.threads, args.budget_ms)
        rows = tt
        tt_runs.append([r["tinytorch_ms"] for r in tt])
        pt, family = [], None
        for r in tt:
            if device.type == "cuda" and r["name"] != family:
                torch.ones(24 << 20, device=device).sum()
                sync(device)
                family = r["name"]
            pt.append(time_row(build(r["name"], r["params"], device), device, args.budget_ms / 1e3))
        pt_runs.append(pt)
    what = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{args.threads} CPU threads"
    print(f"# torch {torch.__version__}, {what}, median of {args.repeats} run(s)", file=sys.stderr)
    ratios = []
    if args.markdown:
        print("| layer | parameters | PyTorch ms | TinyTorch ms | ratio | 95% CI |")
        print("|---|---|---:|---:|---:|---:|")
    for i, r in enumerate(rows):
        pt = statistics.median(run[i] for run in pt_runs)
        tt = statistics.median(run[i] for run in tt_runs)
        ratio, ci = compare((run[i] for run in pt_runs), (run[i] for run in tt_runs))
        ratios.append((ratio, r))
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        if args.markdown:
            print(f"| {r['name']} | {params} | {pt:.4f} | {tt:.4f} | {ratio:.2f} | {ci} |")
        else:
            print(f"{r['name']:<16} {params:<52} {pt:>10.4f} {tt:>10.4f} {ratio:>7.2f} {ci:>11}")
    geo = math.exp(statistics.fmean(math.log(x) for x, _ in ratios))
    worst, wr = min(ratios, key=lambda t: t[0])
    print(f"\ngeometric mean ratio {geo:.3f}; worst {worst:.3f} ({wr['name']} {wr['params']})")


if __name__ == "__main__":
    main()
