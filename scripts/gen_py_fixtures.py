# Regenerate with: python scripts/gen_py_fixtures.py  (needs torch; CI does not)
"""PyTorch reference values for the Python package's tests (tinytorch-py/tests):

- ops.safetensors: every expression of tests/cases.py evaluated by PyTorch, and for the
  expressions PyTorch differentiates, the gradient of ``(out * g).sum()`` (g fixed) with
  respect to each float input;
- nn.safetensors: layers' outputs and gradients for fixed weights and inputs;
- train.safetensors: the losses of short training runs (an MLP with SGD+momentum and StepLR,
  a CNN with Adam) from fixed initial weights;
- lr.safetensors: learning-rate sequences of the schedulers;
- profile.safetensors: for the test models of models.PROFILE_CASES, the forward FLOPs per
  module and in total as torch.utils.flop_counter.FlopCounterMode counts them, and the
  parameters per layer (state-dict prefix);
- prune.safetensors: torch.nn.utils.prune's masks on fixed weights of a Conv2d and a Linear
  (scripts/gen_prune_fixtures.py's cases).
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tinytorch-py", "tests")
sys.path.insert(0, TESTS)
from cases import CASES, inputs  # noqa: E402
import models  # noqa: E402

OUT = os.path.join(TESTS, "fixtures")


def upstream(out):
    """The fixed upstream gradient for an output: 0.1 * (1, 2, 3, ...) in its shape."""
    n = out.numel()
    return (torch.arange(1, n + 1, dtype=torch.float64) * 0.1).reshape(out.shape).to(out.dtype)


def ops():
    tensors = {}
    for name, expr in CASES:
        env = inputs(torch)
        out = eval(expr, {"torch": torch}, env)
        tensors[f"{name}.out"] = out.detach().contiguous()
        if out.requires_grad:
            (out * upstream(out)).sum().backward()
            for k, v in env.items():
                if v.requires_grad:
                    g = v.grad if v.grad is not None else torch.zeros_like(v)
                    tensors[f"{name}.grad.{k}"] = g.contiguous()
    save_file(tensors, os.path.join(OUT, "ops.safetensors"))
    return len(CASES)


def nn_layers():
    tensors = {}
    for name, make, x in models.LAYER_CASES(torch, nn):
        torch.manual_seed(0)
        layer = make()
        with torch.no_grad():
            for i, (k, p) in enumerate(sorted(layer.named_parameters())):
                # Deterministic weights both sides can build: a ramp scaled to the size.
                p.copy_(models.ramp(torch, p.shape, 0.3 / (1 + i)))
        x = x.clone().requires_grad_(x.dtype.is_floating_point)
        out = layer(x)
        tensors[f"{name}.out"] = out.detach().contiguous()
        if out.requires_grad:
            (out * upstream(out)).sum().backward()
            if x.requires_grad:
                tensors[f"{name}.grad.input"] = x.grad.contiguous()
            for k, p in layer.named_parameters():
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                tensors[f"{name}.grad.{k}"] = g.contiguous()
        for k, b in layer.named_buffers():
            tensors[f"{name}.buffer.{k}"] = b.detach().clone().contiguous()
    save_file(tensors, os.path.join(OUT, "nn.safetensors"))


def training():
    tensors = {}
    for name, losses in models.training_runs(torch, nn, F).items():
        tensors[name] = torch.tensor(losses, dtype=torch.float64)
    save_file(tensors, os.path.join(OUT, "train.safetensors"))


def schedulers():
    tensors = {}
    for name, lrs in models.lr_sequences(torch).items():
        tensors[name] = torch.tensor(lrs, dtype=torch.float64)
    save_file(tensors, os.path.join(OUT, "lr.safetensors"))


def profiles():
    from torch.utils.flop_counter import FlopCounterMode

    tensors = {}
    for name, make, shape in models.PROFILE_CASES(nn, F):
        model = make()
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.randn(*shape))
        scalar = lambda v: torch.tensor(int(v), dtype=torch.int64)  # noqa: E731
        tensors[f"{name}.total_flops"] = scalar(counter.get_total_flops())
        for module, counts in counter.get_flop_counts().items():
            if "." in module:  # "Global" and the model's own class name hold the totals
                tensors[f"{name}.flops.{module.split('.', 1)[1]}"] = scalar(sum(counts.values()))
        for pname, p in model.named_parameters():
            key = f"{name}.parameters.{pname.rsplit('.', 1)[0] if '.' in pname else ''}"
            tensors[key] = scalar((tensors[key].item() if key in tensors else 0) + p.numel())
    save_file(tensors, os.path.join(OUT, "profile.safetensors"))


def pruning():
    from gen_prune_fixtures import masks

    save_file(masks(), os.path.join(OUT, "prune.safetensors"))


if __name__ == "__main__":
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    n = ops()
    nn_layers()
    training()
    schedulers()
    profiles()
    pruning()
    print(f"{n} op cases; fixtures in {os.path.relpath(OUT, ROOT)} (torch {torch.__version__})")
