#!/usr/bin/env python3
"""The Python package against PyTorch, both driven from Python in one run on one machine
(the Python-package issue's benchmark): ratio = PyTorch time / TinyTorch time (> 1: TinyTorch
is faster). Each row alternates the two libraries ``--repeats`` times and reports medians.

Rows: the overhead of one op on 1-element tensors; a training step (forward, cross-entropy,
backward, plain SGD) of the mlp (784-128-10, batch 64) and of seed-cnn (two 5x5 convolutions, 48
and 96 channels, batch 64) written as the usual Python loop body; one epoch of LeNet-5 on
Fashion-MNIST through ``DataLoader`` (batch 64, shuffled, SGD), the data from the Debian
package (or ``--data DIR``).

Usage: python scripts/bench/bench_py_torch.py [--threads 2] [--repeats 5] [--markdown]
       [--rows overhead,mlp,seed-cnn,epoch]
Needs torch and the tinytorch package in the same environment.
"""
import argparse
import gzip
import os
import statistics
import time

from bench_stats import compare


def models(nn):
    def mlp():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    def seed_cnn():
        return nn.Sequential(
            nn.Conv2d(1, 48, 5, padding=2), nn.ReLU(), nn.Conv2d(48, 96, 5, padding=2), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, 10))

    def lenet5():
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
            nn.ReLU(), nn.Linear(84, 10))

    return {"mlp": mlp, "seed-cnn": seed_cnn, "lenet5": lenet5}


def op_overhead(torch):
    a, b = torch.ones(1), torch.ones(1)
    n = 20000
    t = time.perf_counter()
    for _ in range(n):
        a + b
    return (time.perf_counter() - t) / n * 1e3


def train_step(torch, name, steps):
    import importlib
    nn = importlib.import_module(torch.__name__ + ".nn")
    F = importlib.import_module(torch.__name__ + ".nn.functional")
    optim = importlib.import_module(torch.__name__ + ".optim")
    model = models(nn)[name]()
    # Plain SGD at lr 0.05: the seed configuration, as the Rust CPU suite's train_step rows.
    opt = optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def read_idx(path):
    import numpy as np
    raw = gzip.open(path).read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def epoch(torch, data_dir, limit):
    import importlib
    nn = importlib.import_module(torch.__name__ + ".nn")
    F = importlib.import_module(torch.__name__ + ".nn.functional")
    optim = importlib.import_module(torch.__name__ + ".optim")
    data = importlib.import_module(torch.__name__ + ".utils.data")
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))[:limit]
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))[:limit]
    x = torch.from_numpy(images.astype("float32") / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype("int64"))
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=64, shuffle=True,
                             generator=torch.Generator().manual_seed(0))
    model = models(nn)["lenet5"]()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t = time.perf_counter()
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    return (time.perf_counter() - t) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rows", default="overhead,mlp,seed-cnn,epoch")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epoch-images", type=int, default=60000)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))
    import torch as pt
    import tinytorch as tt
    pt.set_num_threads(args.threads)
    pt.manual_seed(0)
    tt.manual_seed(0)
    rows = {
        "overhead": ("op overhead (add, 1 element)", "ms per op", lambda lib: op_overhead(lib)),
        "mlp": ("mlp train step (784-128-10, batch 64)", "ms", lambda lib: train_step(lib, "mlp", 50)),
        "seed-cnn": ("seed-cnn train step (batch 64)", "ms", lambda lib: train_step(lib, "seed-cnn", 5)),
        "epoch": (f"LeNet-5 epoch on Fashion-MNIST ({args.epoch_images} images) via DataLoader", "ms",
                  lambda lib: epoch(lib, args.data, args.epoch_images)),
    }
    targets = {"overhead": 2.0, "mlp": 1.5, "seed-cnn": 1.2, "epoch": 1.0}
    print(f"# torch {pt.__version__}, {args.threads} threads, medians of {args.repeats} "
          "alternating runs")
    if args.markdown:
        print("| row | PyTorch | TinyTorch | ratio | 95% CI | target |")
        print("|---|---:|---:|---:|---:|---:|")
    for key in args.rows.split(","):
        label, unit, fn = rows[key]
        p, t = [], []
        for _ in range(args.repeats):
            p.append(fn(pt))
            t.append(fn(tt))
        pm, tm = statistics.median(p), statistics.median(t)
        ratio, ci = compare(p, t)
        if args.markdown:
            print(f"| {label} | {pm:.4f} {unit} | {tm:.4f} {unit} | {ratio:.2f} | {ci} | >= {targets[key]} |")
        else:
            print(f"{label:<62} {pm:>10.4f} {tm:>10.4f} {ratio:>6.2f} {ci:>11}  (target >= {targets[key]})")


if __name__ == "__main__":
    main()
