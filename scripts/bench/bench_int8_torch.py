#!/usr/bin/env python3
"""Dynamically quantized Linear: TinyTorch (`tinytorch bench --suite int8 --json`) against
PyTorch's `torch.ao.quantization.quantize_dynamic` (fbgemm) on the same sizes, in one run on
one machine. Prints PyTorch int8 ms, TinyTorch int8 ms, their ratio (PyTorch / TinyTorch; the
issue's goal >= 0.8), both f32 Linear times, and TinyTorch's own f32 / int8 ratio (goal >= 3
on the large rows). With --repeats R the sides alternate R times; ratios come with a 95% CI
(scripts/bench/bench_stats.py).

Usage: python scripts/bench/bench_int8_torch.py [--threads 2] [--repeats 3] [--markdown]
       [--exe target/release/tinytorch]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch

from bench_layers_torch import time_row
from bench_stats import add_run_args, compare


def torch_row(p, budget_s):
    torch.manual_seed(0)
    linear = torch.nn.Linear(p["in"], p["out"])
    q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(linear), {torch.nn.Linear},
                                               dtype=torch.qint8)
    x = torch.randn(p["batch"], p["in"])
    with torch.no_grad():
        cpu = torch.device("cpu")
        return time_row(lambda: q(x), cpu, budget_s), time_row(lambda: linear(x), cpu, budget_s)


def main():
    ap = argparse.ArgumentParser()
    add_run_args(ap, budget_ms=500)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    tt_runs, pt_runs, rows = [], [], []
    for _ in range(args.repeats):
        out = subprocess.run([args.exe, "bench", "--suite", "int8", "--json", "--budget-ms",
                              str(args.budget_ms)], env=env, check=True, capture_output=True,
                             text=True).stdout
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        tt_runs.append([(r["tinytorch_ms"], r["f32_ms"]) for r in rows])
        pt_runs.append([torch_row(r["params"], args.budget_ms / 1e3) for r in rows])
    print(f"# torch {torch.__version__}, {args.threads} threads, {args.repeats} run(s)",
          file=sys.stderr)
    head = ["batch x in -> out", "PyTorch int8 ms", "TinyTorch int8 ms", "ratio", "95% CI",
            "PyTorch f32 ms", "TinyTorch f32 ms", "TinyTorch f32/int8"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
    else:
        print("  ".join(head))
    for i, r in enumerate(rows):
        p = r["params"]
        pt_q = [run[i][0] for run in pt_runs]
        tt_q = [run[i][0] for run in tt_runs]
        ratio, ci = compare(pt_q, tt_q)
        pt_f = statistics.median(run[i][1] for run in pt_runs)
        tt_f = statistics.median(run[i][1] for run in tt_runs)
        cells = [f"{p['batch']} x {p['in']} -> {p['out']}", f"{statistics.median(pt_q):.4f}",
                 f"{statistics.median(tt_q):.4f}", f"{ratio:.2f}", ci, f"{pt_f:.4f}",
                 f"{tt_f:.4f}", f"{tt_f / statistics.median(tt_q):.2f}"]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))


if __name__ == "__main__":
    main()
