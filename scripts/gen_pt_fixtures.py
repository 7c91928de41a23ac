"""Writes small ``.pt`` files with real PyTorch into tinytorch-py/tests/fixtures/pt/ (and
``expected.json``: the values, dtypes, shapes, strides and storage sharing that
tests/test_pt_format.py checks TinyTorch's ``torch.load`` against; the tests need no torch).

    venv/bin/python scripts/gen_pt_fixtures.py                   # write the fixtures
    venv/bin/python scripts/gen_pt_fixtures.py --check-roundtrip # TinyTorch saves, PyTorch loads

``--check-roundtrip`` (a manual check, not in CI: it needs torch and tinytorch in one
environment) saves each kind of object with ``tinytorch.save`` and loads it with PyTorch's
``torch.load`` (``weights_only=True``, except the whole module), comparing the values.
"""

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch-py", "tests", "fixtures", "pt")
SEQ_INPUT = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
LSTM_INPUT = [[[0.5, -1.0, 0.25], [0.0, 2.0, -0.5], [1.5, 0.75, -2.0]]]


def describe(t, torch):
    """What the test checks of one tensor."""
    return {"dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
            "offset": t.storage_offset(), "requires_grad": t.requires_grad,
            "values": t.detach().float().tolist() if t.dtype == torch.bfloat16 else t.detach().tolist()}


def state_dict(torch):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 4
    return {
        "f32": torch.randn(2, 3),
        "f64": torch.randn(3, dtype=torch.float64),
        "f16": torch.randn(2, 2).half(),
        "bf16": torch.randn(2, 2).bfloat16(),
        "bool": torch.tensor([True, False, True]),
        "u8": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "i64": torch.tensor([[-3, 4], [2**40, 0]], dtype=torch.int64),
        "i32": torch.tensor([-7, 2**31 - 1], dtype=torch.int32),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "base": base,
        "view": base[1:, 1::2],            # offset 7, strides (6, 2): shares base's storage
        "tied": base,                      # the same tensor twice (tied weights)
    }


def objects(torch):
    torch.manual_seed(0)
    sd = state_dict(torch)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    sgd_model = torch.nn.Linear(3, 2)
    sgd = torch.optim.SGD(sgd_model.parameters(), lr=0.1, momentum=0.9)
    sgd_model(torch.ones(1, 3)).sum().backward()
    sgd.step()
    adam_model = torch.nn.Linear(2, 2)
    adam = torch.optim.Adam(adam_model.parameters(), lr=0.01)
    adam_model(torch.ones(1, 2)).sum().backward()
    adam.step()
    nested = {
        "list": [torch.tensor([1.0, 2.0]), 1, "s", None, 2.5],
        "tuple": (torch.tensor([3], dtype=torch.int64), True),
        "dict": {"inner": {"x": torch.ones(2, 2)}, 7: "int key"},
        "set": {1, 2},
        "dtype": torch.float16,
        "device": torch.device("cpu"),
        "size": torch.Size([2, 3]),
        "complex": 1 + 2j,
        "bytes": b"ab",
        "nan": float("inf"),
    }
    return {"state_dict": sd, "sequential": seq, "sgd": sgd.state_dict(),
            "adam": adam.state_dict(), "nested": nested, "model_sd": seq.state_dict()}


def walk(obj, torch, path=""):
    """``path -> description`` of every tensor inside containers."""
    out = {}
    if isinstance(obj, torch.Tensor):
        out[path] = describe(obj, torch)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(walk(v, torch, f"{path}/{k}"))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(walk(v, torch, f"{path}/{i}"))
    return out


def generate():
    import torch
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    for name, obj in objects(torch).items():
        torch.save(obj, os.path.join(OUT, f"{name}.pt"))
        if name == "sequential":
            with torch.no_grad():
                out = obj(torch.tensor(SEQ_INPUT))
            expected[name] = {"input": SEQ_INPUT, "output": out.tolist(),
                              "state_dict": walk(obj.state_dict(), torch)}
        else:
            expected[name] = walk(obj, torch)
    # A whole recurrent layer (its TinyTorch twin holds a Rust object, rebuilt on load).
    torch.manual_seed(1)
    lstm = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    torch.save(lstm, os.path.join(OUT, "lstm.pt"))
    with torch.no_grad():
        out = lstm(torch.tensor(LSTM_INPUT))[0]
    expected["lstm"] = {"input": LSTM_INPUT, "output": out.tolist()}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    for n in sorted(os.listdir(OUT)):
        print(n, os.path.getsize(os.path.join(OUT, n)))


def check_roundtrip():
    """TinyTorch saves, PyTorch loads: the values must match."""
    sys.path.insert(0, os.path.join(ROOT, "tinytorch-py", "python"))
    import tinytorch
    import torch
    made = objects(tinytorch)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in made.items():
            path = os.path.join(tmp, f"{name}.pt")
            tinytorch.save(obj, path)
            back = torch.load(path, weights_only=(name != "sequential"))
            if name == "sequential":
                # A tinytorch class holding PyTorch tensors: compared parameter by parameter.
                ours = walk(obj.state_dict(), tinytorch)
                theirs = walk({f"{i}.{n}": p for i, m in back.__dict__["_modules"].items()
                               for n, p in m.__dict__["_parameters"].items()}, torch)
                for k in theirs:
                    theirs[k]["requires_grad"] = False
            else:
                ours, theirs = walk(obj, tinytorch), walk(back, torch)
            for k in ours:
                a, b = ours[k], theirs.get(k)
                ok = b is not None and all(a[f] == b[f] for f in ("shape", "stride", "values")) \
                    and a["dtype"] == b["dtype"]
                if not ok:
                    failures += 1
                    print(f"MISMATCH {name}{k}: tinytorch {a} / torch {b}")
            if name == "state_dict":
                same = back["base"].untyped_storage().data_ptr() == \
                    back["view"].untyped_storage().data_ptr() and back["tied"] is back["base"]
                print(f"{name}: view and tied weight share base's storage in PyTorch: {same}")
                failures += not same
            print(f"{name}: PyTorch loaded {len(ours)} tensors")
    print("roundtrip:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check-roundtrip", action="store_true",
                   help="save with tinytorch, load with PyTorch (manual check)")
    args = p.parse_args()
    sys.exit(check_roundtrip() if args.check_roundtrip else generate())
