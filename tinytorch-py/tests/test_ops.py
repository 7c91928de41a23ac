"""Every expression of cases.py against PyTorch: values, dtypes, shapes, and the gradients of
each float input."""

import pytest

import tinytorch as torch
from cases import CASES, inputs
from conftest import assert_close, fixture, upstream

REF = fixture("ops.safetensors")


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(name, expr):
    env = inputs(torch)
    out = eval(expr, {"torch": torch}, env)
    assert_close(out, REF[f"{name}.out"], what=f"{name}: {expr}")
    grads = {k[len(name) + 6:]: v for k, v in REF.items() if k.startswith(f"{name}.grad.")}
    if not grads:
        return
    (out * upstream(out)).sum().backward()
    for k, want in grads.items():
        got = env[k].grad if env[k].grad is not None else torch.zeros_like(env[k])
        assert_close(got, want, what=f"{name}: grad of {k}")
