"""Keyword arguments real programs pass (the kwargs column of the usage table): NumPy's
axis=/keepdims= aliases, arange/randint bounds by keyword, dtype= on cumsum and softmax,
output_size=, split_size=, flip(*dims), memory_format=/pin_memory=/non_blocking= (accepted,
the values unchanged), the optimizers' foreach/fused switches, autograd.grad(only_inputs=),
torch.load(mmap=), scaled_dot_product_attention(enable_gqa=)."""

import pytest

import tinytorch as torch
import tinytorch.nn.functional as F


def test_numpy_aliases_on_reductions():
    x = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(x.sum(axis=1), x.sum(dim=1))
    assert tuple(x.sum(axis=1, keepdims=True).shape) == (2, 1)
    assert torch.equal(x.mean(axis=0, keepdims=True), x.mean(0, keepdim=True))
    assert x.max(axis=1, keepdims=True).values.tolist() == [[2.0], [5.0]]
    assert x.min(axis=0).values.tolist() == [0.0, 1.0, 2.0]
    assert x.argmax(axis=1).tolist() == [2, 2] and x.argmin(axis=1).tolist() == [0, 0]
    assert (x > 0).all(axis=1).tolist() == [False, True]
    assert (x > 4).any(axis=0, keepdims=True).tolist() == [[False, False, True]]
    assert x.amax(axis=0).tolist() == [3.0, 4.0, 5.0] and x.prod(axis=1).tolist() == [0.0, 60.0]
    assert torch.cat([x, x], axis=0).shape == (4, 3) and torch.stack([x, x], axis=1).shape == (
        2, 2, 3)


def test_creation_keywords():
    assert torch.arange(start=2, end=5).tolist() == [2, 3, 4]
    assert torch.arange(end=3).tolist() == [0, 1, 2]
    assert torch.arange(0, 10, step=4).tolist() == [0, 4, 8]
    assert torch.arange(1, end=3).tolist() == [1, 2]
    with pytest.raises(TypeError, match="end"):
        torch.arange(step=2)
    r = torch.randint(low=5, high=7, size=(100,))
    assert set(r.tolist()) <= {5, 6}
    assert set(torch.randint(3, high=4, size=(10,)).tolist()) == {3}
    assert set(torch.randint(high=2, size=(50,)).tolist()) <= {0, 1}
    assert torch.tensor([1, 2], pin_memory=False).tolist() == [1, 2]
    assert torch.empty(2, 3, memory_format=torch.contiguous_format).shape == (2, 3)
    assert torch.zeros(2, pin_memory=True).tolist() == [0.0, 0.0]
    assert torch.zeros_like(torch.ones(2, 2), memory_format=torch.preserve_format).shape == (2, 2)


def test_method_keywords():
    x = torch.tensor([1, 2, 3])
    assert x.cumsum(0, dtype=torch.float64).dtype == torch.float64
    logits = torch.tensor([1.0, 2.0])
    assert logits.softmax(-1, dtype=torch.float64).dtype == torch.float64
    assert logits.log_softmax(0, torch.float64).dtype == torch.float64
    assert x.repeat_interleave(2, dim=0, output_size=6).tolist() == [1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError, match="output_size"):
        x.repeat_interleave(2, dim=0, output_size=5)
    assert [p.tolist() for p in x.split(split_size=2)] == [[1, 2], [3]]
    m = torch.arange(4).reshape(2, 2)
    assert m.flip(0, 1).tolist() == [[3, 2], [1, 0]]
    assert m.flip((0,)).tolist() == [[2, 3], [0, 1]] and m.flip(dims=[1]).tolist() == [[1, 0],
                                                                                        [3, 2]]
    assert torch.flip(m, [0]).tolist() == [[2, 3], [0, 1]]
    img = torch.ones(1, 3, 2, 2)
    assert torch.equal(img.contiguous(memory_format=torch.channels_last), img)
    assert torch.equal(img.to(memory_format=torch.channels_last), img)
    assert torch.equal(img.to("cpu", non_blocking=True), img)
    y = torch.zeros(1, 3, 2, 2)
    y.copy_(img, non_blocking=True)
    assert torch.equal(y, img)
    assert repr(torch.channels_last) == "torch.channels_last"


def test_optimizer_switches():
    w = torch.zeros(2, requires_grad=True)
    opt = torch.optim.AdamW([w], lr=0.1, fused=True)
    assert opt.param_groups[0]["fused"] is True and opt.param_groups[0]["foreach"] is None
    w.sum().backward()
    opt.step()
    assert w.tolist() == pytest.approx([-0.1, -0.1], rel=1e-5)
    torch.optim.SGD([w], lr=0.1, foreach=True, momentum=0.9).step()
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        torch.optim.Adam([w], fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="differentiable"):
        torch.optim.Adam([w], differentiable=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        torch.optim.Adam([w], fuse=True)


def test_autograd_load_and_attention_keywords(tmp_path):
    x = torch.tensor([2.0], requires_grad=True)
    (g,) = torch.autograd.grad((x * x).sum(), x, only_inputs=True)
    assert g.tolist() == [4.0]
    torch.save({"a": torch.ones(2)}, str(tmp_path / "w.pt"))
    assert torch.load(str(tmp_path / "w.pt"), mmap=True)["a"].tolist() == [1.0, 1.0]
    torch.manual_seed(0)
    q = torch.randn(1, 4, 3, 8)
    k = torch.randn(1, 2, 3, 8)
    v = torch.randn(1, 2, 3, 8)
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    want = F.scaled_dot_product_attention(q, k.repeat_interleave(2, -3),
                                          v.repeat_interleave(2, -3))
    assert torch.allclose(out, want)
