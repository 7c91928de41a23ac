"""Tensor methods and torch names that real programs use: .type() and the legacy tensor
types, new_zeros/new_ones/new_full/new_empty/new_tensor, is_xpu, f-string formatting of 0-d
tensors, range indexing, masked_fill_, add_ with a tensor alpha, the math constants,
finfo/iinfo."""

import math

import pytest

import tinytorch as torch


def test_type_names_and_casts():
    x = torch.ones(3)
    assert x.type() == "torch.FloatTensor"
    assert torch.ones(3, dtype=torch.int64).type() == "torch.LongTensor"
    assert torch.ones(1, dtype=torch.bool).type() == "torch.BoolTensor"
    assert x.type(torch.int64).dtype == torch.int64
    assert x.type("torch.LongTensor").tolist() == [1, 1, 1]
    assert x.type(torch.DoubleTensor).dtype == torch.float64
    assert x.type(torch.float32) is x
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.ComplexTensor")


def test_legacy_tensor_types():
    t = torch.FloatTensor([1, 2])
    assert t.dtype == torch.float32 and t.tolist() == [1.0, 2.0]
    assert tuple(torch.LongTensor(2, 3).shape) == (2, 3)
    assert torch.LongTensor(2, 3).dtype == torch.int64
    assert isinstance(t, torch.FloatTensor) and not isinstance(t, torch.LongTensor)
    assert torch.FloatTensor(t) is t
    with pytest.raises(TypeError, match="expected torch.float32"):
        torch.FloatTensor(torch.tensor([1]))
    assert torch.cuda.FloatTensor.dtype == torch.float32
    assert not isinstance(t, torch.cuda.FloatTensor)


def test_new_constructors():
    x = torch.ones(2, dtype=torch.float64)
    z = x.new_zeros(3)
    assert z.dtype == torch.float64 and z.tolist() == [0.0, 0.0, 0.0]
    assert tuple(x.new_zeros((3, 2)).shape) == (3, 2)
    assert x.new_ones(2, 3, dtype=torch.int64).tolist() == [[1, 1, 1], [1, 1, 1]]
    assert x.new_full((2,), 3).tolist() == [3.0, 3.0] and x.new_full((2,), 3).dtype == \
        torch.float64
    assert tuple(x.new_empty(4).shape) == (4,)
    n = x.new_tensor([1, 2])
    assert n.dtype == torch.float64 and n.tolist() == [1.0, 2.0]
    src = torch.tensor([1.0], requires_grad=True)
    copy = x.new_tensor(src)
    assert not copy.requires_grad and copy.dtype == torch.float64
    assert x.new_zeros(2, requires_grad=True).requires_grad
    assert x.is_xpu is False and x.is_mps is False and x.is_sparse is False


def test_format():
    loss = torch.tensor(1.23456)
    assert f"{loss:.4f}" == "1.2346"
    assert f"{torch.tensor(3):5}" == "    3"
    assert f"{torch.tensor(3):d}" == "3"
    assert f"{torch.tensor([1.0])}" == str(torch.tensor([1.0]))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(torch.tensor([1.0]), ".2f")


def test_range_indexing():
    logp = torch.arange(12.0).reshape(3, 4)
    target = torch.tensor([3, 0, 2])
    assert logp[range(3), target].tolist() == [3.0, 4.0, 10.0]
    assert logp[range(1, 3)].tolist() == logp[1:3].tolist()


def test_masked_fill_in_place():
    x = torch.zeros(2, 3)
    with torch.no_grad():
        out = x.masked_fill_(torch.tensor([True, False, True]), -1.0)
    assert out is x and x.tolist() == [[-1.0, 0.0, -1.0], [-1.0, 0.0, -1.0]]
    x.masked_fill_(torch.tensor([[False, True, False], [False, False, False]]),
                   torch.tensor(5.0))
    assert x.tolist() == [[-1.0, 5.0, -1.0], [-1.0, 0.0, -1.0]]
    with pytest.raises(RuntimeError, match="masked_fill_"):
        torch.zeros(3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 1.0)


def test_add_with_tensor_alpha():
    x = torch.ones(3)
    x.add_(torch.ones(3), alpha=torch.tensor(2.0))
    assert x.tolist() == [3.0, 3.0, 3.0]
    assert torch.ones(2).add(torch.ones(2), alpha=torch.tensor(3)).tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        torch.ones(2).add_(torch.ones(2), alpha=torch.ones(2))


def test_constants_and_dtype_info():
    assert torch.inf == math.inf and math.isnan(torch.nan)
    assert torch.pi == math.pi and torch.e == math.e
    assert torch.finfo(torch.float32).eps == 2.0 ** -23
    assert torch.finfo(torch.float16).max == 65504.0
    assert torch.finfo().min == -torch.finfo(torch.float32).max
    assert torch.finfo(torch.bfloat16).tiny == 2.0 ** -126
    assert torch.iinfo(torch.int64).max == 2 ** 63 - 1 and torch.iinfo(torch.uint8).min == 0
    with pytest.raises(TypeError, match="floating point"):
        torch.finfo(torch.int64)
    with pytest.raises(TypeError, match="integer"):
        torch.iinfo(torch.float32)


def test_unfold_windows_gradients_and_errors():
    # Values and gradients checked against PyTorch 2.15 (same expressions).
    x = torch.arange(24.0, dtype=torch.float64).reshape(2, 3, 4).requires_grad_(True)
    cases = [((2, 2, 1), (2, 3, 3, 2), 414.0,
              [0.0, 3.0, 7.0, 5.0, 6.0, 15.0, 19.0, 11.0, 12.0, 27.0, 31.0, 17.0]),
             ((1, 2, 2), (2, 1, 4, 2), 152.0,
              [0.0, 2.0, 4.0, 6.0, 1.0, 3.0, 5.0, 7.0, 0.0, 0.0, 0.0, 0.0])]
    for args, shape, total, grad in cases:
        y = x.unfold(*args)
        w = torch.arange(y.numel(), dtype=torch.float64).reshape(y.shape)
        (y * w).sum().backward()
        assert tuple(y.shape) == shape and y.sum().item() == total
        assert x.grad.flatten().tolist()[:12] == grad
        x.grad = None
    assert x.detach().transpose(0, 2).unfold(1, 2, 1)[1, 0].tolist() == [[1.0, 5.0], [13.0, 17.0]]
    assert torch.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    assert torch.tensor(5.0).unfold(-1, 1, 3).tolist() == [5.0]
    assert tuple(torch.tensor(5.0).unfold(0, 0, 1).shape) == (0,)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1"):
        torch.tensor(5.0).unfold(0, 2, 1)
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        torch.tensor(5.0).unfold(1, 1, 1)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 2"):
        x.unfold(0, 5, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(0, 1, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unfold(3, 1, 1)
