"""The widely used names (ten or more repositories of the usage table) that no other test
exercised, each checked against its definition: elementwise math, in-place fills and
initialisers, shape helpers, activations and normalisation functions, module registration,
and the device and mode switches."""

import math

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F


def approx(t, want, tol=1e-6):
    return t.reshape(-1).tolist() == pytest.approx(want, abs=tol)


def test_elementwise_math():
    x = torch.tensor([0.5, 1.0, 4.0])
    assert approx(x.pow(2), [0.25, 1.0, 16.0]) and approx(torch.pow(x, 0.5), [0.5 ** 0.5, 1, 2])
    assert approx(torch.pow(2.0, x), [2 ** 0.5, 2.0, 16.0])
    with pytest.raises(TypeError, match="argument 'input' .* must be Tensor, not float"):
        torch.exp(2.0)
    assert approx(torch.cos(x), [math.cos(v) for v in (0.5, 1.0, 4.0)])
    assert approx(x.cos(), [math.cos(v) for v in (0.5, 1.0, 4.0)])
    assert approx(torch.rsqrt(x), [1 / math.sqrt(v) for v in (0.5, 1.0, 4.0)])
    assert torch.outer(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])).tolist() == [
        [3, 4, 5], [6, 8, 10]]
    assert torch.tensor([0, 3, 0, 5]).nonzero().tolist() == [[1], [3]]
    assert torch.is_tensor(x) and not torch.is_tensor([1.0])


def test_in_place_fills_and_initialisers():
    t = torch.empty(2, 3)
    assert t.fill_(2.5) is t and t.tolist() == [[2.5] * 3] * 2
    assert t.zero_().tolist() == [[0.0] * 3] * 2
    t = torch.tensor([-3.0, 0.5, 3.0])
    assert t.clamp_(-1, 1).tolist() == [-1.0, 0.5, 1.0]
    t.div_(2)
    assert t.tolist() == [-0.5, 0.25, 0.5]
    torch.manual_seed(0)
    u = torch.empty(20000).uniform_(-2, 2)
    assert float(u.min()) >= -2 and float(u.max()) < 2 and abs(float(u.mean())) < 0.05
    n = torch.empty(20000).normal_(1.0, 3.0)
    assert abs(float(n.mean()) - 1.0) < 0.1 and abs(float(n.std()) - 3.0) < 0.1
    w = torch.empty(64, 32)
    nn.init.normal_(w, 0.0, 0.02)
    assert abs(float(w.std()) - 0.02) < 0.002
    nn.init.constant_(w, 0.3)
    assert float(w.min()) == float(w.max()) == pytest.approx(0.3)
    nn.init.zeros_(w)
    assert float(w.abs().max()) == 0.0
    nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / (64 + 32))
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = math.sqrt(6 / ((1 + 5) * 32))
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound


def test_shape_helpers():
    x = torch.arange(6.0).reshape(2, 3)
    assert [r.tolist() for r in x.unbind(0)] == [[0, 1, 2], [3, 4, 5]]
    assert x.view_as(torch.zeros(3, 2)).shape == (3, 2)
    assert torch.tensor([[1.0], [2.0]]).expand_as(x).tolist() == [[1, 1, 1], [2, 2, 2]]
    assert torch.tensor([1, 2]).type_as(x).dtype == torch.float32
    assert torch.ones_like(x).tolist() == [[1.0] * 3] * 2
    r = torch.randn_like(x)
    assert r.shape == x.shape and r.dtype == x.dtype
    assert F.pad(torch.ones(1, 2), (1, 2)).tolist() == [[0, 1, 1, 0, 0]]
    assert F.one_hot(torch.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]


def test_activations_and_normalisation():
    x = torch.tensor([-1.0, 0.0, 2.0])
    sig = [1 / (1 + math.exp(1)), 0.5, 1 / (1 + math.exp(-2))]
    assert approx(nn.Sigmoid()(x), sig)
    assert approx(nn.SiLU()(x), [v * s for v, s in zip([-1.0, 0.0, 2.0], sig)])
    assert approx(F.silu(x), [v * s for v, s in zip([-1.0, 0.0, 2.0], sig)])
    assert approx(nn.LeakyReLU(0.1)(x), [-0.1, 0.0, 2.0])
    assert approx(F.softplus(x), [math.log1p(math.exp(v)) for v in (-1.0, 0.0, 2.0)])
    v = torch.tensor([[3.0, 4.0]])
    assert approx(F.normalize(v, dim=1), [0.6, 0.8])
    ln = F.layer_norm(torch.tensor([[1.0, 2.0, 3.0]]), (3,))
    sd = math.sqrt(2 / 3 + 1e-5)
    assert approx(ln, [-1 / sd, 0.0, 1 / sd], 1e-5)
    bn = nn.BatchNorm1d(2)
    out = bn(torch.tensor([[1.0, 10.0], [3.0, 30.0]]))
    assert approx(out, [-1, -1, 1, 1], 1e-3)
    assert approx(bn.running_mean, [0.2, 2.0])
    loss = nn.BCEWithLogitsLoss()(torch.tensor([0.0, 2.0]), torch.tensor([1.0, 0.0]))
    assert loss.item() == pytest.approx((math.log(2) + math.log1p(math.exp(2))) / 2, rel=1e-6)


def test_module_registration_and_modes():
    m = nn.Module()
    m.add_module("enc", nn.Linear(2, 2))
    m.add_module("act", nn.ReLU())
    assert [n for n, _ in m.named_children()] == ["enc", "act"]
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.Identity()})
    assert list(d.keys()) == ["a", "b"] and "a.weight" in d.state_dict()
    with torch.inference_mode():
        y = nn.Linear(2, 1)(torch.ones(1, 2))
    assert not y.requires_grad
    assert torch.distributed.ReduceOp.SUM is not None
    if not torch.cuda.is_available():
        err = AssertionError if not torch.backends.cuda.is_built() else RuntimeError
        with pytest.raises(err):
            torch.cuda.set_device(0)
