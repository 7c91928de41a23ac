#!/usr/bin/env python3
"""Reference values for tinytorch/tests/norms.rs: torch.nn.functional.layer_norm and rms_norm
on the CPU for f32, f64, f16 and bf16 inputs (same-dtype parameters, as PyTorch requires),
with and without weight/bias, a non-contiguous input and two normalised dims: the output
and, for an upstream gradient `gout`, the gradients of the input, weight and bias. One
safetensors file; tensor names are `<case>.<name>`. The input `x` is stored contiguous; a
case whose name ends in `_t` normalises `x.transpose(0, 1)`.

Usage: python scripts/gen_norm_fixtures.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "norm.safetensors")
T = {}


def record(case, kind, shape, norm_shape, dtype, weight=True, bias=True, eps=1e-5):
    """One case: random x (shape), weight/bias (norm_shape), gout; PyTorch's results."""
    g = torch.Generator().manual_seed(len(T))
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 1.5 + 0.3).to(dtype)
    w = (torch.randn(norm_shape, generator=g, dtype=torch.float64) + 1.0).to(dtype) if weight else None
    b = torch.randn(norm_shape, generator=g, dtype=torch.float64).to(dtype) if bias else None
    T[f"{case}.x"] = x
    T[f"{case}.eps"] = torch.tensor(eps, dtype=torch.float64)
    leaves = [t.clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    xin = leaves[0].transpose(0, 1) if case.endswith("_t") else leaves[0]
    if kind == "layer_norm":
        y = F.layer_norm(xin, norm_shape, leaves[1], leaves[2], eps)
    else:
        y = F.rms_norm(xin, norm_shape, leaves[1], eps)
    gout = torch.randn(y.shape, generator=g, dtype=torch.float64).to(dtype)
    (y * gout).sum().backward()
    T[f"{case}.out"] = y.detach()
    T[f"{case}.gout"] = gout
    T[f"{case}.grad_x"] = leaves[0].grad
    for name, t in (("weight", leaves[1]), ("bias", leaves[2])):
        if t is not None:
            T[f"{case}.{name}"] = t.detach()
            T[f"{case}.grad_{name}"] = t.grad


def main():
    for dt, name in ((torch.float32, "f32"), (torch.float64, "f64"), (torch.float16, "f16"),
                     (torch.bfloat16, "bf16")):
        record(f"ln_{name}", "layer_norm", (4, 6, 32), [32], dt)
        record(f"rms_{name}", "rms_norm", (4, 6, 32), [32], dt, bias=False, eps=1e-6)
    record("ln_nobias_2d", "layer_norm", (3, 4, 5), [4, 5], torch.float32, bias=False)
    record("ln_noaffine_t", "layer_norm", (5, 3, 24), [24], torch.float32, weight=False, bias=False)
    record("ln_bias_only_t", "layer_norm", (5, 3, 24), [24], torch.float32, weight=False)
    record("rms_noweight_t", "rms_norm", (5, 3, 24), [24], torch.float32, weight=False, bias=False)
    record("rms_2d", "rms_norm", (2, 3, 4, 6), [4, 6], torch.float32, bias=False)
    save_file({k: v.contiguous() for k, v in T.items()}, OUT, metadata={"torch": torch.__version__})
    print(f"{len(T)} tensors -> {os.path.relpath(OUT, ROOT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
