# Regenerate with: python scripts/gen_golden_fixtures.py  (torch 2.15 CPU)
"""PyTorch reference values for TinyTorch's end-to-end tests (tinytorch/tests/golden.rs).

In the style of llm.c's test_gpt2: a small CNN (convolution, batch norm, ReLU, max pooling,
global average pooling, linear) with weights drawn by PyTorch, one batch, and
  golden.param.<key>    the initial state dict
  golden.x, golden.y    the batch
  golden.logits         the forward output (training mode)
  golden.loss           cross-entropy of the logits
  golden.grad.<key>     the gradient of every parameter
  golden.losses         the losses of 5 steps of SGD (lr 0.1, momentum 0.9) on the same batch
  golden.final.<key>    the state dict after those 5 steps
and, for each model of `tinytorch train` (scripts/torch_models.py), the output on a fixed
2-image batch with every parameter and buffer set by a formula both sides compute
(`0.1 * sin(0.37 * i + k)` for element i of the entry whose key's bytes sum to k mod 97,
floats only):
  <model>.x, <model>.out
CI never runs this script; it reads the committed file.
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

from torch_models import MODELS

OUT = os.path.join(os.path.dirname(__file__), "..", "tinytorch", "tests", "fixtures", "golden.safetensors")
torch.set_num_threads(2)
T = {}


def golden_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )


def golden():
    torch.manual_seed(0)
    model = golden_cnn()
    x = torch.rand(16, 1, 12, 12)
    y = torch.randint(0, 10, (16,))
    for k, v in model.state_dict().items():
        T[f"golden.param.{k}"] = v.clone()
    T["golden.x"], T["golden.y"] = x, y
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    T["golden.logits"], T["golden.loss"] = logits.detach(), loss.detach()
    for k, p in model.named_parameters():
        T[f"golden.grad.{k}"] = p.grad.clone()
    # Five optimizer steps from the same start (the forward above already moved the BN stats,
    # exactly as it does on the TinyTorch side).
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    T["golden.losses"] = torch.tensor(losses)
    for k, v in model.state_dict().items():
        T[f"golden.final.{k}"] = v.clone()


def formula_fill(model):
    with torch.no_grad():
        for name, v in model.state_dict().items():
            k = sum(name.encode()) % 97
            if v.is_floating_point():
                i = torch.arange(v.numel(), dtype=torch.float64)
                v.copy_((0.1 * torch.sin(0.37 * i + k)).reshape(v.shape))


def models():
    torch.manual_seed(1)
    x = torch.rand(2, 1, 28, 28)
    for name, build in MODELS.items():
        model = build()
        formula_fill(model)
        T[f"{name}.x"] = x.clone()
        T[f"{name}.out"] = model(x).detach()


golden()
models()
save_file({k: v.contiguous() for k, v in T.items()}, OUT)
print(f"wrote {len(T)} tensors to {OUT} ({os.path.getsize(OUT)} bytes)")
