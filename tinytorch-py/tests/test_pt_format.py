"""PyTorch's zip ``.pt`` format: files written by real PyTorch (fixtures/pt, from
scripts/fixtures/gen_pt_fixtures.py) load with their values, dtypes, shapes, strides and storage
sharing; TinyTorch's own files round-trip; ``weights_only`` refuses every global outside the
allow-list without running it; corrupt files are PyTorch's exception types."""

import io
import json
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import pytest

import tinytorch as torch
from tinytorch import _pt_save

PT = os.path.join(os.path.dirname(__file__), "fixtures", "pt")
with open(os.path.join(PT, "expected.json")) as _f:
    EXPECTED = json.load(_f)


def _get(obj, path):
    for part in path.strip("/").split("/"):
        if isinstance(obj, dict):
            key = part if part in obj else int(part)
            obj = obj[key]
        else:
            obj = obj[int(part)]
    return obj


def _check(t, want):
    assert str(t.dtype) == want["dtype"]
    assert list(t.shape) == want["shape"]
    assert list(t.stride()) == want["stride"]
    assert t.requires_grad == want["requires_grad"]
    got = t.float().tolist() if t.dtype == torch.bfloat16 else t.tolist()
    assert got == want["values"]


@pytest.mark.parametrize("name", ["state_dict", "sgd", "adam", "nested", "model_sd"])
def test_pytorch_files_load(name):
    obj = torch.load(os.path.join(PT, f"{name}.pt"))
    for path, want in EXPECTED[name].items():
        _check(_get(obj, path), want)


def test_pytorch_views_share_storage():
    sd = torch.load(os.path.join(PT, "state_dict.pt"))
    assert sd["tied"] is sd["base"]
    # view = base[1:, 1::2]: offset 7 elements into base's storage, and the same memory.
    assert sd["view"].data_ptr() - sd["base"].data_ptr() == 7 * 4
    sd["base"][1, 1] = -1.0
    assert sd["view"][0, 0].item() == -1.0


def test_pytorch_nested_containers():
    obj = torch.load(os.path.join(PT, "nested.pt"))
    assert obj["set"] == {1, 2} and obj["complex"] == 1 + 2j and obj["bytes"] == b"ab"
    assert obj["dtype"] == torch.float16 and str(obj["device"]) == "cpu"
    assert tuple(obj["size"]) == (2, 3) and obj["dict"][7] == "int key"
    assert obj["list"][1:] == [1, "s", None, 2.5] and obj["nan"] == float("inf")


def test_pytorch_optimizer_state_loads_into_optimizer():
    sd = torch.load(os.path.join(PT, "sgd.pt"))
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["momentum"] == 0.9


def test_pytorch_whole_module():
    path = os.path.join(PT, "sequential.pt")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL torch.nn"):
        torch.load(path)
    model = torch.load(path, weights_only=False)
    assert isinstance(model, torch.nn.Sequential)
    assert isinstance(model[0], torch.nn.Linear) and isinstance(model[0].weight, torch.nn.Parameter)
    want = EXPECTED["sequential"]
    with torch.no_grad():
        out = model(torch.tensor(want["input"]))
    assert out.allclose(torch.tensor(want["output"]), atol=1e-6)
    assert sorted(model.state_dict()) == sorted(k.strip("/") for k in want["state_dict"])


def test_pytorch_whole_lstm_loads_and_computes():
    # PyTorch's LSTM pickles its configuration and parameters; TinyTorch rebuilds its Rust
    # layer from them on load.
    model = torch.load(os.path.join(PT, "lstm.pt"), weights_only=False)
    assert isinstance(model, torch.nn.LSTM) and model.num_layers == 2 and model.batch_first
    want = EXPECTED["lstm"]
    with torch.no_grad():
        out = model(torch.tensor(want["input"]))[0]
    assert out.allclose(torch.tensor(want["output"]), atol=1e-6)


def test_whole_recurrent_layers_round_trip():
    for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
        model = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True).double().eval()
        x = torch.randn(2, 5, 3, dtype=torch.float64)
        back, _ = _roundtrip(model, weights_only=False)
        assert type(back) is cls and not back.training
        assert torch.equal(back(x)[0], model(x)[0])
        back.train()
        back(x)[0].sum().backward()  # the rebuilt layer computes with the loaded Parameters
        assert all(p.grad is not None for p in back.parameters())
    relu = torch.nn.RNN(2, 3, nonlinearity="relu")
    assert _roundtrip(relu, weights_only=False)[0].nonlinearity == "relu"


def test_plain_pickle_of_tensors_and_modules():
    # pickle.dumps, as PyTorch's: values, dtype, requires_grad (as a leaf), Parameters stay
    # Parameters, views come back as copies.
    x = torch.ones(2, requires_grad=True)
    y = pickle.loads(pickle.dumps(x * 2))
    assert y.tolist() == [2.0, 2.0] and y.requires_grad and y.is_leaf
    for t in (torch.tensor(3.5), torch.ones(2, dtype=torch.bfloat16),
              torch.tensor([1, -2], dtype=torch.int32), torch.zeros(0, 3)):
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype == t.dtype and back.shape == t.shape and torch.equal(back, t)
    base = torch.arange(4.0)
    b, v = pickle.loads(pickle.dumps((base, base[1:3])))
    v[0] = 9.0
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0]
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LSTM(2, 3))
    back = pickle.loads(pickle.dumps(model))
    assert isinstance(back[0].weight, torch.nn.Parameter)
    assert torch.equal(back[0].weight, model[0].weight)
    x = torch.randn(1, 1, 2)
    assert torch.equal(back[1](x)[0], model[1](x)[0])


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return torch.load(io.BytesIO(buf.getvalue()), **kw), buf.getvalue()


def test_roundtrip_dtypes_views_and_sharing():
    base = torch.arange(24).float().reshape(4, 6)
    sd = {
        "base": base, "view": base[1:, 1::2], "tied": base, "row": base[2],
        "f64": torch.ones(2, dtype=torch.float64), "f16": torch.tensor([0.5]).half(),
        "bf16": torch.tensor([1.5, -2.0]).bfloat16(), "i64": torch.tensor([2 ** 40, -1]),
        "u8": torch.tensor([255], dtype=torch.uint8), "bool": torch.tensor([True, False]),
        "scalar": torch.tensor(3.0), "empty": torch.zeros(0, 2),
        "bf16_view": torch.arange(6).float().bfloat16().reshape(2, 3).t(),
    }
    back, data = _roundtrip(sd)
    for k, v in sd.items():
        assert back[k].dtype == v.dtype and tuple(back[k].shape) == tuple(v.shape), k
        assert back[k].float().tolist() == v.float().tolist(), k
    assert back["view"].stride() == (6, 2)
    assert back["tied"] is back["base"]
    assert back["row"].data_ptr() - back["base"].data_ptr() == 12 * 4
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    # base, view, tied and row are one storage; each other tensor has its own.
    assert sum(n.startswith("archive/data/") for n in names) == 1 + 9
    assert {"archive/data.pkl", "archive/version", "archive/byteorder"} <= set(names)


def test_archive_layout_is_pytorchs():
    _, data = _roundtrip({"w": torch.ones(3)})
    z = zipfile.ZipFile(io.BytesIO(data))
    assert z.read("archive/version") == b"3\n" and z.read("archive/byteorder") == b"little"
    for info in z.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
        assert start % 64 == 0, info.filename
    pkl = z.read("archive/data.pkl")
    assert pkl[:2] == b"\x80\x02"          # protocol 2, as PyTorch writes
    assert b"ctorch._utils\n_rebuild_tensor_v2\n" in pkl and b"ctorch\nFloatStorage\n" in pkl
    assert struct.unpack("<3f", z.read("archive/data/0")) == (1.0, 1.0, 1.0)


def test_roundtrip_containers_and_optimizer_state():
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    obj = {"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3,
           "od": OrderedDict(a=1), "t": (1, "x", None, 2.5, float("nan")), "s": {1, 2},
           "dtype": torch.bfloat16, "device": torch.device("cpu"), "b": b"\x00\xff", "c": 1j}
    back, _ = _roundtrip(obj)
    assert isinstance(back["model"], OrderedDict) and list(back["model"]) == ["weight", "bias"]
    assert back["model"]["weight"].tolist() == model.weight.tolist()
    opt2 = torch.optim.Adam(torch.nn.Linear(3, 2).parameters(), lr=0.5)
    opt2.load_state_dict(back["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01
    assert back["t"][:4] == (1, "x", None, 2.5) and back["t"][4] != back["t"][4]
    assert back["s"] == {1, 2} and back["dtype"] == torch.bfloat16 and back["b"] == b"\x00\xff"
    assert str(back["device"]) == "cpu" and back["c"] == 1j and back["epoch"] == 3


def test_roundtrip_whole_module_and_requires_grad():
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL tinytorch.nn.container.Sequential"):
        _roundtrip(model)
    back, _ = _roundtrip(model, weights_only=False)
    x = torch.ones(4, 2)
    assert back(x).tolist() == model(x).tolist()
    assert back[0].weight.requires_grad and isinstance(back[0].weight, torch.nn.Parameter)
    loss = back(x).sum()
    loss.backward()
    assert back[0].weight.grad is not None
    t, _ = _roundtrip(torch.ones(2, requires_grad=True))
    assert t.requires_grad and t.is_leaf


def test_save_to_path_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    torch.save({"w": torch.ones(2)}, path)
    good = path.read_bytes()

    def crash(obj, out=None, byteorder=True):
        out.write(b"PK\x03\x04 half an archive")
        raise KeyboardInterrupt("crash while saving")
    monkeypatch.setattr(_pt_save, "serialize", crash)
    with pytest.raises(KeyboardInterrupt):
        torch.save({"w": torch.zeros(2)}, path)
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["ckpt.pt"]
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask      # as open() would create it


def _zip(pkl, entries=None, prefix="archive/"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(prefix + "data.pkl", pkl)
        for name, data in (entries or {}).items():
            z.writestr(prefix + name, data)
    return buf.getvalue()


def test_weights_only_never_runs_a_refused_global(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    data = _zip(pickle.dumps({"x": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os|nt)\.system"):
        torch.load(io.BytesIO(data))
    assert not marker.exists()
    # Also a pickle whose first global is refused before anything else runs.
    data = _zip(b"\x80\x02cbuiltins\neval\nq\x00X\x03\x00\x00\x001+1q\x01\x85R.")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL builtins.eval"):
        torch.load(io.BytesIO(data))


class Point:
    def __init__(self, x):
        self.x = x


def test_safe_globals():
    from tinytorch import serialization
    buf = io.BytesIO()
    torch.save({"p": Point(3)}, buf)
    data = buf.getvalue()
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Point"):
        torch.load(io.BytesIO(data))
    with serialization.safe_globals([Point]):
        assert serialization.get_safe_globals() == [Point]
        assert torch.load(io.BytesIO(data))["p"].x == 3
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data))
    serialization.add_safe_globals([Point])
    try:
        assert torch.load(io.BytesIO(data))["p"].x == 3
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    assert torch.load(io.BytesIO(data), weights_only=False)["p"].x == 3


def _storage_pkl(numel, dtype="FloatStorage", key="0", size=None):
    size = (numel,) if size is None else size
    storage = ("storage", _pt_save._g("torch", dtype), key, "cpu", numel)

    class P(_pt_save._Pickler):
        def persistent_id(self, obj):
            return storage if obj == "S" else None
    buf = io.BytesIO()
    rebuild = (_pt_save._g("torch._utils", "_rebuild_tensor_v2"),)
    P(buf, None, True).save_reduce(*rebuild, ("S", 0, size, (1,) * len(size), False, OrderedDict()))
    buf.write(pickle.STOP)
    return buf.getvalue()


def test_corrupt_files():
    good = _zip(_storage_pkl(2), {"data/0": struct.pack("<2f", 1, 2)})
    assert torch.load(io.BytesIO(good)).tolist() == [1.0, 2.0]
    cases = [
        (good[: len(good) // 2], RuntimeError),                             # truncated
        (good[:-30], RuntimeError),                                         # no central dir end
        (_zip(_storage_pkl(2)), RuntimeError),                              # no data/0
        (_zip(_storage_pkl(3), {"data/0": b"\x00" * 8}), RuntimeError),     # size mismatch
        (_zip(_storage_pkl(2 ** 60), {"data/0": b"\x00" * 8}), RuntimeError),  # huge claim
        (_zip(_storage_pkl(2, size=(5,)), {"data/0": b"\x00" * 8}), RuntimeError),  # past end
        (_zip(_storage_pkl(2, dtype="ShortStorage"), {"data/0": b"\x00" * 4}), RuntimeError),
        (_zip(b"\x80\x02}q\x00(X"), pickle.UnpicklingError),                # broken pickle
        (_zip(b""), pickle.UnpicklingError),
        (b"PK\x03\x04" + b"\x00" * 40, RuntimeError),
        (_zip(b"x", prefix=""), RuntimeError),                              # no archive/
    ]
    for data, exc in cases:
        with pytest.raises(exc):
            torch.load(io.BytesIO(data))


def test_hostile_sizes_are_refused_before_allocating():
    # A memo index of 2**32 - 1 (the C unpickler would size its memo table by it).
    pkl = b"\x80\x02}r\xff\xff\xff\xff."
    with pytest.raises(pickle.UnpicklingError, match="memo index"):
        torch.load(io.BytesIO(_zip(pkl)))
    # bytearray(2**40) and torch.Tensor(2**40) are allowed names, never allowed sizes.
    for glob in (b"cbuiltins\nbytearray\n", b"ctorch\nTensor\n"):
        pkl = b"\x80\x02" + glob + b"\x8a\x06\x00\x00\x00\x00\x00\x01\x85R."
        with pytest.raises(pickle.UnpicklingError):
            torch.load(io.BytesIO(_zip(pkl)))
    # _codecs.encode with a codec other than latin1 (its module would be imported).
    pkl = b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00xX\x03\x00\x00\x00hex\x86R."
    with pytest.raises(pickle.UnpicklingError, match="_codecs.encode"):
        torch.load(io.BytesIO(_zip(pkl)))
    # A zero-stride view of 2**60 elements over a storage of 2.
    data = _zip(_storage_pkl(2, size=(2 ** 60,)).replace(b"K\x01\x85", b"K\x00\x85"),
                {"data/0": b"\x00" * 8})
    with pytest.raises(RuntimeError):
        torch.load(io.BytesIO(data))


def test_unsupported_dtype_is_named():
    data = _zip(_storage_pkl(2, dtype="ShortStorage"), {"data/0": b"\x00" * 4})
    with pytest.raises(RuntimeError, match="torch.int16"):
        torch.load(io.BytesIO(data))


def test_legacy_format_is_refused_clearly():
    legacy = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03."
    with pytest.raises(RuntimeError, match="legacy"):
        torch.load(io.BytesIO(legacy))


def test_old_safetensors_files_still_load():
    tensors = {"t0": torch.ones(2)}
    structure = json.dumps({"__dict__": [["w", {"__tensor__": "t0"}], ["step", 3]]})
    blob = torch._C._serialize_safetensors(tensors, {"tinytorch.structure": structure})
    assert torch.load(io.BytesIO(blob))["step"] == 3
    plain = torch._C._serialize_safetensors(tensors, {})
    assert torch.load(io.BytesIO(plain))["t0"].tolist() == [1.0, 1.0]


def test_without_numpy_views_load_as_copies(monkeypatch):
    from tinytorch import _pt_load
    monkeypatch.setattr(_pt_load.Storage, "array", lambda self: None)
    base = torch.arange(12).float().reshape(3, 4)
    back, _ = _roundtrip({"b": base, "v": base[1:, ::2], "r": base[1]})
    assert back["v"].tolist() == [[4.0, 6.0], [8.0, 10.0]]
    assert back["r"].data_ptr() - back["b"].data_ptr() == 16   # contiguous views still share


def test_map_location_and_cuda_locations():
    data = _zip(_storage_pkl(2).replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"),
                {"data/0": struct.pack("<2f", 1, 2)})
    for loc in ("cpu", torch.device("cpu"), {"cuda:0": "cpu"}):
        t = torch.load(io.BytesIO(data), map_location=loc)
        assert t.device.type == "cpu" and t.tolist() == [1.0, 2.0]
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
            torch.load(io.BytesIO(data))
    mps = _zip(_storage_pkl(2).replace(b"X\x03\x00\x00\x00cpu", b"X\x03\x00\x00\x00mps"),
               {"data/0": struct.pack("<2f", 1, 2)})
    with pytest.raises(RuntimeError, match="location 'mps'"):
        torch.load(io.BytesIO(mps))
    assert torch.load(io.BytesIO(mps), map_location="cpu").tolist() == [1.0, 2.0]
    # PyTorch's callable form: (storage, location) -> storage.
    assert torch.load(io.BytesIO(data), map_location=lambda s, loc: s.cpu()).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="map_location returned"):
        torch.load(io.BytesIO(data), map_location=lambda s, loc: None)
