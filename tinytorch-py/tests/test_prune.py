"""tinytorch.nn.utils.prune against torch.nn.utils.prune (fixtures/prune.safetensors: the
same weights give the same masks), the reparametrisation's names and training behaviour,
and F.distillation_loss."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
import tinytorch.nn.utils.prune as prune
from conftest import fixture


def fresh():
    fx = fixture("prune.safetensors")
    conv, linear = nn.Conv2d(4, 8, 3), nn.Linear(20, 10)
    with torch.no_grad():
        conv.weight.copy_(fx["conv.weight"])
        linear.weight.copy_(fx["linear.weight"])
    return fx, conv, linear


def same(got, want):
    assert got.tolist() == want.tolist()


def test_masks_equal_pytorchs():
    fx, conv, linear = fresh()
    prune.l1_unstructured(conv, "weight", amount=0.3)
    same(conv.weight_mask, fx["l1_conv_0.3"])
    prune.l1_unstructured(conv, "weight", amount=0.5)
    same(conv.weight_mask, fx["l1_conv_0.3_then_0.5"])
    prune.l1_unstructured(linear, "weight", amount=37)
    same(linear.weight_mask, fx["l1_linear_37"])
    fx, conv, linear = fresh()
    prune.global_unstructured([(conv, "weight"), (linear, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.6)
    same(conv.weight_mask, fx["global_0.6.conv"])
    same(linear.weight_mask, fx["global_0.6.linear"])
    fx, conv, linear = fresh()
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    same(conv.weight_mask, fx["ln2_conv_dim0_0.5"])
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    same(conv.weight_mask, fx["ln2_conv_dim0_0.5_then_0.5"])
    prune.ln_structured(linear, "weight", amount=3, n=1, dim=0)
    same(linear.weight_mask, fx["ln1_linear_dim0_3"])
    fx, conv, linear = fresh()
    prune.ln_structured(linear, "weight", amount=0.25, n=2, dim=-1)
    same(linear.weight_mask, fx["ln2_linear_dim1_0.25"])


def test_reparametrisation_keeps_pruned_weights_zero_while_training():
    _, _, linear = fresh()
    prune.l1_unstructured(linear, "weight", amount=0.5)
    assert sorted(linear.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert [n for n, _ in linear.named_parameters()] == ["bias", "weight_orig"]
    assert prune.is_pruned(linear)
    opt = torch.optim.SGD(linear.parameters(), lr=0.5, momentum=0.9)
    x, y = torch.randn(8, 20), torch.randint(0, 10, (8,))
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(linear(x), y).backward()
        opt.step()
    linear(x)  # the pre-hook recomputes weight from the trained original
    zeros = (linear.weight == 0).sum().item()
    assert zeros == 100
    assert (linear.weight_orig.grad * (1 - linear.weight_mask)).abs().sum().item() == 0
    prune.remove(linear, "weight")
    assert sorted(linear.state_dict()) == ["bias", "weight"]
    assert isinstance(linear.weight, nn.Parameter) and not prune.is_pruned(linear)
    assert (linear.weight == 0).sum().item() == 100


def test_bad_pruning_calls_raise():
    _, conv, linear = fresh()
    with pytest.raises(RuntimeError, match="in \\[0, 1\\]"):
        prune.l1_unstructured(conv, "weight", amount=1.5)
    with pytest.raises(ValueError, match="non-negative"):
        prune.l1_unstructured(conv, "weight", amount=-2)
    with pytest.raises(AttributeError, match="has to be pruned"):
        prune.l1_unstructured(conv, "nothing", amount=0.1)
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(linear, "weight")
    with pytest.raises(TypeError, match="L1Unstructured"):
        prune.global_unstructured([(conv, "weight")], pruning_method=prune.LnStructured,
                                  amount=0.1)
    with pytest.raises(RuntimeError, match="out of range"):
        prune.ln_structured(linear, "weight", amount=1, n=2, dim=-3)


def test_distillation_loss_is_hintons():
    s = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([[1.0, 1.5, -0.5], [0.0, 1.0, 2.0]], dtype=torch.float64)
    y = torch.tensor([0, 2])
    T, a = 3.0, 0.7
    want = (a * T * T * F.kl_div(F.log_softmax(s / T, -1), F.log_softmax(t / T, -1),
                                 reduction="batchmean", log_target=True)
            + (1 - a) * F.cross_entropy(s, y))
    got = F.distillation_loss(s, t, y, temperature=T, alpha=a)
    assert abs(got.item() - want.item()) < 1e-12
    got.backward()
    assert s.grad.shape == (2, 3)
    with pytest.raises(RuntimeError, match="temperature"):
        F.distillation_loss(s, t, y, temperature=0.0)
