"""Layers against PyTorch (same weights, outputs and every gradient), Module registration,
state dicts and modes."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
import models
from conftest import assert_close, fixture, upstream

REF = fixture("nn.safetensors")
CASES = models.LAYER_CASES(torch, nn)


@pytest.mark.parametrize("name,make,x", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_pytorch(name, make, x):
    layer = make()
    with torch.no_grad():
        for i, (k, p) in enumerate(sorted(layer.named_parameters())):
            p.copy_(models.ramp(torch, tuple(p.shape), 0.3 / (1 + i)))
    x = x.clone().requires_grad_(x.is_floating_point())
    out = layer(x)
    assert_close(out, REF[f"{name}.out"], atol=1e-5, rtol=1e-4, what=f"{name} output")
    (out * upstream(out)).sum().backward()
    if f"{name}.grad.input" in REF:
        assert_close(x.grad, REF[f"{name}.grad.input"], atol=1e-5, rtol=1e-4, what=f"{name} dx")
    for k, p in layer.named_parameters():
        got = p.grad if p.grad is not None else torch.zeros_like(p)
        assert_close(got, REF[f"{name}.grad.{k}"], atol=1e-5, rtol=1e-4, what=f"{name} d{k}")
    for k, b in layer.named_buffers():
        assert_close(b, REF[f"{name}.buffer.{k}"], atol=1e-6, rtol=1e-5, what=f"{name} {k}")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 2)])
        self.gain = nn.Parameter(torch.ones(2))
        self.register_buffer("steps", torch.zeros(1))
        self.plain = 3  # not registered

    def forward(self, x):
        return self.layers[1](self.layers[0](x)) * self.gain


def test_attribute_registration_and_state_dict_keys():
    b = Block()
    assert [n for n, _ in b.named_parameters()] == [
        "gain", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "layers.0.weight",
        "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    assert list(b.state_dict()) == [
        "gain", "steps", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
        "bn.running_var", "bn.num_batches_tracked", "layers.0.weight", "layers.0.bias",
        "layers.1.weight", "layers.1.bias"]
    assert isinstance(b.gain, nn.Parameter) and b.gain.requires_grad
    assert b.plain == 3 and len(list(b.children())) == 3
    assert len(list(b.modules())) == 6


def test_load_state_dict_copies_and_checks_keys():
    a, b = Block(), Block()
    b.load_state_dict(a.state_dict())
    for (k, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert p.equal(q), k
    sd = a.state_dict()
    del sd["gain"]
    with pytest.raises(RuntimeError, match="Missing key"):
        b.load_state_dict(sd)
    missing, unexpected = b.load_state_dict(sd, strict=False)
    assert missing == ["gain"] and unexpected == []
    sd = a.state_dict()
    sd["conv.weight"] = torch.zeros(5)
    with pytest.raises(RuntimeError, match="size mismatch for conv.weight"):
        b.load_state_dict(sd)


def test_train_eval_zero_grad_and_sequential_indexing():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 1))
    assert isinstance(net[0], nn.Linear) and len(net) == 4 and isinstance(net[1:], nn.Sequential)
    net.eval()
    assert not net[2].training
    x = torch.ones(5, 3)
    assert net(x).equal(net(x))  # dropout is off in eval
    net.train()
    net(x).sum().backward()
    assert net[0].weight.grad is not None
    net.zero_grad()
    assert net[0].weight.grad is None


def test_to_keeps_parameter_objects():
    m = nn.Linear(2, 2)
    w = m.weight
    m.to(torch.float64)
    assert m.weight is w and w.dtype == torch.float64 and w.requires_grad


def test_repr_like_pytorch():
    assert repr(nn.Linear(3, 2)) == "Linear(in_features=3, out_features=2, bias=True)"
    assert repr(nn.Sequential(nn.ReLU())) == "Sequential(\n  (0): ReLU()\n)"


def test_functional_errors_are_python_exceptions():
    with pytest.raises(RuntimeError, match="linear"):
        F.linear(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(TypeError):
        F.relu("not a tensor")


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_move_and_cast_like_other_modules(kind):
    # .double() gives the Parameters f64 tensors and the layer computes with exactly those:
    # the same numbers as an f64 layer built with the same weights, gradients on the same
    # Parameter objects an optimizer was given before the cast.
    torch.manual_seed(0)
    layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True)
    params = list(layer.parameters())
    ref = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=torch.float64)
    ref.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    assert layer.double() is layer
    assert all(p.dtype == torch.float64 for p in layer.parameters())
    assert [id(p) for p in layer.parameters()] == [id(p) for p in params]
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    out, ref_out = layer(x)[0], ref(x)[0]
    assert out.dtype == torch.float64
    assert_close(out, ref_out, atol=0, rtol=0, what=f"{kind} after .double()")
    out.sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float64 for p in params)
    layer.to(torch.float32)
    assert layer(x.float())[0].dtype == torch.float32
    # Inside a container too: the parent's .double() reaches the layer's own _apply.
    model = nn.Sequential(nn.Linear(3, 3), layer)
    model.double()
    assert model[1](x)[0].dtype == torch.float64


def test_resampling_pooling_and_einsum_errors_name_the_op():
    img = torch.ones(1, 4, 3, 4)
    with pytest.raises(RuntimeError, match="einsum.*does not broadcast"):
        torch.einsum("i,i->", torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError, match="einsum.*more operands"):
        torch.einsum("ij", img, img)
    with pytest.raises(RuntimeError, match="einsum.*invalid subscript '1'"):
        torch.einsum("i1", torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="pixel_shuffle.*divisible by the square.*=4.* 9"):
        F.pixel_shuffle(img, 3)
    with pytest.raises(RuntimeError, match="pixel_unshuffle.*height.*=3"):
        F.pixel_unshuffle(img, 2)
    with pytest.raises(RuntimeError, match="interpolate.*align_corners"):
        F.interpolate(img, scale_factor=2, align_corners=True)
    with pytest.raises(RuntimeError, match="interpolate.*only one of size or scale_factor"):
        F.interpolate(img, size=4, scale_factor=2)
    with pytest.raises(RuntimeError, match="interpolate.*bilinear.*4-d"):
        F.interpolate(torch.ones(1, 2, 3), size=4, mode="bilinear")
    with pytest.raises(RuntimeError, match="max_pool1d.*padding 2.*kernel_size 3"):
        F.max_pool1d(torch.ones(1, 2, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match="adaptive_max_pool2d.*must be positive"):
        F.adaptive_max_pool2d(torch.ones(1, 2, 0, 3), 2)
