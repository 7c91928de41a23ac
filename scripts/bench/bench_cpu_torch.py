#!/usr/bin/env python3
"""The CPU-performance suite in TinyTorch and in PyTorch, in one run on one machine: runs
`tinytorch bench --suite cpu --json`, times every row it printed (same parameters, same
protocol: 2 warm-up calls, then the median of at least 5 timed calls filling --budget-ms) in
PyTorch, and prints one table with ratio = PyTorch ms / TinyTorch ms (> 1: TinyTorch is
faster; the ratio of mean times over the runs, with its 95% confidence interval when
--repeats >= 2: scripts/bench/bench_stats.py) beside the issue's target for the row. With --repeats R the whole comparison runs R
times, alternating sides, and each side's figure is the median over the R runs.

Rows: training steps (forward, cross-entropy, backward, SGD lr 0.05) of seed-cnn, mlp and
resnet20, and an AdamW step of the small GPT (4 layers, d=128, 4 heads, context 64, batch 16); the overhead of one op on a 1-element tensor; add and relu on 16M f32 elements
(fresh outputs); matmul 1024^3; the seed's layer table (scripts/bench/bench_layers_torch.py's rows),
summarised by its geometric mean and worst row.

Usage: python scripts/bench/bench_cpu_torch.py [--threads 2] [--repeats 3] [--markdown]
       [--filter NAME] [--exe target/release/tinytorch]
Needs torch and a release build (cargo build --release -p tinytorch-cli).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # bench_layers_torch, bench_stats
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "twins"))  # torch_gpt, torch_models
from bench_layers_torch import build as build_layer  # noqa: E402
from bench_layers_torch import time_row  # noqa: E402
from bench_stats import compare  # noqa: E402
from torch_gpt import GPT  # noqa: E402
from torch_models import MODELS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYER_FAMILIES = {"conv2d", "linear", "relu", "global_avg_pool", "cross_entropy"}
CPU = torch.device("cpu")


def gpt_step(p):
    """One AdamW step of the GPT of `tinytorch bench --suite gpt-train` (same sizes)."""
    torch.manual_seed(0)
    model = GPT(p["vocab_size"], p["block_size"], p["n_layer"], p["n_head"], p["n_embd"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    x = torch.randint(0, p["vocab_size"], (p["batch"], p["block_size"]))
    y = torch.randint(0, p["vocab_size"], (p["batch"], p["block_size"]))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x).view(-1, p["vocab_size"]), y.view(-1)).backward()
        opt.step()

    return step


def train_step(p):
    if p["model"] == "gpt":
        return gpt_step(p)
    torch.manual_seed(0)
    model = MODELS[p["model"]](p["channels"], p["height"], p["width"], 10)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.rand(p["batch"], p["channels"], p["height"], p["width"])
    y = torch.randint(0, 10, (p["batch"],))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def build(name, p):
    """The closure timing one row, doing the same work as TinyTorch's."""
    if name == "train_step":
        return train_step(p)
    if name == "op_overhead":
        one = torch.ones(1)
        return lambda: torch.add(one, one)
    if name == "elementwise":
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(p["numel"], generator=g), torch.randn(p["numel"], generator=g)
        return (lambda: torch.add(a, b)) if p["op"] == "add" else (lambda: torch.relu(a))
    if name == "matmul":
        a, b = torch.randn(p["m"], p["k"]), torch.randn(p["k"], p["n"])
        return lambda: torch.matmul(a, b)
    return build_layer(name, p, CPU)


def target(name, p):
    """The target ratio for a row (None: judged through the layer-table summary): issue 51's
    for the training steps (the same on every CPU), the first round's for the rest."""
    if name == "train_step":
        return {"seed-cnn": 1.5, "mlp": 2.0, "resnet20": 1.3, "gpt": 1.3}.get(p["model"])
    return {"op_overhead": 5.0, "elementwise": 2.0, "matmul": 0.95}.get(name)


def cpu_name():
    """The CPU the figures come from, as `lscpu` names it, with its family and model numbers
    (a VM may hide the marketing name: "Intel(R) Xeon(R) Processor") and whether it has AMX."""
    try:
        out = subprocess.run(["lscpu"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU (no lscpu)"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    get = lambda key: fields.get(key, "?").strip()  # noqa: E731
    amx = "AMX" if "amx_tile" in get("Flags").split() else "no AMX"
    return f"{get('Model name')} (family {get('CPU family')} model {get('Model')}, {amx})"


def tinytorch_rows(exe, threads, budget_ms, filt):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [exe, "bench", "--suite", "cpu", "--json", "--budget-ms", str(budget_ms)]
    if filt:
        cmd += ["--filter", filt]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--budget-ms", type=int, default=1000)
    ap.add_argument("--filter", default=None)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--exe", default=os.path.join(ROOT, "target", "release", "tinytorch"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tt_runs, pt_runs, rows = [], [], []
    for _ in range(args.repeats):
        rows = tinytorch_rows(args.exe, args.threads, args.budget_ms, args.filter)
        tt_runs.append([r["tinytorch_ms"] for r in rows])
        pt_runs.append([time_row(build(r["name"], r["params"]), CPU, args.budget_ms / 1e3) for r in rows])
    print(f"# {cpu_name()}; torch {torch.__version__}, {args.threads} threads, median of {args.repeats} run(s)")
    if args.markdown:
        print("| row | parameters | PyTorch ms | TinyTorch ms | ratio | 95% CI | target |")
        print("|---|---|---:|---:|---:|---:|---:|")
    layer_ratios = []
    for i, r in enumerate(rows):
        pt = statistics.median(run[i] for run in pt_runs)
        tt = statistics.median(run[i] for run in tt_runs)
        ratio, ci = compare((run[i] for run in pt_runs), (run[i] for run in tt_runs))
        if r["name"] in LAYER_FAMILIES:
            layer_ratios.append((ratio, r))
        goal = target(r["name"], r["params"])
        goal = f">= {goal}" if goal else ""
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        if args.markdown:
            print(f"| {r['name']} | {params} | {pt:.4f} | {tt:.4f} | {ratio:.2f} | {ci} | {goal} |")
        else:
            print(f"{r['name']:<16} {params:<56} {pt:>10.4f} {tt:>10.4f} {ratio:>7.2f} {ci:>11} {goal:>8}")
    if layer_ratios:
        geo = math.exp(statistics.fmean(math.log(x) for x, _ in layer_ratios))
        worst, wr = min(layer_ratios, key=lambda t: t[0])
        print(f"\nlayer table: geometric mean ratio {geo:.3f} (target >= 1.8); worst {worst:.3f} "
              f"({wr['name']} {wr['params']}; target >= 0.9)")


if __name__ == "__main__":
    main()
