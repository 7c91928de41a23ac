#!/usr/bin/env python3
"""Reference values for tinytorch/tests/transformer.rs: nn.MultiheadAttention,
nn.TransformerEncoderLayer and nn.TransformerDecoderLayer in PyTorch (eval mode, f64), with
their parameters, inputs, outputs, the upstream gradient, and the gradients of every
parameter and float input. One safetensors file; tensor names are `<case>.<kind>.<name>`
with kind in param, in, out, gout, grad_param, grad_in.

Usage: python scripts/gen_transformer_fixtures.py
"""
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "transformer.safetensors")
T = {}


def record(case, module, inputs, run):
    """Run `run(module, **inputs)` -> output, store everything under `case`."""
    module = module.double().eval()
    for k, v in module.state_dict().items():
        T[f"{case}.param.{k}"] = v.detach().clone()
    leaves = {}
    for k, v in inputs.items():
        T[f"{case}.in.{k}"] = v.clone()
        leaves[k] = v.clone().requires_grad_(v.dtype.is_floating_point)
    out = run(module, **leaves)
    outs = out if isinstance(out, tuple) else (out,)
    g = torch.Generator().manual_seed(7)
    loss = 0
    for i, o in enumerate(outs):
        T[f"{case}.out.{i}"] = o.detach().clone()
        go = torch.randn(o.shape, generator=g, dtype=o.dtype)
        T[f"{case}.gout.{i}"] = go
        loss = loss + (o * go).sum()
    loss.backward()
    for k, p in module.named_parameters():
        T[f"{case}.grad_param.{k}"] = p.grad.detach().clone()
    for k, v in leaves.items():
        if v.requires_grad:
            T[f"{case}.grad_in.{k}"] = v.grad.detach().clone()


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def main():
    torch.manual_seed(0)
    mask = torch.tensor([[False, False, True, False, True]] * 4)  # (L=4, S=5), True = blocked
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])  # (N=2, S=5)
    record("mha", nn.MultiheadAttention(8, 2), {"q": randn(4, 2, 8), "k": randn(5, 2, 8), "v": randn(5, 2, 8),
                                                 "mask": mask, "pad": pad},
           lambda m, q, k, v, mask, pad: m(q, k, v, key_padding_mask=pad, attn_mask=mask, need_weights=True))
    record("mha_bf", nn.MultiheadAttention(8, 4, batch_first=True, bias=False), {"x": randn(2, 6, 8)},
           lambda m, x: m(x, x, x, need_weights=False)[0])
    enc_pad = torch.tensor([[False] * 6, [False, False, False, False, True, True]])
    record("enc_post", nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), {"x": randn(6, 2, 8), "pad": enc_pad},
           lambda m, x, pad: m(x, src_key_padding_mask=pad))
    record("enc_pre_gelu", nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu", norm_first=True,
                                                      batch_first=True), {"x": randn(2, 6, 8)},
           lambda m, x: m(x, src_mask=nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64),
                          is_causal=True))
    record("dec_post", nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True),
           {"x": randn(2, 4, 8), "mem": randn(2, 6, 8)},
           lambda m, x, mem: m(x, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)))
    record("dec_pre", nn.TransformerDecoderLayer(8, 4, dim_feedforward=12, norm_first=True),
           {"x": randn(4, 2, 8), "mem": randn(3, 2, 8)}, lambda m, x, mem: m(x, mem))
    # Position encodings and MLPs, written out as Hugging Face's Llama and the Transformer
    # paper define them.
    d, max_len = 6, 10
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)
    T["pos.sinusoidal"] = pe
    hd, base, offset = 8, 10000.0, 3
    x = randn(2, 3, 5, hd)
    inv_freq = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.outer(torch.arange(offset, offset + 5, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    rotate_half = lambda v: torch.cat((-v[..., hd // 2:], v[..., : hd // 2]), dim=-1)
    T["rope.x"], T["rope.out"] = x, x * emb.cos() + rotate_half(x) * emb.sin()
    xm = randn(2, 4, 6)
    gate, up, down = randn(10, 6), randn(10, 6), randn(6, 10)
    T["swiglu.x"], T["swiglu.gate"], T["swiglu.up"], T["swiglu.down"] = xm, gate, up, down
    T["swiglu.out"] = torch.nn.functional.silu(xm @ gate.T) * (xm @ up.T) @ down.T
    T2 = {k: v.contiguous() for k, v in T.items()}
    save_file(T2, OUT, metadata={"torch": torch.__version__})
    print(f"{len(T2)} tensors -> {os.path.relpath(OUT, ROOT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
