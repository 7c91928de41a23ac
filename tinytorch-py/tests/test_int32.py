"""``torch.int32`` (``torch.int``): creation, PyTorch's type promotion and result dtypes,
wrapping arithmetic, casts, NumPy, indexing, printing and both file formats.

The expected values are PyTorch 2.15's; ``TT_REFERENCE=torch pytest tests/test_int32.py``
runs the same assertions on real PyTorch (which is how they were checked)."""

import importlib
import io
import os

import numpy as np
import pytest

torch = importlib.import_module(os.environ.get("TT_REFERENCE", "tinytorch"))
I32 = torch.int32


def t32(values):
    return torch.tensor(values, dtype=I32)


def test_names_and_sizes():
    assert torch.int is torch.int32
    assert repr(I32) == "torch.int32"
    x = t32([1, 2, 3])
    assert x.dtype == I32 and x.element_size() == 4 and x.itemsize == 4
    assert x.int().dtype == I32 and torch.arange(3).int().dtype == I32
    assert x.type() == "torch.IntTensor" and isinstance(x, torch.IntTensor)
    assert torch.IntTensor([4, 5]).dtype == I32
    assert torch.zeros(2, dtype=torch.int).dtype == I32
    assert torch.iinfo(I32).max == 2 ** 31 - 1 and torch.iinfo(I32).min == -2 ** 31
    assert not I32.is_floating_point and I32.is_signed


def test_promotion_follows_pytorch():
    x = t32([5, -7])
    assert (x + x).dtype == I32
    assert (x + torch.tensor([1, 1])).dtype == torch.int64
    assert (x + torch.tensor([1, 1], dtype=torch.uint8)).dtype == I32
    assert (x + 1).dtype == I32 and (x * 2).dtype == I32
    assert (x + 1.5).dtype == torch.float32
    assert (x * torch.ones(2, dtype=torch.float64)).dtype == torch.float64
    assert (x + torch.tensor(3)).dtype == I32  # a 0-d int64 does not widen
    assert (x / 2).dtype == torch.float32
    assert (x / 2).tolist() == [2.5, -3.5]
    assert (x // 2).dtype == I32 and (x // 2).tolist() == [2, -4]
    assert (x % 3).tolist() == [2, 2]


def test_wrapping_arithmetic():
    big = t32([2 ** 31 - 1, -2 ** 31])
    assert (big + 1).tolist() == [-2 ** 31, -2 ** 31 + 1]
    assert (big * 2).tolist() == [-2, 0]
    assert (-big).tolist() == [-2 ** 31 + 1, -2 ** 31]
    assert big.abs().tolist() == [2 ** 31 - 1, -2 ** 31]


def test_reductions_scans_and_arg_reductions():
    x = t32([[3, -1, 7], [2, 2, -5]])
    s = x.sum()
    assert s.dtype == torch.int64 and s.item() == 8
    assert x.sum(1).tolist() == [9, -1] and x.sum(1).dtype == torch.int64
    assert x.prod().dtype == torch.int64 and x.prod().item() == 3 * -1 * 7 * 2 * 2 * -5
    assert x.max().dtype == I32 and x.max().item() == 7
    assert x.min(1).values.tolist() == [-1, -5] and x.min(1).values.dtype == I32
    assert x.argmax().item() == 2 and x.argmin(1).tolist() == [1, 2]
    assert x.cumsum(1).dtype == torch.int64 and x.cumsum(1).tolist() == [[3, 2, 9], [2, 4, -1]]
    assert x.float().mean().item() == pytest.approx(8 / 6)
    assert torch.sort(t32([3, 1, 2])).values.tolist() == [1, 2, 3]
    assert torch.topk(t32([3, 1, 2]), 2).values.tolist() == [3, 2]


def test_casts():
    assert t32([-1, 256, 300]).to(torch.uint8).tolist() == [255, 0, 44]
    assert torch.tensor([3.7, -3.7]).to(I32).tolist() == [3, -3]
    assert torch.tensor([2 ** 40 + 5, -1]).to(I32).tolist() == [5, -1]
    assert t32([-2, 0]).to(torch.int64).tolist() == [-2, 0]
    assert t32([0, 3]).bool().tolist() == [False, True]
    assert torch.tensor([True, False]).int().tolist() == [1, 0]
    assert t32([1, 2]).double().dtype == torch.float64
    assert t32([1, 2]).to(None).dtype == I32
    assert t32([1]).to(None, torch.float64).dtype == torch.float64


def test_numpy_both_ways():
    a = np.arange(4, dtype=np.int32)
    t = torch.from_numpy(a)
    assert t.dtype == I32
    t[0] = 9
    assert a[0] == 9  # shares memory
    assert torch.tensor(a).dtype == I32
    n = t32([1, -2]).numpy()
    assert n.dtype == np.int32 and n.tolist() == [1, -2]


def test_indexing_with_int32_indices():
    w = torch.arange(10.0).reshape(5, 2)
    idx = t32([4, 0, 4])
    assert w[idx].tolist() == [[8.0, 9.0], [0.0, 1.0], [8.0, 9.0]]
    assert w.index_select(0, idx).tolist() == w[idx].tolist()
    assert torch.zeros(5).index_add(0, idx, torch.ones(3)).tolist() == [1, 0, 0, 0, 2]
    emb = torch.nn.Embedding(5, 2)
    assert torch.equal(emb(idx), emb(idx.long()))
    x = t32([10, 20, 30])
    x[t32([2])] = 0
    assert x.tolist() == [10, 20, 0]
    assert torch.arange(3.0).gather(0, t32([2, 0])).tolist() == [2.0, 0.0]
    assert torch.zeros(3).scatter_add(0, t32([1, 1]), torch.ones(2)).tolist() == [0, 2, 0]
    with pytest.raises(RuntimeError):
        torch.nn.functional.one_hot(t32([0]), 3)  # PyTorch: LongTensor only
    with pytest.raises(RuntimeError):
        torch.nn.functional.cross_entropy(torch.zeros(1, 3), t32([0]))


def test_inplace_rules():
    x = t32([1, 2])
    x += 3
    x.mul_(2)
    assert x.tolist() == [8, 10] and x.dtype == I32
    with pytest.raises(RuntimeError):
        x += 1.5  # float result cannot be stored in an int tensor
    y = torch.zeros(2)
    y += t32([1, 2])
    assert y.tolist() == [1.0, 2.0]


def test_other_ops():
    x = t32([[1, 2], [3, 4]])
    assert (x @ x).dtype == I32 and (x @ x).tolist() == [[7, 10], [15, 22]]
    assert (x > 2).tolist() == [[False, False], [True, True]]
    assert torch.where(x > 2, x, t32(0)).tolist() == [[0, 0], [3, 4]]
    assert x.clamp(2, 3).tolist() == [[2, 2], [3, 3]] and x.clamp(2, 3).dtype == I32
    assert torch.cat([x, x]).dtype == I32
    assert torch.stack([x[0], x[1]]).tolist() == [[1, 2], [3, 4]]
    assert x.t().contiguous().tolist() == [[1, 3], [2, 4]]
    assert torch.full((2,), 7, dtype=I32).tolist() == [7, 7]
    assert torch.randint(0, 5, (100,), dtype=I32).dtype == I32
    assert torch.unique(t32([3, 1, 3])).tolist() == [1, 3]
    assert torch.bincount(t32([0, 2, 2])).tolist() == [1, 0, 2]


def test_repr():
    assert repr(t32([1, -20])) == "tensor([  1, -20], dtype=torch.int32)"
    assert repr(torch.zeros(0, dtype=I32)) == "tensor([], dtype=torch.int32)"


def test_pt_and_safetensors_round_trip(tmp_path):
    x = t32([[1, -2], [2 ** 31 - 1, 0]])
    buf = io.BytesIO()
    torch.save({"x": x}, buf)
    buf.seek(0)
    back = torch.load(buf)["x"]
    assert back.dtype == I32 and back.tolist() == x.tolist()
    if os.environ.get("TT_REFERENCE") == "torch":
        return
    path = str(tmp_path / "x.safetensors")  # a plain safetensors file loads as a dict
    torch._tinytorch._save_safetensors(path, {"x": x}, {})
    back = torch.load(path)["x"]
    assert back.dtype == I32 and back.tolist() == x.tolist()
