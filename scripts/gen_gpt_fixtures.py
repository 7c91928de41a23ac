#!/usr/bin/env python3
"""Golden values for tinytorch/tests/gpt.rs (llm.c's test_gpt2 style): a 2-layer GPT in
nanoGPT's layout (scripts/torch_gpt.py), its initial weights, a batch of token ids and targets,
the logits, the loss, the gradient of every parameter, and the losses of 5 AdamW steps.

Usage: python scripts/gen_gpt_fixtures.py  -> tinytorch/tests/fixtures/gpt.safetensors
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from torch_gpt import GPT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "gpt.safetensors")
VOCAB, BLOCK, LAYERS, HEADS, EMBD = 11, 8, 2, 2, 16


def main():
    torch.manual_seed(0)
    model = GPT(VOCAB, BLOCK, LAYERS, HEADS, EMBD)
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
