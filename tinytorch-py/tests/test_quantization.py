"""tinytorch.ao.quantization.quantize_dynamic against PyTorch's: on the layer of the Rust
tests' fixture (tinytorch/tests/fixtures/quant.safetensors, from
scripts/fixtures/gen_quant_fixtures.py: PyTorch's quantize_dynamic output beside the float output),
the int8 output is no further from float than PyTorch's own; models are converted like
PyTorch's (every nn.Linear swapped, the original untouched unless inplace)."""

import os

import pytest

import tinytorch as torch
import tinytorch.nn as nn
from tinytorch.ao.nn.quantized.dynamic import Linear as QLinear
from tinytorch.ao.quantization import quantize_dynamic

RUST_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "tinytorch", "tests",
                            "fixtures", "quant.safetensors")


def worst(a, b):
    return max(abs(x - y) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()))


def test_a_quantized_linear_is_as_close_to_float_as_pytorchs():
    fx = torch.load(RUST_FIXTURE)
    linear = nn.Linear(32, 16)
    with torch.no_grad():
        linear.weight.copy_(fx["w"])
        linear.bias.copy_(fx["linear.bias"])
    q = quantize_dynamic(nn.Sequential(linear), {nn.Linear}, dtype=torch.qint8)
    assert isinstance(q[0], QLinear) and isinstance(linear, nn.Linear)
    x = fx["linear.x"]
    ours = q(x)
    assert tuple(ours.shape) == (8, 16) and not ours.requires_grad
    e_ours, e_torch = worst(ours, fx["linear.float"]), worst(fx["linear.dynamic"], fx["linear.float"])
    assert e_ours <= e_torch, (e_ours, e_torch)
    # The float model still computes in float.
    assert worst(linear(x), fx["linear.float"]) < 1e-5


def test_models_are_converted_like_pytorchs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(),
                          nn.Sequential(nn.Linear(8, 4)))
    q = quantize_dynamic(model)
    assert [type(m).__name__ for m in q.modules()] == [
        "Sequential", "Flatten", "Linear", "ReLU", "Sequential", "Linear"]
    assert isinstance(q[1], QLinear) and isinstance(q[3][0], QLinear)
    assert isinstance(model[1], nn.Linear)  # not in place
    assert list(q.parameters()) == []
    x = torch.randn(5, 3, 4)
    assert worst(q(x), model(x)) < 0.05
    assert "qint8" in repr(q[1])
    # In place, and a bare Linear.
    same = quantize_dynamic(model, inplace=True)
    assert same is model and isinstance(model[1], QLinear)
    assert isinstance(quantize_dynamic(nn.Linear(3, 2)), QLinear)


def test_bad_requests_are_refused():
    with pytest.raises(NotImplementedError, match="only"):
        quantize_dynamic(nn.Linear(3, 2), {nn.Conv2d})
    with pytest.raises(NotImplementedError, match="dtype"):
        quantize_dynamic(nn.Linear(3, 2), dtype=torch.float16)
    q = quantize_dynamic(nn.Linear(3, 2))
    with pytest.raises(Exception, match="3 input features"):
        q(torch.randn(4, 5))
