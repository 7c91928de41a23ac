"""Further names real programs use, checked against their definitions: in-place indexing
(scatter_, scatter_add_, index_add_, triu_, tril_), meshgrid, unique, median, diag, normal,
bernoulli(_), bincount, hann_window, erfinv, addcdiv_/addcmul_, ravel, nbytes, concat,
autograd.Variable, nn.init.trunc_normal_, PReLU, Hardswish, ZeroPad2d, pad_sequence,
get_submodule, DataParallel, torch.jit, torch.hub, set_float32_matmul_precision."""

import math
import os

import pytest

import tinytorch as torch
import tinytorch.nn as nn


def test_in_place_indexing():
    x = torch.zeros(3, 4)
    out = x.scatter_(1, torch.tensor([[0], [2], [3]]), torch.tensor([[1.0], [2.0], [3.0]]))
    assert out is x and x.tolist() == [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3]]
    x.scatter_(0, torch.tensor([[0, 1]]), value=9.0)
    assert x[0].tolist() == [9, 0, 0, 0] and x[1].tolist() == [0, 9, 2, 0]
    x.scatter_(1, torch.tensor([[0], [0], [0]]), torch.ones(3, 1), reduce="add")
    assert x[:, 0].tolist() == [10, 1, 1]
    x.scatter_add_(1, torch.tensor([[3], [3], [3]]), torch.ones(3, 1))
    assert x[:, 3].tolist() == [1, 1, 4]
    y = torch.zeros(3)
    y.index_add_(0, torch.tensor([0, 2, 0]), torch.tensor([1.0, 2.0, 3.0]), alpha=2)
    assert y.tolist() == [8.0, 0.0, 4.0]
    m = torch.ones(3, 3)
    assert m.triu_().tolist() == [[1, 1, 1], [0, 1, 1], [0, 0, 1]]
    assert torch.ones(3, 3).tril_(-1).tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    with pytest.raises(ValueError, match="reduce"):
        x.scatter_(1, torch.tensor([[0]]), torch.ones(1, 1), reduce="multiply")
    with pytest.raises(IndexError, match="index_add"):
        torch.zeros(3).index_add_(0, torch.tensor([5]), torch.ones(1))


def test_meshgrid():
    a, b = torch.meshgrid(torch.tensor([1, 2]), torch.tensor([3, 4, 5]), indexing="ij")
    assert a.tolist() == [[1, 1, 1], [2, 2, 2]] and b.tolist() == [[3, 4, 5], [3, 4, 5]]
    x, y = torch.meshgrid([torch.tensor([1, 2]), torch.tensor([3, 4, 5])], indexing="xy")
    assert x.tolist() == [[1, 2], [1, 2], [1, 2]] and y.tolist() == [[3, 3], [4, 4], [5, 5]]
    with pytest.warns(UserWarning, match="indexing argument"):
        torch.meshgrid(torch.tensor([1.0]), torch.tensor([2.0]))
    with pytest.raises(RuntimeError, match="Expected 0D or 1D"):
        torch.meshgrid(torch.ones(2, 2), indexing="ij")


def test_unique_median_diag():
    vals, inv, counts = torch.unique(torch.tensor([3, 1, 3, 2]), return_inverse=True,
                                     return_counts=True)
    assert (vals.tolist(), inv.tolist(), counts.tolist()) == ([1, 2, 3], [2, 0, 2, 1],
                                                              [1, 1, 2])
    assert torch.tensor([[2.0, 2.0], [1.0, 2.0]]).unique().tolist() == [1.0, 2.0]
    assert torch.tensor([3.0, 1.0, 2.0, 4.0]).median().item() == 2.0
    med = torch.tensor([[3.0, 1.0], [2.0, 4.0]]).median(1)
    assert med.values.tolist() == [1.0, 2.0] and med.indices.tolist() == [1, 0]
    assert torch.diag(torch.tensor([1.0, 2.0]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert torch.diag(torch.tensor([1.0, 2.0]), -1).tolist() == [[0, 0, 0], [1, 0, 0], [0, 2, 0]]
    assert torch.diag(torch.arange(9.0).reshape(3, 3), -1).tolist() == [3.0, 7.0]
    with pytest.raises(RuntimeError, match="1D or 2D"):
        torch.diag(torch.ones(2, 2, 2))


def test_random_functions():
    g = torch.Generator().manual_seed(0)
    s = torch.normal(torch.full((20000,), 2.0), 0.5, generator=g)
    assert abs(float(s.mean()) - 2.0) < 0.02 and abs(float(s.std()) - 0.5) < 0.02
    assert tuple(torch.normal(0.0, 1.0, (3, 2)).shape) == (3, 2)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.normal(torch.zeros(2), -1.0)
    b = torch.bernoulli(torch.full((20000,), 0.3))
    assert abs(float(b.mean()) - 0.3) < 0.02 and b.dtype == torch.float32
    assert torch.bernoulli(torch.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        torch.bernoulli(torch.tensor([2.0]))
    t = torch.zeros(10000)
    assert t.bernoulli_(0.25) is t and abs(float(t.mean()) - 0.25) < 0.03


def test_counting_windows_and_erfinv():
    assert torch.bincount(torch.tensor([0, 2, 2])).tolist() == [1, 0, 2]
    assert torch.bincount(torch.tensor([0, 2, 2]), minlength=5).tolist() == [1, 0, 2, 0, 0]
    assert torch.bincount(torch.tensor([0, 2, 2]), weights=torch.tensor([1.0, 2.0, 3.0])
                          ).tolist() == [1.0, 0.0, 5.0]
    with pytest.raises(RuntimeError, match="non-negative integral"):
        torch.bincount(torch.tensor([-1]))
    assert torch.hann_window(4).tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5], abs=1e-7)
    assert torch.hann_window(4, periodic=False).tolist() == pytest.approx(
        [0.0, 0.75, 0.75, 0.0], abs=1e-7)
    assert torch.hann_window(1).tolist() == [1.0]
    y = torch.tensor([-0.999, -0.5, 0.0, 0.3, 0.9, 0.999999], dtype=torch.float64)
    x = torch.erfinv(y)
    assert [math.erf(v) for v in x.tolist()] == pytest.approx(y.tolist(), abs=1e-15)
    assert x.tolist()[1] == pytest.approx(-0.4769362762044699, rel=1e-14)
    edge = torch.erfinv(torch.tensor([1.0, -1.0, 2.0])).tolist()
    assert edge[0] == math.inf and edge[1] == -math.inf and math.isnan(edge[2])


def test_small_tensor_methods():
    x = torch.ones(3)
    assert x.addcdiv(torch.tensor([2.0, 4.0, 6.0]), torch.tensor([2.0, 2.0, 2.0]),
                     value=0.5).tolist() == [1.5, 2.0, 2.5]
    x.addcmul_(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 2.0, 2.0]), value=-1)
    assert x.tolist() == [-1.0, -3.0, -5.0]
    x.addcdiv_(torch.ones(3), torch.full((3,), 4.0))
    assert x.tolist() == [-0.75, -2.75, -4.75]
    assert torch.arange(6).reshape(2, 3).ravel().tolist() == list(range(6))
    assert torch.ravel(torch.ones(2, 2)).shape == (4,)
    assert torch.ones(3, dtype=torch.float64).nbytes == 24 and torch.ones(2).itemsize == 4
    assert torch.concat([torch.ones(1), torch.zeros(1)]).tolist() == [1.0, 0.0]
    v = torch.autograd.Variable(torch.ones(2), requires_grad=True)
    assert v.requires_grad and isinstance(v, torch.Tensor)


def test_trunc_normal():
    torch.manual_seed(0)
    w = torch.empty(20000)
    assert torch.nn.init.trunc_normal_(w, mean=0.0, std=0.5, a=-1.0, b=1.0) is w
    assert float(w.min()) >= -1.0 and float(w.max()) <= 1.0
    # N(0, 0.5^2) cut at two standard deviations: sd = 0.5 * sqrt(1 - 2*2*phi(2)/(2*Phi(2)-1))
    phi = math.exp(-2.0) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    sd = 0.5 * math.sqrt(1 - 4 * phi / mass)
    assert abs(float(w.std()) - sd) < 0.01 and abs(float(w.mean())) < 0.01


def test_composed_layers():
    prelu = nn.PReLU()
    assert [n for n, _ in prelu.named_parameters()] == ["weight"]
    assert prelu(torch.tensor([-1.0, 2.0])).tolist() == [-0.25, 2.0]
    per_channel = nn.PReLU(2, init=0.1)
    out = per_channel(torch.tensor([[[-1.0], [-2.0]]]))
    assert out.reshape(-1).tolist() == pytest.approx([-0.1, -0.2])
    out.sum().backward()
    assert per_channel.weight.grad.tolist() == [-1.0, -2.0]
    assert nn.Hardswish()(torch.tensor([-4.0, 1.0, 4.0])).tolist() == pytest.approx(
        [0.0, 4 / 6, 4.0])
    padded = nn.ZeroPad2d((1, 0, 0, 2))(torch.ones(1, 1, 1, 1))
    assert padded[0, 0].tolist() == [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert repr(nn.ZeroPad2d(2)) == "ZeroPad2d((2, 2, 2, 2))"
    seqs = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])]
    assert nn.utils.rnn.pad_sequence(seqs, batch_first=True).tolist() == [[1, 2, 0], [3, 4, 5]]
    assert tuple(nn.utils.rnn.pad_sequence(seqs).shape) == (3, 2)
    assert nn.utils.rnn.pad_sequence(seqs, True, -1.0, "left").tolist() == [[-1, 1, 2],
                                                                             [3, 4, 5]]


def test_get_submodule_and_data_parallel():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    assert model.get_submodule("1.1") is model[1][1]
    assert model.get_submodule("") is model
    with pytest.raises(AttributeError, match="has no attribute `9`"):
        model.get_submodule("9")
    dp = nn.DataParallel(model)
    x = torch.ones(4, 2)
    assert torch.equal(dp(x), model(x))
    assert list(dp.state_dict())[0] == "module.0.weight"


def test_jit_and_matmul_precision():
    model = nn.Linear(2, 2)
    assert torch.jit.script(model) is model and torch.jit.trace(model, torch.ones(1, 2)) is model

    @torch.jit.ignore
    def f():
        return 1

    assert f() == 1 and torch.jit.ignore(drop=True)(f) is f and not torch.jit.is_scripting()
    torch.set_float32_matmul_precision("high")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.get_float32_matmul_precision() == "high"
    torch.set_float32_matmul_precision("highest")
    assert not torch.backends.cuda.matmul.allow_tf32
    # PyTorch's semantics: another string warns and changes nothing, a non-string raises,
    # and the TF32 flag and the precision are one setting
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        torch.set_float32_matmul_precision("low")
    assert torch.get_float32_matmul_precision() == "highest"
    with pytest.raises(RuntimeError, match="expects a str"):
        torch.set_float32_matmul_precision(3)
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.get_float32_matmul_precision() == "high"
    torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.get_float32_matmul_precision() == "highest"
    torch.set_float32_matmul_precision("medium")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.get_float32_matmul_precision() == "medium"
    torch.set_float32_matmul_precision("highest")
    assert not torch.backends.cuda.matmul.allow_tf32


def test_hub_load_state_dict_from_url(tmp_path):
    src = tmp_path / "weights-abc.pt"
    torch.save({"w": torch.arange(3.0)}, str(src))
    cache = tmp_path / "cache"
    sd = torch.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(cache), progress=False)
    assert sd["w"].tolist() == [0.0, 1.0, 2.0]
    assert os.path.exists(cache / "weights-abc.pt")
    os.remove(src)  # the cached copy is used from now on
    again = torch.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(cache),
                                               progress=False)
    assert again["w"].tolist() == [0.0, 1.0, 2.0]
    torch.save({"w": torch.ones(1)}, str(tmp_path / "other-0000.pt"))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        torch.hub.load_state_dict_from_url((tmp_path / "other-0000.pt").as_uri(),
                                           model_dir=str(tmp_path / "c2"), check_hash=True,
                                           progress=False)
    torch.hub.set_dir(str(tmp_path / "hubdir"))
    assert torch.hub.get_dir() == str(tmp_path / "hubdir")


def test_stacking_splitting_and_distances():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0])
    assert torch.hstack([a, b]).tolist() == [1.0, 2.0, 3.0]
    assert torch.hstack([torch.ones(2, 1), torch.zeros(2, 2)]).shape == (2, 3)
    assert torch.vstack([a, torch.tensor([5.0, 6.0])]).tolist() == [[1, 2], [5, 6]]
    parts = torch.tensor_split(torch.arange(7), 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4], [5, 6]]
    parts = torch.tensor_split(torch.arange(6), [1, 4])
    assert [p.tolist() for p in parts] == [[0], [1, 2, 3], [4, 5]]
    x1 = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    x2 = torch.tensor([[3.0, 4.0]])
    assert torch.cdist(x1, x2).reshape(-1).tolist() == pytest.approx([5.0, math.sqrt(13)])
    assert torch.cdist(x1, x2, p=1).reshape(-1).tolist() == pytest.approx([7.0, 5.0])
    assert torch.is_complex(a) is False and a.is_complex() is False
    flat = torch._utils._flatten_dense_tensors([torch.ones(2, 2), torch.zeros(3)])
    assert flat.tolist() == [1, 1, 1, 1, 0, 0, 0]
    back = torch._utils._unflatten_dense_tensors(flat, [torch.ones(2, 2), torch.zeros(3)])
    assert back[0].shape == (2, 2) and back[1].tolist() == [0, 0, 0]


def test_more_in_place_tensor_methods():
    x = torch.tensor([0.25, 0.5], dtype=torch.float64)
    assert x.erfinv_() is x and [math.erf(v) for v in x.tolist()] == pytest.approx([0.25, 0.5])
    y = torch.tensor([4.0, 9.0])
    assert y.sqrt_().tolist() == [2.0, 3.0]
    e = torch.zeros(20000).exponential_(2.0)
    assert abs(float(e.mean()) - 0.5) < 0.02 and float(e.min()) >= 0
    base = torch.ones(2, dtype=torch.float64)
    assert base.new(2, 3).shape == (2, 3) and base.new(2, 3).dtype == torch.float64
    assert base.new([1, 2]).tolist() == [1.0, 2.0] and base.new().numel() == 0


def test_more_layers():
    x = torch.tensor([-2.0, 0.5, 7.0])
    assert nn.ReLU6()(x).tolist() == [0.0, 0.5, 6.0]
    assert nn.Hardtanh()(x).tolist() == [-1.0, 0.5, 1.0]
    assert nn.GLU()(torch.tensor([1.0, 2.0, 0.0, 0.0])).tolist() == [0.5, 1.0]
    assert torch.nn.functional.logsigmoid(torch.tensor([0.0])).item() == pytest.approx(
        -math.log(2))
    torch.manual_seed(0)
    drop = nn.Dropout2d(0.5)
    out = drop(torch.ones(8, 16, 2, 2))
    per_channel = out.sum((2, 3)).reshape(-1).tolist()
    assert set(per_channel) <= {0.0, 8.0} and 0.0 in per_channel and 8.0 in per_channel
    assert torch.equal(drop.eval()(torch.ones(1, 2, 2, 2)), torch.ones(1, 2, 2, 2))
    lin = nn.Linear(2, 2).type(torch.float64)
    assert lin.weight.dtype == torch.float64
    from tinytorch.nn.attention import SDPBackend, sdpa_kernel
    from tinytorch.nn.parallel.distributed import DistributedDataParallel

    assert DistributedDataParallel is nn.parallel.DistributedDataParallel
    with sdpa_kernel(SDPBackend.MATH):
        assert torch.nn.attention._current_backends() == [SDPBackend.MATH]
    assert SDPBackend.FLASH_ATTENTION in torch.nn.attention._current_backends()


def test_pytree_fx_and_index_copy():
    import collections

    from tinytorch.utils._pytree import tree_flatten, tree_map, tree_unflatten

    Pair = collections.namedtuple("Pair", "a b")
    tree = {"x": [1, (2, 3)], "y": None, "z": Pair(4, {"k": 5})}
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5] and spec.num_leaves == 5
    assert tree_unflatten([v * 10 for v in leaves], spec) == {
        "x": [10, (20, 30)], "y": None, "z": Pair(40, {"k": 50})}
    assert tree_map(lambda v: -v, [1, {"a": 2}]) == [-1, {"a": -2}]
    with pytest.raises(ValueError, match="has length 2"):
        tree_unflatten([1, 2], spec)
    assert torch.fx.wrap(len) is len
    x = torch.zeros(3, 2)
    out = x.index_copy_(0, torch.tensor([2, 0]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert out is x and x.tolist() == [[3, 4], [0, 0], [1, 2]]
    y = torch.ones(2, 2)
    assert y.index_copy(1, torch.tensor([1]), torch.zeros(2, 1)).tolist() == [[1, 0], [1, 0]]
    assert y.tolist() == [[1, 1], [1, 1]]


def test_sync_batchnorm_detach_and_pin_memory(monkeypatch):
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(3)))
    model[1].running_mean.fill_(0.5)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0],
                                                                     nn.SyncBatchNorm)
    assert converted[1].weight is model[1].weight
    assert converted[1].running_mean.tolist() == [0.5, 0.5, 0.5]
    from tinytorch.nn.modules.batchnorm import SyncBatchNorm

    assert SyncBatchNorm is nn.SyncBatchNorm
    x = torch.randn(4, 3, 2, 2)
    plain, sync = nn.BatchNorm2d(3), nn.SyncBatchNorm(3)
    assert torch.allclose(sync(x), plain(x)) and torch.allclose(sync.running_var,
                                                                plain.running_var)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sync(torch.ones(3))
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda group=None: 2)
    with pytest.raises(NotImplementedError, match="SyncBatchNorm across processes"):
        sync(x)
    assert torch.allclose(sync.eval()(x), plain.eval()(x))
    t = torch.ones(2, requires_grad=True) * 2
    assert t.grad_fn is not None
    assert t.detach_() is t and t.grad_fn is None and not t.requires_grad
    assert t.pin_memory() is t and t.is_pinned() is False
