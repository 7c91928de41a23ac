"""Reference values for the int8 quantization numerics (tinytorch/tests/quant.rs), from
PyTorch's observers and quantize functions.

On an activation-like x (64 x 32, a few outliers) and a weight w (16 x 32):
MinMaxObserver per_tensor_symmetric / per_tensor_affine (qint8, with and without
reduce_range), PerChannelMinMaxObserver per_channel_symmetric on w; torch.quantize_per_tensor
and quantize_per_channel's integers (stored as int64) and dequantized values; and NumPy's
99.9th percentile of |x|; and torch.ao.quantization.quantize_dynamic's output for a
Linear(32, 16) holding w, beside the float output. Writes tinytorch/tests/fixtures/quant.safetensors.

    python scripts/gen_quant_fixtures.py
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file
from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "quant.safetensors")


def main():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 32, generator=g) * 3
    x[0, 0], x[5, 7] = 40.0, -25.0  # outliers
    w = torch.randn(16, 32, generator=g) * torch.linspace(0.1, 2.0, 16).unsqueeze(1)
    out = {"x": x, "w": w}
    for name, scheme, reduce in [("sym", torch.per_tensor_symmetric, False),
                                 ("sym_reduced", torch.per_tensor_symmetric, True),
                                 ("affine", torch.per_tensor_affine, False)]:
        obs = MinMaxObserver(dtype=torch.qint8, qscheme=scheme, reduce_range=reduce)
        obs(x[:32])
        obs(x[32:])  # two batches: running min and max
        scale, zp = obs.calculate_qparams()
        out[f"{name}.scale"] = scale.float()
        out[f"{name}.zero_point"] = zp.long()
        q = torch.quantize_per_tensor(x, scale.item(), int(zp.item()), torch.qint8)
        out[f"{name}.int"] = q.int_repr().long()
        out[f"{name}.dequant"] = q.dequantize()
    obs = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                   qscheme=torch.per_channel_symmetric)
    obs(w)
    scales, zps = obs.calculate_qparams()
    out["w.scales"] = scales.float()
    q = torch.quantize_per_channel(w, scales, zps, 0, torch.qint8)
    out["w.int"] = q.int_repr().long()
    out["w.dequant"] = q.dequantize()
    out["x.p99_9"] = torch.tensor(float(np.percentile(np.abs(x.numpy()), 99.9)))
    # quantize_dynamic of a Linear(32, 16): PyTorch's int8 output beside the float one.
    linear = torch.nn.Linear(32, 16)
    with torch.no_grad():
        linear.weight.copy_(w)
        linear.bias.copy_(torch.linspace(-1, 1, 16))
    xs = torch.randn(8, 32, generator=g) * 2
    qlinear = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(linear), {torch.nn.Linear},
                                                     dtype=torch.qint8)
    out["linear.bias"] = linear.bias.detach().clone()
    out["linear.x"] = xs
    out["linear.float"] = linear(xs).detach()
    out["linear.dynamic"] = qlinear(xs).detach()
    save_file({k: v.contiguous() for k, v in out.items()}, OUT)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
