"""Shared helpers of the package's tests: fixtures written by PyTorch
(scripts/fixtures/gen_py_fixtures.py) read with TinyTorch's own ``load``, and a comparison that
reports the worst element."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import tinytorch as torch  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture(name):
    return torch.load(os.path.join(FIXTURES, name))


def upstream(out):
    """The fixed upstream gradient the fixture scripts use: 0.1, 0.2, ... in out's shape."""
    n = out.numel()
    return (torch.arange(1, n + 1, dtype=torch.float64, device=out.device) * 0.1).reshape(
        *out.shape).to(out.dtype)


def assert_close(got, want, atol=1e-5, rtol=1e-5, what=""):
    assert isinstance(got, torch.Tensor), f"{what}: got {type(got).__name__}, not a Tensor"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} but PyTorch gives {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), (
        f"{what}: shape {tuple(got.shape)} but PyTorch gives {tuple(want.shape)}")
    g, w = got.detach().double().reshape(-1).tolist(), want.double().reshape(-1).tolist()
    bad = [(k, a, b) for k, (a, b) in enumerate(zip(g, w))
           if not (a == b or abs(a - b) <= atol + rtol * abs(b) or (a != a and b != b))]
    assert not bad, f"{what}: {len(bad)} of {len(g)} elements differ, first {bad[:3]}"


def check_op_case(name, expr, env, ref, device=None, **tol):
    """Evaluate the cases.py expression ``expr`` over the inputs ``env`` and compare its
    value, then (where ``ref`` has them) the gradients of ``(out * upstream(out)).sum()``
    with respect to the inputs, with PyTorch's in ``ref`` (ops.safetensors); ``tol``:
    assert_close's tolerances. With ``device``, the result and the gradients must be on it
    (they are compared on the CPU)."""

    def on_cpu(t, what):
        if device is None:
            return t
        assert t.device == torch.device(device), f"{name}: {what} on {t.device}"
        return t.cpu()

    out = eval(expr, {"torch": torch}, env)
    assert_close(on_cpu(out, "result"), ref[f"{name}.out"], what=f"{name}: {expr}", **tol)
    grads = {k[len(name) + 6:]: v for k, v in ref.items() if k.startswith(f"{name}.grad.")}
    if not grads:
        return
    (out * upstream(out)).sum().backward()
    for k, want in grads.items():
        got = env[k].grad if env[k].grad is not None else torch.zeros_like(env[k])
        assert_close(on_cpu(got, f"grad of {k}"), want, what=f"{name}: grad of {k}", **tol)


@pytest.fixture
def close():
    return assert_close
