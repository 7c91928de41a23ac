# Regenerate with: python scripts/gen_conv_fixtures.py  (torch 2.15 CPU; writes tinytorch/tests/fixtures/conv.safetensors)
"""PyTorch reference values for TinyTorch's convolution and pooling tests (tinytorch/tests/conv.rs).

One list of cases: conv2d (padding "same"/"valid"/explicit, stride, dilation, groups,
depthwise, rectangular and even kernels, with and without bias), conv1d, conv_transpose2d
(stride, padding, output_padding, groups, dilation), max_pool2d (floor and ceil mode),
avg_pool2d (with and without the padding in the divisor) and adaptive_avg_pool2d, all in
f64. Each case draws its inputs from its own seed (the CRC-32 of its name), so a case's
values do not change when another is added. For each case the safetensors file holds

    <case>.x, <case>.w, <case>.b      the input, the weight (convolutions only) and the bias
                                      (convolutions with a bias only)
    <case>.out                        PyTorch's output
    <case>.gout                       the upstream gradient: the loss is sum(out * gout)
    <case>.grad_x, .grad_w, .grad_b   PyTorch's gradients of that loss

and `__metadata__[<case>]` is JSON `{"op": ..., "kwargs": {...}}` naming the
torch.nn.functional call (for reading the file; the Rust tests spell their calls out), and
`__metadata__["torch"]` the torch version. The file is written by hand with sorted keys, so
a second run gives the same bytes.

CI never runs this script: it only reads the committed fixture file.
"""

import json
import os
import sys
import warnings
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import write_safetensors  # noqa: E402  (the same reproducible writer)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "conv.safetensors")

# PyTorch warns that "same" with an even kernel may copy the input; that case is intended.
warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")

F64 = torch.float64
TENSORS = {}
META = {}


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def add(name, op, x_shape, w_shape=None, bias=False, **kwargs):
    """One case: random x (and w, b), `F.<op>(x, [w, b,] **kwargs)`, a random upstream
    gradient and PyTorch's gradients of `sum(out * gout)`."""
    g = torch.Generator().manual_seed(seed_of(name))
    x = torch.randn(x_shape, generator=g, dtype=F64)
    leaves = {"x": x}
    if w_shape is not None:
        leaves["w"] = torch.randn(w_shape, generator=g, dtype=F64)
        if bias:
            # conv_transpose2d's weight is (Ci, Co/groups, kh, kw); the others' (Co, ...).
            co = w_shape[1] * kwargs.get("groups", 1) if op == "conv_transpose2d" else w_shape[0]
            leaves["b"] = torch.randn(co, generator=g, dtype=F64)
    for key, t in leaves.items():
        TENSORS[f"{name}.{key}"] = t
    grads = {key: t.clone().requires_grad_(True) for key, t in leaves.items()}
    args = [grads[k] for k in ("x", "w", "b") if k in grads]
    out = getattr(F, op)(*args, **kwargs)
    gout = torch.randn(out.shape, generator=g, dtype=F64)
    (out * gout).sum().backward()
    TENSORS[f"{name}.out"] = out.detach()
    TENSORS[f"{name}.gout"] = gout
    for key, t in grads.items():
        TENSORS[f"{name}.grad_{key}"] = t.grad
    META[name] = json.dumps({"op": op, "kwargs": kwargs}, separators=(",", ":"), sort_keys=True)


def convolutions():
    add("conv2d_3x3_same", "conv2d", (2, 2, 5, 5), (3, 2, 3, 3), bias=True, padding="same")
    add("conv2d_5x5_pad2", "conv2d", (1, 2, 6, 6), (2, 2, 5, 5), bias=True, padding=2)
    add("conv2d_stride2", "conv2d", (2, 3, 7, 6), (2, 3, 3, 3), bias=True, stride=2, padding=1)
    add("conv2d_dilation2", "conv2d", (1, 2, 7, 7), (2, 2, 3, 3), bias=True, padding=1, dilation=2)
    add("conv2d_groups2", "conv2d", (2, 4, 5, 5), (4, 2, 3, 3), bias=True, padding="valid", groups=2)
    add("conv2d_depthwise", "conv2d", (1, 3, 5, 4), (6, 1, 3, 3), bias=True, padding=1, groups=3)
    add("conv2d_rect_3x1_nobias", "conv2d", (1, 2, 5, 4), (3, 2, 3, 1), padding=(1, 0))
    add("conv2d_same_even_kernel", "conv2d", (1, 1, 5, 5), (2, 1, 4, 2), padding="same")
    add("conv2d_valid", "conv2d", (1, 2, 4, 5), (2, 2, 2, 3), bias=True, padding="valid")
    # Every option at once, batch 3 (the im2col + gemm path).
    add("conv2d_groups_stride_dilation_padding", "conv2d", (3, 4, 7, 6), (6, 2, 3, 2), bias=True,
        stride=(2, 1), padding=(2, 1), dilation=(2, 1), groups=2)
    # Depthwise, "same" with an even kernel (asymmetric padding), no bias.
    add("depthwise_same_even_kernel", "conv2d", (2, 3, 6, 5), (3, 1, 4, 2), padding="same", groups=3)
    add("conv1d_basic", "conv1d", (2, 2, 9), (3, 2, 3), bias=True, stride=2, padding=1)
    add("conv_transpose2d_basic", "conv_transpose2d", (1, 2, 3, 3), (2, 3, 3, 3), bias=True,
        stride=2, padding=1, output_padding=1)
    add("conv_transpose2d_groups_dilation", "conv_transpose2d", (1, 4, 3, 4), (4, 1, 2, 3), bias=True,
        stride=(1, 2), padding=(0, 1), output_padding=0, groups=2, dilation=(2, 1))


def pools():
    add("max_pool2d_basic", "max_pool2d", (1, 2, 5, 5), kernel_size=3, stride=2, padding=1, dilation=1,
        ceil_mode=False)
    add("max_pool2d_ceil", "max_pool2d", (1, 1, 6, 7), kernel_size=2, ceil_mode=True)
    add("avg_pool2d_pad", "avg_pool2d", (1, 2, 5, 5), kernel_size=3, stride=2, padding=1,
        count_include_pad=True)
    add("avg_pool2d_exclude_pad", "avg_pool2d", (1, 2, 5, 5), kernel_size=3, stride=2, padding=1,
        count_include_pad=False)
    add("adaptive_avg_pool2d_3x2", "adaptive_avg_pool2d", (1, 2, 7, 5), output_size=(3, 2))


def main():
    convolutions()
    pools()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    write_safetensors(OUT, TENSORS, {**META, "torch": torch.__version__})
    print(f"{len(META)} cases, {len(TENSORS)} tensors, {os.path.getsize(OUT)} bytes -> {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
