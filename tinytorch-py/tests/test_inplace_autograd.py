"""In-place ops on autograd-graph tensors against PyTorch: every case of inplace_cases.py
(ReLU(inplace=True) in an MLP, ``y += f(y)``, masked_fill_ in attention, chains, setitem on
a non-leaf, copy_/fill_/zero_, ``.data`` and ``detach()`` aliasing) gives PyTorch's outputs
and gradients (fixtures/inplace_autograd.json, made by scripts/fixtures/gen_inplace_fixtures.py),
and the errors come where PyTorch raises them, with its messages."""

import json
import os

import pytest

import tinytorch as torch
from inplace_cases import CASES, MESSAGES, leaf

_PATH = os.path.join(os.path.dirname(__file__), "fixtures", "inplace_autograd.json")
with open(_PATH) as _f:
    DATA = json.load(_f)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_and_gradients_match_pytorch(name):
    got = CASES[name](torch)
    want = DATA["cases"][name]
    assert sorted(got) == sorted(want)
    tol = 1e-10 if name.endswith("f64") else 2e-5
    for key, ref in want.items():
        t = got[key]
        assert t is not None, f"{name}: {key} is None"
        assert list(t.shape) == ref["shape"], f"{name}: {key}"
        vals = t.detach().double().reshape(-1).tolist()
        bad = [(i, a, b) for i, (a, b) in enumerate(zip(vals, ref["values"]))
               if not abs(a - b) <= tol + tol * abs(b)]
        assert not bad, f"{name}: {key}: {len(bad)} differ, first {bad[:3]}"


def test_version_error_is_pytorchs_message_at_backward():
    want = DATA["messages"]["version_error"]
    got = MESSAGES["version_error"](torch)
    assert got is not None
    # The same text up to PyTorch's hint (which names its anomaly mode).
    assert want.split(" Hint:")[0] in got, got


def test_leaf_errors_are_pytorchs():
    x = leaf(torch, (3,), 0.0)
    with pytest.raises(RuntimeError,
                       match="a leaf Variable that requires grad is being used in an in-place "
                             "operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        torch.nn.ReLU(inplace=True)(x)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x += 1
    # PyTorch's add_ on a leaf reaches its view check first: the fixture holds that text.
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0] = 2.0
    assert DATA["messages"]["leaf_error"].endswith(
        "leaf Variable that requires grad is being used in an in-place operation.")
    # Under no_grad (optimizers) in-place writes on leaves stay allowed.
    with torch.no_grad():
        x.mul_(2)
        x[0] = 1.0
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


def test_version_counter_matches_pytorch():
    assert MESSAGES["versions"](torch) == DATA["messages"]["versions"]


def test_the_error_comes_at_backward_not_at_the_in_place_op():
    x = leaf(torch, (3,), 0.5)
    y = x.sigmoid()           # saves its output
    y.mul_(2)                 # allowed here
    assert y._version == 1 and y.grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_detach_shares_the_version_counter_and_data_does_not():
    x = leaf(torch, (3,), 0.5)
    y = x.exp()
    d = y.detach()
    d.zero_()
    assert y.tolist() == [0.0, 0.0, 0.0] and y._version == 1
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 1"):
        y.sum().backward()
    x = leaf(torch, (3,), 0.5)
    y = x.exp()
    y.data.zero_()
    assert y._version == 0
    y.sum().backward()        # not seen by autograd, as in PyTorch
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_in_place_ops_return_the_tensor_and_rebase_grad_fn():
    x = leaf(torch, (4,), 0.2)
    y = x * 2
    assert y.add_(1) is y
    assert y.grad_fn.name() == "AddBackward0"
    assert torch.nn.functional.relu(y, inplace=True)._version == 2
    assert y.grad_fn.name() == "ReluBackward0"
    assert repr(torch.nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(torch.nn.ReLU()) == "ReLU()"
