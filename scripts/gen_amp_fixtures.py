#!/usr/bin/env python3
"""Reference values for tinytorch/tests/amp.rs, from torch.amp on the CPU:

- a GradScaler trajectory: SGD on w (4 values) with loss = sum(w * x_t), growth_interval 2,
  where step 3's input holds an inf (so its step is skipped and the scale backs off);
  records the scale before each step, whether the step was taken, and w after it;
- a Linear layer under autocast(bfloat16): output dtype and values, weight and bias
  gradients (f32), with the f32 input and weights stored.

Writes tinytorch/tests/fixtures/amp.json. Usage: python scripts/gen_amp_fixtures.py
"""
import json
import math
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scaler_trajectory():
    w = torch.tensor([0.5, -1.0, 2.0, 0.25], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_factor=2.0,
                                  backoff_factor=0.5, growth_interval=2)
    xs = [
        [1.0, 2.0, 3.0, 4.0],
        [0.5, -0.5, 1.5, -1.5],
        [1.0, math.inf, 0.0, 1.0],
        [2.0, 1.0, -1.0, 0.5],
        [-1.0, 0.25, 0.75, 2.0],
        [0.1, 0.2, 0.3, 0.4],
    ]
    steps = []
    for x in xs:
        opt.zero_grad()
        scale = scaler.get_scale()
        loss = (w * torch.tensor(x)).sum()
        scaler.scale(loss).backward()
        before = w.detach().clone()
        scaler.step(opt)
        scaler.update()
        taken = not torch.equal(before, w.detach())
        steps.append({"x": [str(v) for v in x], "scale": scale, "taken": taken,
                      "w": w.detach().tolist()})
    return {"w0": [0.5, -1.0, 2.0, 0.25], "lr": 0.1, "init_scale": 1024.0,
            "growth_interval": 2, "steps": steps}


def autocast_linear():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, generator=g)
    lin = torch.nn.Linear(5, 4)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(4, 5, generator=g))
        lin.bias.copy_(torch.randn(4, generator=g))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(x)
    y.float().sum().backward()
    return {"x": x.flatten().tolist(), "weight": lin.weight.detach().flatten().tolist(),
            "bias": lin.bias.detach().tolist(), "y_dtype": str(y.dtype),
            "y": y.float().flatten().tolist(), "grad_weight": lin.weight.grad.flatten().tolist(),
            "grad_bias": lin.bias.grad.tolist()}


if __name__ == "__main__":
    out = {"torch": torch.__version__, "scaler": scaler_trajectory(),
           "linear": autocast_linear()}
    path = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "amp.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)
