"""Reference FLOP and parameter counts for the profiler (tests/profile.rs), from PyTorch.

For each model of scripts/torch_models.py: the forward FLOPs that
torch.utils.flop_counter.FlopCounterMode counts (2 per multiply-add; matmul, conv,
attention), per module and in total, and the parameter count per layer (state-dict prefix).
Written to tinytorch/tests/fixtures/profile.json.

    python scripts/gen_profile_fixtures.py
"""
import json
import os

import torch
from torch.utils.flop_counter import FlopCounterMode

import torch_models

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "profile.json")

CASES = [
    ("mlp", torch_models.mlp, (1, 28, 28)),
    ("seed-cnn", torch_models.seed_cnn, (1, 28, 28)),
    ("lenet5", torch_models.lenet5, (1, 28, 28)),
    ("resnet20", torch_models.resnet20, (3, 32, 32)),
]
BATCH = 8


def main():
    out = {"batch": BATCH, "models": {}}
    for name, make, (c, h, w) in CASES:
        model = make(channels=c, height=h, width=w, classes=10)
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.randn(BATCH, c, h, w))
        per_module = {}
        for module, counts in counter.get_flop_counts().items():
            # Keys are "Global" and dotted paths below the model's class name.
            if module == "Global":
                continue
            path = module.split(".", 1)[1] if "." in module else None
            if path is None:
                continue
            per_module[path] = int(sum(counts.values()))
        params = {}
        for pname, p in model.named_parameters():
            layer = pname.rsplit(".", 1)[0] if "." in pname else ""
            params[layer] = params.get(layer, 0) + p.numel()
        out["models"][name] = {
            "input": [BATCH, c, h, w],
            "total_flops": int(counter.get_total_flops()),
            "layer_flops": per_module,
            "layer_parameters": params,
            "total_parameters": sum(p.numel() for p in model.parameters()),
        }
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
