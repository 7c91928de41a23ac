# PyTorch's twin of a `tinytorch train --config` recipe (docs/TRAINING.md, "ResNet-20").
"""Train PyTorch's twin of a TinyTorch recipe file on Fashion-MNIST, same machine, same recipe.

Reads the TOML recipe `tinytorch train --config` reads (recipes/resnet20.toml) and trains the
same model (scripts/twins/torch_models.py) with the same recipe in PyTorch: random crops after zero
padding and horizontal flips drawn per image, per-channel normalisation, SGD with momentum
and weight decay, a linear warm-up then cosine annealing stepped every optimizer step
(SequentialLR of LinearLR and CosineAnnealingLR), partial batches dropped, optionally
gradient clipping, accumulation, bf16 autocast and an EMA of the weights. Prints one JSON line
per epoch (epoch, steps, train_loss, train_acc, test_loss, test_acc, train_s).

    python scripts/twins/train_recipe_torch.py --config recipes/resnet20.toml --epochs 3
"""

import argparse
import json
import os
import sys
import time
import tomllib

import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import MODELS  # noqa: E402
from train_torch import load  # noqa: E402

KNOWN = {"model", "epochs", "batch-size", "optimizer", "lr", "momentum", "weight-decay",
         "lr-schedule", "warmup-epochs", "warmup-start-factor", "min-lr", "augment-crop",
         "augment-flip", "normalize-mean", "normalize-std", "clip-grad-norm", "accumulate",
         "amp", "ema", "seed", "dataset"}


def augment(x, pad, flip, gen):
    """Random crop of each image after zero padding by `pad`, then a flip with p = 0.5."""
    n, _, h, w = x.shape
    if pad:
        padded = F.pad(x, (pad, pad, pad, pad))
        offs = torch.randint(0, 2 * pad + 1, (n, 2), generator=gen)
        x = torch.stack([padded[i, :, a:a + h, b:b + w] for i, (a, b) in enumerate(offs.tolist())])
    if flip:
        mask = (torch.rand(n, generator=gen) < 0.5).view(n, 1, 1, 1)
        x = torch.where(mask, x.flip(-1), x)
    return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--epochs", type=int, help="train this many of the recipe's epochs")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log", help="also append the per-epoch JSON lines to this file")
    a = p.parse_args()
    with open(a.config, "rb") as f:
        r = {k.replace("_", "-"): v for k, v in tomllib.load(f).items()}
    unknown = set(r) - KNOWN
    if unknown or r.get("optimizer", "sgd") != "sgd" or r.get("dataset", "fashion-mnist") != "fashion-mnist":
        raise SystemExit(f"error: the twin does not implement {sorted(unknown) or 'this optimizer/dataset'}")
    torch.set_num_threads(a.threads)
    torch.manual_seed(r.get("seed", 0))
    gen = torch.Generator().manual_seed(r.get("seed", 0))
    model = MODELS[r["model"]]()
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    mean = torch.tensor(r.get("normalize-mean", [0.0])).view(1, -1, 1, 1)
    std = torch.tensor(r.get("normalize-std", [1.0])).view(1, -1, 1, 1)
    epochs_planned = r.get("epochs", 10)
    epochs = a.epochs or epochs_planned
    batch = r.get("batch-size", 64)
    per_epoch = len(xtr) // batch
    total, warmup = epochs_planned * per_epoch, round(r.get("warmup-epochs", 0) * per_epoch)
    opt = torch.optim.SGD(model.parameters(), lr=r.get("lr", 0.05), momentum=r.get("momentum", 0.0),
                          weight_decay=r.get("weight-decay", 0.0))
    if r.get("lr-schedule", "constant") != "cosine":
        raise SystemExit("error: the twin implements the cosine schedule only")
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=r.get("min-lr", 0.0))
    if warmup:
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=r.get("warmup-start-factor", 0.01),
                                                 total_iters=warmup)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cosine], milestones=[warmup])
    else:
        sched = cosine
    ema = (AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(r["ema"]), use_buffers=True)
           if "ema" in r else None)
    parts, clip = r.get("accumulate", 1), r.get("clip-grad-norm")
    amp = r.get("amp") == "bf16"
    steps = 0
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(xtr), generator=gen)
        loss_sum, correct, seen = 0.0, 0, 0
        start = time.time()
        for b in range(per_epoch):
            idx = order[b * batch:(b + 1) * batch]
            x = (augment(xtr[idx], r.get("augment-crop", 0), r.get("augment-flip", False), gen) - mean) / std
            y = ytr[idx]
            opt.zero_grad()
            for k in range(parts):
                part = slice(k * batch // parts, (k + 1) * batch // parts)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    logits = model(x[part])
                    loss = F.cross_entropy(logits, y[part])
                (loss * (len(y[part]) / batch)).backward()
                loss_sum += loss.item() * len(y[part])
                correct += (logits.argmax(1) == y[part]).sum().item()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            if ema is not None:
                ema.update_parameters(model)
            steps += 1
            seen += len(y)
        train_s = time.time() - start
        judged = ema.module if ema is not None else model
        judged.eval()
        with torch.no_grad():
            test_loss, test_correct = 0.0, 0
            for i in range(0, len(xte), 1000):
                logits = judged((xte[i:i + 1000] - mean) / std)
                test_loss += F.cross_entropy(logits, yte[i:i + 1000], reduction="sum").item()
                test_correct += (logits.argmax(1) == yte[i:i + 1000]).sum().item()
        row = {"epoch": epoch, "steps": steps, "train_loss": loss_sum / seen, "train_acc": correct / seen,
               "test_loss": test_loss / len(xte), "test_acc": test_correct / len(xte), "train_s": train_s}
        print(json.dumps(row), flush=True)
        if a.log:
            with open(a.log, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
