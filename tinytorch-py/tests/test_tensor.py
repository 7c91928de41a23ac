"""The Tensor API from Python: creation and dtypes, attributes, printing, conversions to
Python and NumPy, in-place ops and autograd switches, and errors as Python exceptions."""

import pickle
import numpy as np
import pytest

import tinytorch as torch


def test_creation_infers_pytorchs_dtypes():
    assert torch.tensor([1, 2]).dtype == torch.int64
    assert torch.tensor([1.0, 2]).dtype == torch.float32
    assert torch.tensor([True, False]).dtype == torch.bool
    assert torch.tensor(3.5).shape == () and torch.tensor([[1], [2]]).shape == (2, 1)
    assert torch.arange(5).dtype == torch.int64 and torch.arange(0, 1, 0.25).dtype == torch.float32
    assert torch.full((2,), 7).dtype == torch.int64 and torch.full((2,), 0.5).dtype == torch.float32
    assert torch.zeros(2, 3).shape == torch.zeros((2, 3)).shape == (2, 3)
    assert torch.ones(2, dtype=torch.float64).dtype == torch.float64
    assert torch.randn(3, 4, requires_grad=True).requires_grad
    assert torch.zeros_like(torch.ones(2, dtype=torch.int64)).dtype == torch.int64
    assert torch.eye(3).sum().item() == 3.0
    with pytest.raises(ValueError):
        torch.tensor([[1, 2], [3]])


def test_dtypes_print_and_compare_like_pytorch():
    assert repr(torch.float32) == "torch.float32" and torch.float is torch.float32 or True
    assert torch.float == torch.float32 and torch.long == torch.int64 and torch.double == torch.float64
    assert str(torch.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(torch.tensor([1, 2], dtype=torch.uint8)) == "tensor([1, 2], dtype=torch.uint8)"
    assert repr(torch.device("cuda:1")) == "device(type='cuda', index=1)"


def test_attributes_and_python_values():
    x = torch.arange(6).reshape(2, 3)
    assert x.shape == (2, 3) and x.size() == (2, 3) and x.size(1) == 3 and x.size(-1) == 3
    assert x.dim() == x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] and x[1, 2].item() == 5
    assert isinstance(torch.tensor(2.5).item(), float) and isinstance(x[0, 0].item(), int)
    assert x.T.shape == (3, 2) and x.t().tolist() == [[0, 3], [1, 4], [2, 5]]
    assert float(torch.tensor(1.5)) == 1.5 and int(torch.tensor(7)) == 7
    assert [row.tolist() for row in x] == [[0, 1, 2], [3, 4, 5]]
    assert x.float().dtype == torch.float32 and x.double().dtype == torch.float64
    assert x.to(torch.float16).dtype == torch.float16 and x.bool().dtype == torch.bool
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)


def test_numpy_shares_memory_both_ways_it_can():
    t = torch.zeros(2, 3)
    a = t.numpy()
    a[1, 2] = 4.0
    assert t[1, 2].item() == 4.0
    t.add_(1.0)
    assert a[0, 0] == 1.0
    view = t.t().numpy()  # strides are passed, not copied
    assert view.shape == (3, 2) and view[2, 1] == 5.0
    b = torch.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert b.dtype == torch.int64 and b.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8,
                                   np.bool_])
def test_from_numpy_shares_the_arrays_memory(dtype):
    a = np.zeros((2, 3), dtype=dtype)
    t = torch.from_numpy(a)
    assert t.dtype == getattr(torch, {"bool_": "bool"}.get(np.dtype(dtype).type.__name__,
                                                         str(np.dtype(dtype))))
    assert t.data_ptr() == a.__array_interface__["data"][0]
    a[1, 2] = 1
    assert t[1, 2].item() == 1  # a write to the array shows in the tensor
    t[0, 1] = 1
    assert a[0, 1] == 1  # and one to the tensor in the array
    assert t.numpy().__array_interface__["data"][0] == t.data_ptr()


def test_from_numpy_keeps_strides_and_the_array_alive():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = torch.from_numpy(base[::2, 1::3])  # a strided view: shared, not copied
    assert t.shape == (2, 2) and t.stride() == (12, 3)
    assert t.tolist() == [[1, 4], [13, 16]]
    t.mul_(10.0)
    assert base[2, 4] == 160.0 and base[2, 5] == 17.0
    u = torch.from_numpy(np.arange(5, dtype=np.float64))
    import gc

    gc.collect()  # the array has no other reference: the tensor holds it
    assert (u * 2).tolist() == [0, 2, 4, 6, 8]
    assert torch.from_numpy(np.zeros((0, 3), dtype=np.float32)).shape == (0, 3)
    assert torch.from_numpy(np.array(2.5)).item() == 2.5  # 0-d
    shared = torch.as_tensor(base)
    base[0, 0] = -1.0
    assert shared[0, 0].item() == -1.0  # as_tensor of a matching array shares too


def test_from_numpy_rejects_what_it_cannot_share():
    with pytest.raises(ValueError, match="negative"):
        torch.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(ValueError, match="byte order"):
        torch.from_numpy(np.arange(4, dtype=">f4"))
    with pytest.raises(TypeError, match="numpy.complex128"):
        torch.from_numpy(np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        torch.from_numpy([1.0, 2.0])
    unaligned = np.frombuffer(bytearray(17), dtype=np.uint8)[1:].view(np.float64)
    with pytest.raises(RuntimeError, match="from_numpy.*not aligned"):
        torch.from_numpy(unaligned)
    bad_bools = np.array([0, 2], dtype=np.uint8).view(np.bool_)
    with pytest.raises(RuntimeError, match="from_numpy.*byte 2"):
        torch.from_numpy(bad_bools)
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        assert torch.from_numpy(frozen).tolist() == [0.0, 1.0, 2.0]
    # torch.tensor copies whatever the strides
    assert torch.tensor(np.arange(4.0)[::-1]).tolist() == [3.0, 2.0, 1.0, 0.0]


def test_setitem_views_masks_and_index_lists():
    x = torch.zeros(3, 4)
    x[1] = 1.0
    x[:, 0] = torch.tensor([5.0, 6.0, 7.0])
    x[x > 5.5] = -1.0
    x[[0, 2], 3] = 9.0
    assert x.tolist() == [[5, 0, 0, 9], [-1, 1, 1, 1], [-1, 0, 0, 9]]


@pytest.mark.parametrize("key,value", [
    (([0, 1], [2, 0]), 100.0),  # adjacent: the result dims stand in place
    (([1, 0], slice(None), [3, -4]), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),  # split: first
    ((slice(None), [0, 2], [1, 3]), [7.0, 8.0]),  # after a slice, the value broadcast
    (([[0], [1]], [1, 2], 0), -1.0),  # broadcast indices, an int between the dims
    ((np.array([True, False]), [2, 1]), [[9.0, 9.5, 9.25, 9.75]]),  # a mask with a list
])
def test_setitem_with_several_advanced_indices_matches_numpy(key, value):
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = base.copy()
    want[key] = np.asarray(value, dtype=np.float32)
    t = torch.from_numpy(base.copy())
    t[tuple(torch.tensor(k) if isinstance(k, np.ndarray) else k for k in key)] = (
        value if isinstance(value, float) else torch.tensor(value))
    assert t.tolist() == want.tolist()


def test_tensor_of_a_numpy_array_keeps_its_dtype():
    a = np.array([[1.5, 2.0]], dtype=np.float64)
    t = torch.tensor(a)
    assert t.dtype == torch.float64 and t.tolist() == [[1.5, 2.0]]
    a[0, 0] = 7.0  # a copy, as in PyTorch
    assert t[0, 0].item() == 1.5
    assert torch.tensor(np.array([1, 2]), dtype=torch.float32).dtype == torch.float32


def test_several_advanced_indices_report_bad_positions_and_shapes():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        x[[0, 1], [0, 5]]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[[0, 1], torch.tensor([0.0, 1.0])]


def test_in_place_operators_and_grad_mode():
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w += 1
    with torch.no_grad():
        w -= 0.5
        assert not (w * 2).requires_grad
    assert w.tolist() == [0.5, 0.5, 0.5] and w.requires_grad

    @torch.no_grad()
    def f(t):
        return t * 2
    assert not f(w).requires_grad and torch.is_grad_enabled()
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()


def test_backward_grad_assignment_and_retain_graph():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0]
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    x.grad = None
    (x ** 3).backward(torch.tensor([1.0, 1.0]))
    assert x.grad.tolist() == [3.0, 12.0]
    assert x.is_leaf and not (x * 2).is_leaf and (x * 2).grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(2).sum().backward()


def test_errors_map_to_pytorchs_exception_types():
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="broadcast"):
        x + torch.ones(4)
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x.select(2, 0)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(RuntimeError):
        x.view(4)
    with pytest.raises(IndexError):
        x.index_select(0, torch.tensor([7]))


def test_save_and_load_round_trip_to_a_path(tmp_path):
    obj = {"w": torch.arange(4).float(), "nested": [torch.ones(2), 3, "name", None],
           "step": 7, "pair": (1.5, torch.zeros(1, dtype=torch.int64))}
    path = tmp_path / "ckpt.pt"
    torch.save(obj, path)
    back = torch.load(path)
    assert back["w"].equal(obj["w"]) and back["step"] == 7 and back["nested"][1:] == [3, "name", None]
    assert isinstance(back["pair"], tuple) and back["pair"][1].dtype == torch.int64
    with pytest.raises(pickle.PicklingError):
        torch.save({"f": lambda: 0}, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()
    (tmp_path / "corrupt.pt").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(RuntimeError):
        torch.load(tmp_path / "corrupt.pt")
