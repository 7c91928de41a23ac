"""tinytorch.profile: a Python model's layer rows against PyTorch's FlopCounterMode
(fixtures/profile.safetensors), and the memory counters."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
from conftest import fixture
from models import PROFILE_CASES


@pytest.mark.parametrize("name,make,shape", PROFILE_CASES(nn, F))
def test_summary_counts_what_pytorch_counts(name, make, shape):
    want = {k[len(name) + 1:]: int(v.item()) for k, v in fixture("profile.safetensors").items()
            if k.startswith(name + ".")}
    model = make()
    p = torch.profile.summary(model, torch.randn(*shape))
    assert p.total["flops"] == want["total_flops"]
    assert p.total["parameters"] == sum(q.numel() for q in model.parameters())
    rows = {r["name"]: r for r in p.rows if r["name"] is not None}
    for key, value in want.items():
        kind, _, layer = key.partition(".")
        if kind == "parameters":
            assert rows[layer]["parameters"] == value, key
        elif kind == "flops" and layer in rows:  # leaf layers; containers sum them
            assert rows[layer]["flops"] == value, key
    assert all(q.grad is None for q in model.parameters()), "gradients left as they were"
    assert "FLOPs" in str(p) and "roofline" in str(p)
    assert p.phases["forward"]["peak_bytes"] > 0 and p.machine["ridge"] > 0


def test_the_root_modules_own_parameter_is_a_row_of_its_own():
    mlp = PROFILE_CASES(nn, F)[0][1]()
    rows = torch.profile.summary(mlp, torch.randn(5, 12)).rows
    assert [r["name"] for r in rows] == ["fc1", None, "", "fc2"]  # fc1, relu, * scale, fc2
    assert [r["type"] for r in rows] == ["addmm", "relu", "mul", "addmm"]
    assert rows[2]["parameters"] == 16


def test_an_exception_in_forward_comes_back_as_itself():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            raise KeyError("no such thing")

    with pytest.raises(KeyError, match="no such thing"):
        torch.profile.summary(Broken(), torch.randn(1, 2))


def test_memory_counters_follow_tensors():
    torch.profile.reset_peak_memory_stats()
    before = torch.profile.memory_allocated()
    x = torch.zeros(1000, dtype=torch.float64)
    assert torch.profile.memory_allocated() == before + 8000
    del x
    assert torch.profile.memory_allocated() == before
    assert torch.profile.max_memory_allocated("cpu") >= before + 8000
    torch.profile.reset_peak_memory_stats(torch.device("cpu"))
    assert torch.profile.max_memory_allocated() == before
    assert torch.cuda.memory_allocated() == 0  # no GPU tensors
    with pytest.raises(RuntimeError):  # a bad device string, as torch.device("tpu")
        torch.profile.memory_allocated("tpu")
