"""A character-level GPT in the idiom of nanoGPT (karpathy/nanoGPT, model.py and train.py)
and minGPT: token and position embeddings, pre-norm blocks of causal self-attention and a
GELU MLP, a tied ``lm_head``, AdamW with decay / no-decay parameter groups, a warmup +
cosine learning rate written into ``param_groups``, ``clip_grad_norm_``, then
``generate()`` under ``torch.no_grad()``.

The two attention paths of nanoGPT both run: even layers call
``F.scaled_dot_product_attention(..., is_causal=True)`` ("flash"), odd layers use the
``register_buffer`` tril mask with ``masked_fill(..., float('-inf'))``. Batches are drawn
with NumPy instead of ``torch.randint``, and generation picks the most likely token
(argmax over the top-k softmax) instead of ``torch.multinomial``, so that both libraries
pick the same tokens.
"""

import inspect
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

from ._common import abs_sums, numpy_state_dict

TEXT = ("a small model reads a small text, and learns which letter tends to follow which; "
        "then it writes a few letters of its own, one at a time, always the likeliest.\n")


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's; PyTorch's had no bias=False)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

    def __init__(self, config, flash):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = flash and hasattr(torch.nn.functional, 'scaled_dot_product_attention')
        if not self.flash:
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size,
                                                               config.block_size))
                                 .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.c_proj(y))
        return y


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):

    def __init__(self, config, flash):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config, flash)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    # nanoGPT: "True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and
    # faster". Without biases there is also no key bias, whose gradient is zero in exact
    # arithmetic (softmax ignores a constant per query) and roundoff in practice, which
    # Adam would turn into lr-sized steps of noise.
    bias: bool = False


class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config, flash=(i % 2 == 0)) for i in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            # inference-time mini-optimization: only forward the lm_head on the very last position
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0},
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda'
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        return optimizer, (num_decay_params, num_nodecay_params)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            block_size = self.config.block_size
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            # greedy instead of torch.multinomial(probs, num_samples=1): the same token
            # in every library
            idx_next = torch.argmax(probs, dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def nanogpt_init(name, shape, rng):
    """NumPy numbers in the spirit of nanoGPT's _init_weights: N(0, 0.02) weights, LayerNorm
    weights near one, small biases."""
    if len(shape) == 1:
        return (1.0 if name.endswith('ln_1.weight') or name.endswith('ln_2.weight')
                or name.endswith('ln_f.weight') else 0.0) + 0.02 * rng.standard_normal(shape)
    return 0.02 * rng.standard_normal(shape)


def get_lr(it, learning_rate=6e-3, min_lr=6e-4, warmup_iters=3, lr_decay_iters=20):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def run(max_iters=20, batch_size=8, seed=1337):
    chars = sorted(list(set(TEXT)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}

    def encode(s):
        return [stoi[c] for c in s]

    def decode(ids):
        return ''.join([itos[i] for i in ids])

    data = np.array(encode(TEXT), dtype=np.uint16)
    rng = np.random.default_rng(seed)
    config = GPTConfig(vocab_size=len(chars))
    device = 'cpu'

    def get_batch():
        # nanoGPT: ix = torch.randint(len(data) - block_size, (batch_size,))
        ix = rng.integers(0, len(data) - config.block_size, size=batch_size)
        bs = config.block_size
        x = torch.stack([torch.from_numpy((data[i:i + bs]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + bs]).astype(np.int64)) for i in ix])
        return x.to(device), y.to(device)

    model = GPT(config)
    model.load_state_dict(numpy_state_dict(model, seed, draw=nanogpt_init))
    model.to(device)
    optimizer, (n_decay, n_nodecay) = model.configure_optimizers(
        weight_decay=1e-1, learning_rate=6e-3, betas=(0.9, 0.95), device_type=device)

    losses, lrs, norms = [], [], []
    X, Y = get_batch()
    model.train()
    for iter_num in range(max_iters):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        logits, loss = model(X, Y)
        X, Y = get_batch()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        lrs.append(lr)
        norms.append(norm.item())

    model.eval()
    prompt = encode("a small")
    x = torch.tensor(prompt, dtype=torch.long, device=device)[None, ...]
    y = model.generate(x, max_new_tokens=24, temperature=0.8, top_k=5)
    tokens = y[0].tolist()
    return {
        'losses': losses,
        'lrs': lrs,
        'grad_norms': norms,
        'num_params': model.get_num_params(),
        'param_counts': [n_decay, n_nodecay],
        'tokens': tokens,
        'text': decode(tokens),
        'sums': abs_sums(model),
    }
