"""Reference masks for the pruning tests (tinytorch/tests/prune.rs) from torch.nn.utils.prune.

On fixed random weights of a Conv2d(4, 8, 3) and a Linear(20, 10): l1_unstructured (a
fraction, a count, and a second round on top of the first), global_unstructured over both,
and ln_structured (L2 and L1 over output channels, L2 over input channels of the Linear,
and a second round). Writes tinytorch/tests/fixtures/prune.safetensors: the weights
(`conv.weight`, `linear.weight`) and one mask per case. scripts/gen_py_fixtures.py writes
the same tensors for the Python package's tests.

    python scripts/gen_prune_fixtures.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.utils.prune as prune
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "prune.safetensors")


def fresh():
    torch.manual_seed(0)
    return nn.Conv2d(4, 8, 3), nn.Linear(20, 10)


def masks():
    """The weights and every case's mask, by name."""
    conv, linear = fresh()
    out = {"conv.weight": conv.weight.detach().clone(),
           "linear.weight": linear.weight.detach().clone()}

    conv, linear = fresh()
    prune.l1_unstructured(conv, "weight", amount=0.3)
    out["l1_conv_0.3"] = conv.weight_mask.clone()
    prune.l1_unstructured(conv, "weight", amount=0.5)  # half of what is left
    out["l1_conv_0.3_then_0.5"] = conv.weight_mask.clone()
    prune.l1_unstructured(linear, "weight", amount=37)
    out["l1_linear_37"] = linear.weight_mask.clone()

    conv, linear = fresh()
    prune.global_unstructured([(conv, "weight"), (linear, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.6)
    out["global_0.6.conv"] = conv.weight_mask.clone()
    out["global_0.6.linear"] = linear.weight_mask.clone()

    conv, linear = fresh()
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    out["ln2_conv_dim0_0.5"] = conv.weight_mask.clone()
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)  # half of the 4 left
    out["ln2_conv_dim0_0.5_then_0.5"] = conv.weight_mask.clone()
    prune.ln_structured(linear, "weight", amount=3, n=1, dim=0)
    out["ln1_linear_dim0_3"] = linear.weight_mask.clone()
    conv, linear = fresh()
    prune.ln_structured(linear, "weight", amount=0.25, n=2, dim=1)
    out["ln2_linear_dim1_0.25"] = linear.weight_mask.clone()
    return {k: v.contiguous() for k, v in out.items()}


def main():
    save_file(masks(), OUT)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
