# PyTorch's side of the parity runs in docs/TRAINING.md (torch 2.15 CPU, 2 threads).
"""Train a `tinytorch train` model with PyTorch on Fashion-MNIST, with the same configuration.

Examples (the two parity runs of docs/TRAINING.md):
  # same start, same order: export PyTorch's initial weights, train from them without shuffling
  python scripts/twins/train_torch.py --model seed-cnn --export-init /tmp/seed_cnn_init.safetensors
  python scripts/twins/train_torch.py --model seed-cnn --init /tmp/seed_cnn_init.safetensors --no-shuffle --epochs 10
  # independent run: PyTorch's own initialisation, shuffled
  python scripts/twins/train_torch.py --model seed-cnn --epochs 10 --seed 0

Pixels are scaled to [0, 1] with no other transform, partial batches are dropped, the
optimizer is plain SGD. Each epoch prints one JSON line (epoch, train_loss, train_acc,
test_loss, test_acc, train_s); --log FILE also writes them there.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import MODELS  # noqa: E402


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    assert zero == 0 and dtype == 0x08, f"{path}: not a u8 IDX file"
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise SystemExit(f"error: {stem}[.gz] not found in {data_dir}")


def load(data_dir, split):
    x = read_idx(find(data_dir, f"{split}-images-idx3-ubyte"))
    y = read_idx(find(data_dir, f"{split}-labels-idx1-ubyte"))
    x = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(y.astype(np.int64))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="seed-cnn", choices=sorted(MODELS))
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--init", help="load the initial weights from this safetensors state dict")
    p.add_argument("--export-init", help="write the initial weights here and exit")
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--log", help="also append the per-epoch JSON lines to this file")
    p.add_argument("--checkpoint", help="save model and generator state here after each epoch")
    p.add_argument("--resume", help="continue from a --checkpoint file (plain SGD has no state)")
    p.add_argument("--threads", type=int, default=2,
                   help="torch intra-op threads (2 for timings; 1 when runs share the machine)")
    p.add_argument("--amp", choices=["bf16"], default=None,
                   help="run each training forward and loss under torch.autocast('cpu', "
                        "torch.bfloat16), as `tinytorch train --amp bf16` (evaluation in f32)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = MODELS[a.model]()
    if a.export_init:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, a.export_init)
        print(f"wrote {a.export_init}")
        return
    if a.init:
        model.load_state_dict(load_file(a.init))
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    gen = torch.Generator().manual_seed(a.seed)
    n_batches = len(xtr) // a.batch_size
    steps, first_epoch = 0, 1
    if a.resume:
        state = torch.load(a.resume)
        model.load_state_dict(state["model"])
        gen.set_state(state["generator"])
        steps, first_epoch = state["steps"], state["epoch"] + 1
    for epoch in range(first_epoch, a.epochs + 1):
        model.train()
        order = torch.arange(len(xtr)) if a.no_shuffle else torch.randperm(len(xtr), generator=gen)
        loss_sum, correct, seen = 0.0, 0, 0
        start = time.time()
        for b in range(n_batches):
            if a.max_steps is not None and steps >= a.max_steps:
                break
            idx = order[b * a.batch_size:(b + 1) * a.batch_size]
            x, y = xtr[idx], ytr[idx]
            opt.zero_grad()
            with torch.autocast("cpu", torch.bfloat16, enabled=a.amp == "bf16"):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            steps += 1
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
        train_s = time.time() - start
        model.eval()
        with torch.no_grad():
            test_loss, test_correct = 0.0, 0
            for i in range(0, len(xte), 1000):
                logits = model(xte[i:i + 1000])
                test_loss += F.cross_entropy(logits, yte[i:i + 1000], reduction="sum").item()
                test_correct += (logits.argmax(1) == yte[i:i + 1000]).sum().item()
        row = {
            "epoch": epoch, "steps": steps,
            "train_loss": loss_sum / max(seen, 1), "train_acc": correct / max(seen, 1),
            "test_loss": test_loss / len(xte), "test_acc": test_correct / len(xte),
            "train_s": train_s,
        }
        print(json.dumps(row), flush=True)
        if a.log:
            with open(a.log, "a") as f:
                f.write(json.dumps(row) + "\n")
        if a.checkpoint:
            state = {"model": model.state_dict(), "generator": gen.get_state(),
                     "epoch": epoch, "steps": steps}
            torch.save(state, a.checkpoint + ".tmp")
            os.replace(a.checkpoint + ".tmp", a.checkpoint)


if __name__ == "__main__":
    main()
