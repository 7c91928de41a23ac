#!/usr/bin/env python3
"""Fixtures for tinytorch/tests/llm_families.rs: tiny random Qwen2 and Mistral models saved
by `transformers` (`save_pretrained`) and reference values computed by
`Qwen2ForCausalLM` / `MistralForCausalLM` with the eager attention.

Written under tinytorch/tests/fixtures/llm_families/:
  qwen2/    vocab 96, hidden 32, 2 layers, 4 heads, 2 KV heads (q/k/v biases, no o_proj bias)
  mistral/  the same sizes with a sliding window of 4 positions
  tokenizer.json in each: a Metaspace BPE of 96 tokens trained on TEXT below (what a
            Llama/Mistral tokenizer looks like, small enough for the tiny vocabulary)
  generate.json: for each family, `tinytorch generate --model-dir`'s reference: the prompt,
            its ids, and the ids and text of 12 greedy new tokens (transformers' generate,
            decoded by the tokenizer)
  reference.safetensors, for each family F:
    F.input_ids (2, 12) i64; F.logits (2, 12, 96): a full forward (12 positions: the window
    matters); F.targets (2, 12), F.loss (mean cross-entropy of the logits against them) and
    F.grad.<name> for every parameter; F.generate.prompt (1, 5), F.generate.tokens (1, 17): greedy `generate` of 12
    new tokens with the model's cache (Mistral's attends within its window all the way).

Usage: python scripts/gen_llm_family_fixtures.py   (needs torch and transformers; CI does not)
"""
import json
import os
import shutil

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from gen_llama_fixtures import spread_weights
from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "llm_families")

SIZES = dict(
    vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
    rms_norm_eps=1e-5, tie_word_embeddings=False,
)
FAMILIES = {
    "qwen2": (Qwen2Config, Qwen2ForCausalLM, {}),
    "mistral": (MistralConfig, MistralForCausalLM, dict(sliding_window=4)),
}


TEXT = [
    "the cat sat on the mat and the dog sat on the log",
    "a quick brown fox jumps over the lazy dog",
    "to be or not to be that is the question",
    "all that glitters is not gold",
]
PROMPT = "the cat sat"


def tokenizer():
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=SIZES["vocab_size"], special_tokens=["<unk>"])
    tok.train_from_iterator(TEXT, trainer)
    assert tok.get_vocab_size() <= SIZES["vocab_size"]
    return tok


def build(config_cls, model_cls, extra, seed):
    config = config_cls(**SIZES, **extra)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(config).eval()
    spread_weights(model)
    return model


def main():
    os.makedirs(OUT, exist_ok=True)
    T = {}
    tok = tokenizer()
    cli = {}
    for i, (name, (config_cls, model_cls, extra)) in enumerate(FAMILIES.items()):
        model = build(config_cls, model_cls, extra, seed=10 + i)
        path = os.path.join(OUT, name)
        shutil.rmtree(path, ignore_errors=True)
        model.save_pretrained(path)
        g = torch.Generator().manual_seed(20 + i)
        ids = torch.randint(0, SIZES["vocab_size"], (2, 12), generator=g)
        targets = torch.randint(0, SIZES["vocab_size"], (2, 12), generator=g)
        logits = model(ids).logits
        loss = F.cross_entropy(logits.reshape(-1, SIZES["vocab_size"]), targets.reshape(-1))
        loss.backward()
        T[f"{name}.input_ids"], T[f"{name}.targets"] = ids, targets
        T[f"{name}.logits"], T[f"{name}.loss"] = logits.detach().contiguous(), loss.detach()
        for pname, p in model.named_parameters():
            T[f"{name}.grad.{pname}"] = p.grad.contiguous()
        with torch.no_grad():
            prompt = torch.randint(0, SIZES["vocab_size"], (1, 5), generator=g)
            out = model.generate(prompt, max_new_tokens=12, do_sample=False, min_new_tokens=12,
                                 pad_token_id=0, eos_token_id=None)
            T[f"{name}.generate.prompt"] = prompt
            T[f"{name}.generate.tokens"] = out.contiguous()
            tok.save(os.path.join(path, "tokenizer.json"))
            ids = tok.encode(PROMPT).ids
            new = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False,
                                 min_new_tokens=12, pad_token_id=0, eos_token_id=None)[0, len(ids):]
            cli[name] = {"prompt": PROMPT, "prompt_ids": ids, "new_ids": new.tolist(),
                         "text": PROMPT + tok.decode(new.tolist())}
    save_file(T, os.path.join(OUT, "reference.safetensors"))
    with open(os.path.join(OUT, "generate.json"), "w") as f:
        json.dump(cli, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
