#!/usr/bin/env python3
"""Fixtures for tinytorch/tests/llama.rs: tiny random Llama models saved by `transformers`
(`save_pretrained`: config.json + safetensors) and reference values computed by
`transformers.LlamaForCausalLM` with the eager attention (the plain maths: matmul, softmax).

Written under tinytorch/tests/fixtures/llama/:
  f32/       the main model (vocab 96, hidden 32, 2 layers, 4 heads, 2 KV heads, intermediate
             64, untied head): config.json + model.safetensors
  sharded/   the same model in shards (max_shard_size 40KB) + model.safetensors.index.json
  f16/, bf16/ the same model saved in float16 / bfloat16
  options/   a second model with the other options: tied embeddings, attention and MLP biases,
             head_dim 8 given explicitly (hidden 24 / 4 heads would be 6), one KV head (MQA),
             Llama 3.1 RoPE scaling ("llama3"), rope_theta 500000, a pad token
  reference.safetensors:
    input_ids, targets (2, 12) i64; logits (2, 12, 96) of the f32 model; loss = mean
    cross-entropy(logits, targets); grad.<name> for every parameter;
    logits_f16_weights / logits_bf16_weights: the f32 model run on the f16 / bf16-rounded
    weights (what loading the f16 / bf16 files into f32 must give);
    logits_f16 / logits_bf16: the model run natively in f16 / bf16 (torch dtype), as f32;
    generate.prompt (1, 5), generate.tokens (1, 13): greedy `generate` of 8 new tokens;
    options.input_ids, options.targets, options.logits, options.loss, options.grad.<name> (a few
    parameters) of the options model;
    rope.<type>.inv_freq: Hugging Face's inverse frequencies for the configs in ROPE_CASES.

Usage: python scripts/gen_llama_fixtures.py   (needs torch and transformers; CI does not)
"""
import copy
import json
import os
import shutil

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
import transformers
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "llama")

MAIN = dict(
    vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
    rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
)
OPTIONS = dict(
    vocab_size=80, hidden_size=24, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=1, head_dim=8, intermediate_size=40, max_position_embeddings=128,
    rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=True, mlp_bias=True,
    pad_token_id=0,
    rope_parameters=dict(
        rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
        high_freq_factor=4.0, original_max_position_embeddings=32,
    ),
)
# Inverse frequencies for tests of the RoPE parameter parsing (head_dim 8 each); the test
# writes the same configs.
ROPE_CASES = {
    "default": dict(rope_type="default", rope_theta=10000.0),
    "linear": dict(rope_type="linear", rope_theta=10000.0, factor=4.0),
    "llama3": dict(
        rope_type="llama3", rope_theta=10000.0, factor=8.0, low_freq_factor=1.0,
        high_freq_factor=4.0, original_max_position_embeddings=64,
    ),
}


def spread_weights(model):
    """Weights large enough that attention is far from uniform and every norm weight matters
    (Hugging Face's N(0, 0.02) would make all logits nearly equal); drawn from torch's
    global generator. Also used by gen_llm_family_fixtures.py."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif p.dim() == 2:
                fan_in = p.shape[1]
                p.copy_(torch.randn_like(p) * (1.0 if "embed_tokens" in name else 1.5 / fan_in**0.5))
            else:
                p.copy_(0.2 * torch.randn_like(p))


def build(kwargs, seed):
    config = LlamaConfig(**kwargs)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    spread_weights(model)
    model.config._attn_implementation = "eager"
    return model


def save(model, name, **kwargs):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, **kwargs)
    return path


def rounded(model, dtype):
    """A copy of `model` in f32 whose weights went through `dtype`."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        for p in out.parameters():
            p.copy_(p.to(dtype).float())
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    model = build(MAIN, 0)
    save(model, "f32")
    save(model, "sharded", max_shard_size="40KB")
    save(copy.deepcopy(model).to(torch.float16), "f16")
    save(copy.deepcopy(model).to(torch.bfloat16), "bf16")

    g = torch.Generator().manual_seed(1)
    V = MAIN["vocab_size"]
    ids = torch.randint(0, V, (2, 12), generator=g)
    targets = torch.randint(0, V, (2, 12), generator=g)
    T = {"input_ids": ids, "targets": targets}
    logits = model(ids).logits
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    loss.backward()
    T["logits"], T["loss"] = logits.detach(), loss.detach()
    for k, p in model.named_parameters():
        T[f"grad.{k}"] = p.grad.detach().clone()

    with torch.no_grad():
        for dt, tag in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
            T[f"logits_{tag}_weights"] = rounded(model, dt)(ids).logits
            half = rounded(model, dt).to(dt)
            T[f"logits_{tag}"] = half(ids).logits.float()
        prompt = ids[:1, :5]
        T["generate.prompt"] = prompt
        T["generate.tokens"] = model.generate(
            prompt, max_new_tokens=8, do_sample=False, pad_token_id=0, eos_token_id=None
        )

    opt = build(OPTIONS, 2)
    path = save(opt, "options")
    assert not any(f.startswith("model-") for f in os.listdir(path))
    Vo = OPTIONS["vocab_size"]
    oids = torch.randint(1, Vo, (2, 10), generator=g)
    ologits = opt(oids).logits
    otargets = targets[:, :10].remainder(Vo)
    oloss = F.cross_entropy(ologits.reshape(-1, Vo), otargets.reshape(-1))
    oloss.backward()
    T["options.input_ids"], T["options.targets"] = oids, otargets
    T["options.logits"], T["options.loss"] = ologits.detach(), oloss.detach()
    for k, p in opt.named_parameters():
        if k in ("model.embed_tokens.weight", "model.layers.1.self_attn.k_proj.bias",
                 "model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.up_proj.bias",
                 "model.norm.weight"):
            T[f"options.grad.{k}"] = p.grad.detach().clone()

    for tag, rope in ROPE_CASES.items():
        cfg = LlamaConfig(hidden_size=32, num_attention_heads=4, max_position_embeddings=128,
                          rope_parameters=dict(rope))
        rotary = LlamaRotaryEmbedding(cfg)
        assert rotary.attention_scaling == 1.0
        T[f"rope.{tag}.inv_freq"] = rotary.inv_freq

    save_file({k: v.contiguous().clone() for k, v in T.items()}, os.path.join(OUT, "reference.safetensors"),
              metadata={"torch": torch.__version__,
                        "transformers": transformers.__version__})
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"{len(T)} reference tensors; loss {loss.item():.6f}; options loss {oloss.item():.6f}; "
          f"generated {T['generate.tokens'].tolist()}; fixtures {size / 1024:.0f} KiB in "
          f"{os.path.relpath(OUT, ROOT)}")
    print(json.dumps(sorted(os.listdir(os.path.join(OUT, "sharded")))))


if __name__ == "__main__":
    main()
