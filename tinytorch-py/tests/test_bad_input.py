"""The bad-input matrix of the Python package: one table of calls a careless or hostile user
makes — wrong shapes, dtypes and devices, out-of-range and negative indices, NaN and bad
hyperparameters, zero-size tensors, empty and mismatched data sets, corrupt files — each of
which must raise the exception PyTorch raises (RuntimeError, IndexError, ValueError,
TypeError, OSError) with a message that names the operation and the offending values.
A crash of the interpreter, a hang or a silent result fails the row."""

import io
import pickle
import json

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
from tinytorch.utils.data import DataLoader, TensorDataset


def _ones(*shape, dtype=None):
    return torch.ones(*shape) if dtype is None else torch.ones(*shape, dtype=dtype)


def _structure_file(structure):
    """The bytes of a ``torch.save`` file whose structure metadata is ``structure`` (an
    object, or its JSON text)."""
    text = structure if isinstance(structure, str) else json.dumps(structure)
    return torch._C._serialize_safetensors({"t0": torch.zeros(2)}, {"tinytorch.structure": text})


def _saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _load_bytes(data):
    return torch.load(io.BytesIO(data))


def _train_step_with_nan_input():
    model = nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(torch.tensor([[float("nan"), 1.0]])), torch.tensor([0]))
    loss.backward()
    opt.step()
    if not torch.isfinite(loss).all().item():
        raise RuntimeError(f"loss is {loss.item()}")


ROWS = [
    # ---- shapes ------------------------------------------------------------------------------
    ("matmul inner dims", lambda: _ones(2, 3) @ _ones(4, 5), RuntimeError, r"matmul.*\[2, 3\].*\[4, 5\]"),
    ("add without broadcast", lambda: _ones(2, 3) + _ones(4), RuntimeError, r"\[2, 3\].*\[4\]"),
    ("view element count", lambda: _ones(2, 3).view(7), RuntimeError, r"view.*\[7\].*\[2, 3\]"),
    ("reshape two -1", lambda: _ones(2, 3).reshape(-1, -1), RuntimeError, r"reshape.*-1"),
    ("cat of mismatched tensors", lambda: torch.cat([_ones(2, 3), _ones(2, 4)]), RuntimeError, r"cat.*\[2, 3\].*\[2, 4\]"),
    # ValueError in PyTorch 2.x (its Python layer checks the list before the op runs).
    ("cat of nothing", lambda: torch.cat([]), ValueError, r"cat"),
    ("a negative size", lambda: torch.zeros(-1), RuntimeError, r"-1"),
    ("a ragged nested list", lambda: torch.tensor([[1, 2], [3]]), ValueError, r"length"),
    ("Linear in_features", lambda: nn.Linear(3, 2)(_ones(4, 5)), RuntimeError, r"\[4, 5\].*3|3.*\[4, 5\]"),
    ("Conv2d channels", lambda: nn.Conv2d(3, 8, 3)(_ones(1, 4, 8, 8)), RuntimeError, r"conv2d.*3.*4|conv2d.*4.*3"),
    ("cross_entropy batch sizes", lambda: F.cross_entropy(_ones(4, 10), torch.tensor([1, 2, 3])), RuntimeError, r"cross_entropy.*\[3\].*\[4, 10\]"),
    ("mse_loss shapes", lambda: F.mse_loss(_ones(2, 3), _ones(3, 2)), RuntimeError, r"mse_loss.*\[2, 3\].*\[3, 2\]"),
    ("load_state_dict shape", lambda: nn.Linear(3, 2).load_state_dict({"weight": _ones(5, 5), "bias": _ones(2)}), RuntimeError, r"weight.*\[5, 5\].*\[2, 3\]|weight.*5, 5.*2, 3"),
    ("load_state_dict missing key", lambda: nn.Linear(3, 2).load_state_dict({"weight": _ones(2, 3)}), RuntimeError, r"bias"),
    # ---- dtypes ------------------------------------------------------------------------------
    ("matmul float32 x float64", lambda: _ones(2, 2) @ _ones(2, 2, dtype=torch.float64), RuntimeError, r"matmul.*float32.*float64"),
    ("index_select float index", lambda: _ones(3, 2).index_select(0, torch.tensor([1.0])), RuntimeError, r"index_select.*float32"),
    ("embedding float ids", lambda: F.embedding(torch.tensor([1.0]), _ones(4, 3)), RuntimeError, r"embedding.*float32"),
    ("softmax of integers", lambda: torch.tensor([1, 2]).softmax(0), RuntimeError, r"softmax.*int64"),
    ("cross_entropy integer logits", lambda: F.cross_entropy(torch.tensor([[1, 2]]), torch.tensor([0])), RuntimeError, r"cross_entropy.*int64"),
    ("a tensor of strings", lambda: torch.tensor(["a"]), TypeError, r"str"),
    # ---- devices -----------------------------------------------------------------------------
    ("an unknown device", lambda: _ones(2).to("tpu"), (RuntimeError, ValueError), r"tpu"),
    ("a CUDA device index past the GPUs", lambda: _ones(2).to("cuda:99"), RuntimeError, r"CUDA|cuda"),
    # ---- indices -----------------------------------------------------------------------------
    ("index past the end", lambda: _ones(2, 3)[5], IndexError, r"5"),
    ("negative index past the start", lambda: _ones(2, 3)[-5], IndexError, r"-5"),
    ("index_select past the end", lambda: _ones(3, 2).index_select(0, torch.tensor([7])), IndexError, r"index_select.*7"),
    ("select dim out of range", lambda: _ones(3, 2).select(2, 0), IndexError, r"2"),
    ("gather past the end", lambda: _ones(2, 3).gather(1, torch.tensor([[0], [9]])), (IndexError, RuntimeError), r"gather.*9"),
    ("embedding id past the table", lambda: nn.Embedding(4, 3)(torch.tensor([1, 10])), IndexError, r"10"),
    ("cross_entropy class past the logits", lambda: F.cross_entropy(_ones(2, 10), torch.tensor([1, 10])), (IndexError, RuntimeError), r"10"),
    ("cross_entropy negative class", lambda: F.cross_entropy(_ones(2, 10), torch.tensor([1, -5])), (IndexError, RuntimeError), r"-5"),
    ("transpose dim", lambda: _ones(2, 3).transpose(0, 3), IndexError, r"3"),
    # ---- NaN, infinities and hyperparameters -------------------------------------------------
    ("a NaN loss is visible, not swallowed", _train_step_with_nan_input, RuntimeError, r"loss is nan"),
    ("NaN learning rate", lambda: torch.optim.SGD([nn.Parameter(_ones(1))], lr=float("nan")), ValueError, r"(?i)invalid learning rate: nan"),
    ("negative learning rate", lambda: torch.optim.SGD([nn.Parameter(_ones(1))], lr=-1), ValueError, r"Invalid learning rate: -1"),
    ("Adam beta above 1", lambda: torch.optim.Adam([nn.Parameter(_ones(1))], betas=(1.5, 0.999)), ValueError, r"beta.*1.5"),
    ("negative momentum", lambda: torch.optim.SGD([nn.Parameter(_ones(1))], lr=0.1, momentum=-0.5), ValueError, r"momentum.*-0.5"),
    ("an empty parameter list", lambda: torch.optim.SGD([], lr=0.1), ValueError, r"empty parameter list"),
    ("dropout probability above 1", lambda: F.dropout(_ones(2), p=1.5), (ValueError, RuntimeError), r"1.5"),
    ("clip_grad_norm_ NaN norm type", lambda: nn.utils.clip_grad_norm_([nn.Parameter(_ones(1))], 1.0, norm_type=float("nan")), RuntimeError, r"norm_type.*NaN|nan"),
    # ---- zero-size tensors -------------------------------------------------------------------
    ("max of an empty tensor", lambda: torch.empty(0).max(), RuntimeError, r"max"),
    ("argmax of an empty tensor", lambda: torch.empty(0, 3).argmax(), RuntimeError, r"argmax"),
    ("item of an empty tensor", lambda: torch.empty(0).item(), RuntimeError, r"item|0 elements"),
    ("item of a vector", lambda: _ones(2).item(), RuntimeError, r"item|2 elements"),
    # ---- data --------------------------------------------------------------------------------
    ("TensorDataset of different sizes", lambda: TensorDataset(_ones(4, 2), _ones(3)), (ValueError, RuntimeError, AssertionError), r"4.*3|[Ss]ize mismatch"),
    ("batch size 0", lambda: DataLoader(TensorDataset(_ones(4, 2), _ones(4)), batch_size=0), ValueError, r"batch_size.*0"),
    ("an index past a TensorDataset", lambda: TensorDataset(_ones(4, 2), _ones(4))[4], IndexError, r"4"),
    # ---- files -------------------------------------------------------------------------------
    ("load of a missing file", lambda: torch.load("/nonexistent/model.pt"), OSError, r"/nonexistent/model.pt"),
    ("load of empty bytes", lambda: _load_bytes(b""), RuntimeError, r"load_safetensors.*truncated"),
    ("load of a truncated header", lambda: _load_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json"), RuntimeError, r"load_safetensors"),
    ("load of a reference to a missing tensor", lambda: _load_bytes(_structure_file({"__tensor__": "t9"})), RuntimeError, r"corrupt structure.*t9"),
    ("load of a dict entry that is not a pair", lambda: _load_bytes(_structure_file({"__dict__": [[1]]})), RuntimeError, r"corrupt structure.*pair"),
    ("load of an unhashable key", lambda: _load_bytes(_structure_file({"__dict__": [[{"__dict__": []}, 1]]})), RuntimeError, r"corrupt structure.*key"),
    ("load of an unknown tag", lambda: _load_bytes(_structure_file({"__pickle__": "os.system"})), RuntimeError, r"corrupt structure.*__pickle__"),
    ("load of nesting 10000 deep", lambda: _load_bytes(_structure_file("[" * 10000 + "]" * 10000)), RuntimeError, r"corrupt structure"),
    ("save of an object pickle cannot write", lambda: torch.save({"f": lambda: 0}, io.BytesIO()), pickle.PicklingError, r"Can't pickle"),
    ("weights-only load of a pickled class", lambda: _load_bytes(_saved({"f": Exception("x")})), pickle.UnpicklingError, r"Unsupported global: GLOBAL builtins.Exception"),
]


@pytest.mark.parametrize("what,call,exc,pattern", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_raises_a_clear_error(what, call, exc, pattern):
    if what.startswith("a CUDA") and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(exc, match=pattern):
        call()


def test_a_corrupt_file_on_disk_names_the_file(tmp_path):
    path = tmp_path / "corrupt.pt"
    path.write_bytes(_structure_file({"__tensor__": "t9"}))
    with pytest.raises(RuntimeError, match=r"corrupt\.pt.*t9"):
        torch.load(path)
    path.write_bytes(b"\x00" * 5)
    with pytest.raises(RuntimeError, match=r"corrupt\.pt.*truncated"):
        torch.load(path)


def test_save_and_load_round_trip_through_file_objects():
    obj = {"w": torch.arange(4).float(), (1, 2): [None, 1.5, float("inf")], "s": "x"}
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["w"].equal(obj["w"]) and back[(1, 2)] == obj[(1, 2)] and back["s"] == "x"
