"""The PyTorch reference values of scripts/fixtures/gen_py_api_fixtures.py (fixtures/py_api.json) and
the deterministic numbers both sides build their inputs from."""

import json
import math
import os

import tinytorch as torch

_PATH = os.path.join(os.path.dirname(__file__), "fixtures", "py_api.json")
with open(_PATH) as _f:
    DATA = json.load(_f)


def values(n, phase):
    """n deterministic numbers in (-0.5, 0.5): 0.5 * sin(0.37 * i + phase)."""
    return [0.5 * math.sin(0.37 * i + phase) for i in range(n)]


def filled(shape, phase, dtype=torch.float32):
    """A tensor of ``shape`` holding ``values(numel, phase)``."""
    n = math.prod(shape)
    return torch.tensor(values(n, phase), dtype=dtype).reshape(*shape)


def upstream(t):
    """0.1, 0.2, ... in ``t``'s shape and dtype."""
    n = t.numel()
    return (torch.arange(1, n + 1, dtype=torch.float64) * 0.1).reshape(*t.shape).to(t.dtype)


def assert_list_close(got, want, atol=1e-5, rtol=1e-5, what=""):
    """``got`` (a tensor or list) equals the flat list ``want`` within tolerance."""
    if isinstance(got, torch.Tensor):
        got = got.detach().double().reshape(-1).tolist()
    assert len(got) == len(want), f"{what}: {len(got)} values, want {len(want)}"
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(got, want))
           if not abs(a - b) <= atol + rtol * abs(b)]
    assert not bad, f"{what}: {len(bad)} of {len(want)} differ, first {bad[:3]}"
