#!/usr/bin/env python3
"""Golden values for tinytorch/tests/gpt.rs (llm.c's test_gpt2 style): a 2-layer GPT in
nanoGPT's layout (written out here), its initial weights, a batch of token ids and targets,
the logits, the loss, the gradient of every parameter, and the losses of 5 AdamW steps.

Usage: python scripts/gen_gpt_fixtures.py  -> tinytorch/tests/fixtures/gpt.safetensors
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "gpt.safetensors")
VOCAB, BLOCK, LAYERS, HEADS, EMBD = 11, 8, 2, 2, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(EMBD, 3 * EMBD)
        self.attn.c_proj = nn.Linear(EMBD, EMBD)
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(EMBD, 4 * EMBD)
        self.mlp.c_proj = nn.Linear(4 * EMBD, EMBD)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(EMBD, dim=2)
        q, k, v = (z.view(b, t, HEADS, e // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, e)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, EMBD), wpe=nn.Embedding(BLOCK, EMBD),
            h=nn.ModuleList([Block() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(EMBD)))
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * LAYERS))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias") and "ln_" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def main():
    torch.manual_seed(0)
    model = GPT()
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, VOCAB, (2, BLOCK), generator=g)
    targets = torch.randint(0, VOCAB, (2, BLOCK), generator=g)
    T = {f"param.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    logits = model(idx)
    loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    loss.backward()
    T["idx"], T["targets"], T["logits"], T["loss"] = idx, targets, logits.detach(), loss.detach()
    for k, p in model.named_parameters():
        T[f"grad.{k}"] = p.grad.detach().clone()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(idx).view(-1, VOCAB), targets.view(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    T["adamw_losses"] = torch.tensor(losses, dtype=torch.float64)
    save_file({k: v.contiguous() for k, v in T.items()}, OUT, metadata={"torch": torch.__version__})
    print(f"{len(T)} tensors -> {os.path.relpath(OUT, ROOT)}; loss {T['loss'].item():.6f}; adamw {losses}")


if __name__ == "__main__":
    main()
