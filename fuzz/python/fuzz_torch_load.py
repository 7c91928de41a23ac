"""atheris target: the Python package's ``torch.load`` on hostile bytes.

Run (what scripts/reliability/fuzz.sh does): python fuzz/python/fuzz_torch_load.py CORPUS_DIR [DIR...]
[libFuzzer flags]. The first corpus directory is seeded with files ``torch.save`` wrote (seeds
it lacks are added, so an old corpus gains the zip-format seeds).

The first byte of an input picks the route: odd, the bytes are a whole file (a zip ``.pt``
file of PyTorch's format, or a safetensors file of the former ``torch.save``); 2 mod 4, the
rest is the ``data.pkl`` pickle of a zip archive that is otherwise well formed (float32
storage ``0`` of 6 elements, int64 storage ``1`` of 2), so the fuzzer reaches the
weights-only unpickler and the tensor rebuilder without having to keep a zip directory
consistent; 0 mod 4, the rest is the structure JSON of a former-format safetensors file
(three tensors ``t0``..``t2``). The only acceptable failures are a ``RuntimeError`` or a
``pickle.UnpicklingError`` (a corrupt or refused file); any other exception, a crash or a
hang is a defect.
"""

import io
import json
import os
import pickle
import struct
import sys
import zipfile
from collections import OrderedDict

import atheris

with atheris.instrument_imports():
    import tinytorch as torch
    from tinytorch import _serialization

_TENSORS = {
    "t0": torch.arange(6).float().reshape(2, 3),
    "t1": torch.tensor([1, 2], dtype=torch.int64),
    "t2": torch.zeros(0),
}


def _with_structure(structure: bytes) -> bytes:
    text = structure.decode("utf-8", errors="replace")
    return torch._C._serialize_safetensors(_TENSORS, {_serialization._STRUCTURE: text})


def _with_pickle(pkl: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/data/0", struct.pack("<6f", *range(6)))
        z.writestr("archive/data/1", struct.pack("<2q", 7, -1))
        z.writestr("archive/version", b"3\n")
    return buf.getvalue()


def _write(corpus, name, data):
    path = os.path.join(corpus, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)


def _seed(corpus):
    if not os.path.isdir(corpus):
        return
    # Small zip .pt files: a state dict with views of one storage, dtypes, containers.
    base = torch.arange(6).float().reshape(2, 3)
    zips = [
        {"w": base, "v": base[:, 1:], "t": base, "i": torch.tensor([7, -1]), "s": torch.tensor(2.0)},
        [torch.zeros(0), torch.ones(2, dtype=torch.bfloat16), torch.tensor([True]), {1, 2}, 1j],
        {"dtype": torch.float16, "dev": torch.device("cpu"), "n": (None, 1.5, b"ab"),
         "u8": torch.tensor([255], dtype=torch.uint8), "f64": torch.ones(1, dtype=torch.float64)},
    ]
    for i, obj in enumerate(zips):
        buf = io.BytesIO()
        torch.save(obj, buf)
        _write(corpus, f"zip_{i}", b"\x01" + buf.getvalue())
    # Pickles over exactly the storages _with_pickle provides (float32 0 of 6, int64 1 of 2).
    i64 = torch.tensor([7, -1])
    pickles = [
        {"w": base, "v": base[:, 1:], "t": base, "i": i64, "od": OrderedDict(a=1), "s": {1}},
        [base.t(), i64, (None, 1.5, b"ab", 1j, torch.float16, torch.device("cpu"))],
        OrderedDict(p=torch.nn.Parameter(base), i=i64),
    ]
    for i, obj in enumerate(pickles):
        buf = io.BytesIO()
        torch.save(obj, buf)
        pkl = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
        _write(corpus, f"pickle_{i}", b"\x02" + pkl)
    if any(n.startswith("saved_") for n in os.listdir(corpus)):
        return
    # The former format (safetensors + structure JSON), which load still reads.
    objects = [
        {"w": torch.ones(2, 2), "step": 3, "lr": 0.1, "name": "mlp"},
        [torch.arange(3), (1.5, float("inf"), None), {"k": [True, "s"]}],
        {(1, 2): torch.zeros(1, dtype=torch.bfloat16), "dtype": torch.float16},
    ]
    for i, obj in enumerate(objects):
        tensors = {}
        structure = json.dumps(_serialization._encode(obj, tensors))
        blob = torch._C._serialize_safetensors(tensors, {_serialization._STRUCTURE: structure})
        _write(corpus, f"saved_{i}", b"\x01" + blob)
        _write(corpus, f"structure_{i}", b"\x00" + structure.encode())


def test_one_input(data: bytes):
    if not data:
        return
    if data[0] & 1:
        body = data[1:]
    elif data[0] & 2:
        body = _with_pickle(data[1:])
    else:
        body = _with_structure(data[1:])
    try:
        torch.load(io.BytesIO(body))
    except (RuntimeError, pickle.UnpicklingError):
        pass


if __name__ == "__main__":
    dirs = [a for a in sys.argv[1:] if not a.startswith("-")]
    if dirs:
        _seed(dirs[0])
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
