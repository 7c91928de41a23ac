"""nanoGPT's GPT in PyTorch, the twin of TinyTorch's `models::gpt::Gpt` (same parameter names,
the LM head tied to the token embedding, nanoGPT's initialisation, no dropout). Used by
scripts/fixtures/gen_gpt_fixtures.py (golden values) and scripts/bench/bench_gpt_train_torch.py (speed).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, n_embd, n_head, bias=True):
        super().__init__()
        self.n_embd, self.n_head = n_embd, n_head
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.attn.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.mlp.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(e, dim=2)
        q, k, v = (z.view(b, t, self.n_head, e // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, e)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """Token and position embeddings, `n_layer` blocks, a final LayerNorm, the tied head."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, bias=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, bias) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd, bias=bias)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias") and "ln_" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))
