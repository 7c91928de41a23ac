"""atheris target: the Python package's ``torch.load`` on hostile bytes.

Run (what scripts/fuzz.sh does): python fuzz/python/fuzz_torch_load.py CORPUS_DIR [DIR...]
[libFuzzer flags]. An empty first corpus directory is seeded with files ``torch.save`` wrote.

The first byte of an input picks the route: odd, the bytes are a whole file; even, the rest
is the structure JSON of a file that is otherwise well formed (three tensors ``t0``..``t2``),
so the fuzzer reaches the structure decoder without having to keep a safetensors header
consistent. Either way the only acceptable failure is a ``RuntimeError`` (a corrupt file);
any other exception, a crash or a hang is a defect.
"""

import io
import os
import sys

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


def _seed(corpus):
    if not os.path.isdir(corpus) or os.listdir(corpus):
        return
    objects = [
        {"w": torch.ones(2, 2), "step": 3, "lr": 0.1, "name": "mlp"},
        [torch.arange(3), (1.5, float("inf"), None), {"k": [True, "s"]}],
        {(1, 2): torch.zeros(1, dtype=torch.bfloat16), "dtype": torch.float16},
    ]
    for i, obj in enumerate(objects):
        buf = io.BytesIO()
        torch.save(obj, buf)
        with open(os.path.join(corpus, f"saved_{i}"), "wb") as f:
            f.write(b"\x01" + buf.getvalue())
        structure = torch._C._deserialize_safetensors(buf.getvalue())[1][_serialization._STRUCTURE]
        with open(os.path.join(corpus, f"structure_{i}"), "wb") as f:
            f.write(b"\x00" + structure.encode())


def test_one_input(data: bytes):
    if not data:
        return
    body = data[1:] if data[0] & 1 else _with_structure(data[1:])
    try:
        torch.load(io.BytesIO(body))
    except RuntimeError:
        pass


if __name__ == "__main__":
    dirs = [a for a in sys.argv[1:] if not a.startswith("-")]
    if dirs:
        _seed(dirs[0])
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
