#!/usr/bin/env python3
"""GPT training speed, TinyTorch against PyTorch, on one machine in one run.

One training step = forward, cross-entropy, backward, AdamW step (lr 3e-4, betas 0.9/0.95,
weight decay 0.1) of a nanoGPT-layout GPT (scripts/twins/torch_gpt.py, the twin of TinyTorch's
`models::gpt::Gpt`): 4 layers, d=128, 4 heads, context 64, vocabulary 512, batch 16, no
dropout, random tokens.

- TinyTorch: `tinytorch bench --suite gpt-train --json` (the release binary, built here with
  cargo unless --binary is given), RAYON_NUM_THREADS=THREADS. Each run reports the median of
  its timed steps (2 warm-up steps, then >= 10 steps and more within --budget-ms).
- PyTorch: the same model and step, torch.set_num_threads(THREADS), timed the same way.

The two sides alternate ROUNDS times; the script prints each round, then the median ms/step
of each side over the rounds, tokens/s and the ratio PyTorch time / TinyTorch time (> 1:
TinyTorch is faster).

Usage: python scripts/bench/bench_gpt_train_torch.py [--rounds 5] [--threads 2] [--binary PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu_torch import gpt_step  # noqa: E402
from bench_stats import median_ms  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB, BLOCK, LAYERS, HEADS, EMBD, BATCH = 512, 64, 4, 4, 128, 16


def torch_step_ms(step, budget_s):
    """Median ms of one step: 2 warm-up steps, then >= 10 and more while the budget lasts."""
    return median_ms(step, budget_s, min_runs=10)


def tinytorch_step_ms(binary, threads, budget_ms):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, "bench", "--suite", "gpt-train", "--json", "--budget-ms", str(budget_ms)],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    row = json.loads(out.strip().splitlines()[-1])
    assert (row["n_layer"], row["n_embd"], row["n_head"], row["block_size"], row["vocab_size"],
            row["batch"]) == (LAYERS, EMBD, HEADS, BLOCK, VOCAB, BATCH), f"different model: {row}"
    return row["tinytorch_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternations of the two sides")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget-ms", type=int, default=2000, help="timing budget of each side per round")
    ap.add_argument("--binary", help="tinytorch binary (default: build target/release/tinytorch)")
    a = ap.parse_args()
    binary = a.binary
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tinytorch-cli"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        binary = os.path.join(target, "release", "tinytorch")

    torch.set_num_threads(a.threads)
    step = gpt_step({"vocab_size": VOCAB, "block_size": BLOCK, "n_layer": LAYERS, "n_head": HEADS,
                     "n_embd": EMBD, "batch": BATCH})

    tt, pt = [], []
    for r in range(a.rounds):
        # Alternate which side goes first, so neither always runs on a warmer machine.
        sides = [("tinytorch", tt), ("pytorch", pt)]
        for name, times in sides if r % 2 == 0 else sides[::-1]:
            if name == "tinytorch":
                times.append(tinytorch_step_ms(binary, a.threads, a.budget_ms))
            else:
                times.append(torch_step_ms(step, a.budget_ms / 1e3))
        print(f"round {r + 1}: TinyTorch {tt[-1]:.2f} ms, PyTorch {pt[-1]:.2f} ms", flush=True)

    tokens = BATCH * BLOCK
    t_med, p_med = statistics.median(tt), statistics.median(pt)
    print(f"GPT training step ({LAYERS} layers, d={EMBD}, {HEADS} heads, context {BLOCK}, "
          f"vocabulary {VOCAB}, batch {BATCH}; {a.threads} threads, medians of {a.rounds} rounds)")
    print(f"  PyTorch {torch.__version__}: {p_med:.2f} ms/step ({min(pt):.2f}-{max(pt):.2f}), "
          f"{tokens / p_med * 1e3:.0f} tokens/s")
    print(f"  TinyTorch: {t_med:.2f} ms/step ({min(tt):.2f}-{max(tt):.2f}), {tokens / t_med * 1e3:.0f} tokens/s")
    print(f"  ratio PyTorch time / TinyTorch time: {p_med / t_med:.2f}")


if __name__ == "__main__":
    main()
