# Regenerate with: python scripts/gen_io_fixtures.py  (torch 2.15 CPU, safetensors 0.8)
"""PyTorch side of TinyTorch's safetensors interchange tests (tinytorch/tests/io.rs).

Writes, under tinytorch/tests/fixtures/io/:

    torch_dtypes.safetensors     the tensors of `expected()` (every dtype, 0-d, empty) saved by
                                 safetensors.torch.save_file, with metadata; the Rust test loads
                                 it and compares with the same tensors built in Rust.
    torch_model.safetensors      the state dict of `Net` (Conv2d + BatchNorm2d + ReLU + Flatten +
                                 Linear, running statistics updated by two training batches).
    torch_model_io.safetensors   `input` and `output` = Net in eval mode applied to `input`; the
                                 Rust test loads the state dict into the equivalent TinyTorch
                                 model and compares its forward pass with `output`.

and VERIFIES the other direction: tinytorch_written.safetensors is a file TinyTorch wrote
(regenerate it with `TINYTORCH_REGEN_IO_FIXTURES=1 cargo test -p tinytorch --test io`, then
re-run this script). It must load with safetensors.torch.load_file with exactly the keys,
dtypes, shapes and values of `expected()` and the metadata of `METADATA`; the script exits
non-zero otherwise. The Rust test checks that TinyTorch still writes those exact bytes.

CI never runs this script: it only reads the committed files.
"""

import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

DIR = os.path.join(os.path.dirname(__file__), "..", "tinytorch", "tests", "fixtures", "io")
METADATA = {"creator": "tinytorch", "format": "pt"}


def expected():
    """The interchange tensors; tinytorch/tests/io.rs `expected()` builds the same ones."""
    return {
        # Saved from a transposed (non-contiguous) view in the Rust test.
        "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3).t().contiguous(),
        "f64": torch.tensor([0.1, -2.5, 1e300], dtype=torch.float64),
        "f16": torch.tensor([1.0, -0.5, 65504.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -0.5, 256.0], dtype=torch.bfloat16),
        "i64": torch.tensor([-(2**62), 0, 7], dtype=torch.int64),
        "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(3.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(3 * 4 * 4, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def write_torch_files():
    os.makedirs(DIR, exist_ok=True)
    save_file(expected(), os.path.join(DIR, "torch_dtypes.safetensors"), metadata=METADATA)

    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        for _ in range(2):  # move BatchNorm's running stats away from their init
            net(torch.randn(4, 2, 4, 4) * 2 + 1)
    net.eval()
    x = torch.randn(2, 2, 4, 4)
    with torch.no_grad():
        y = net(x)
    # The state dict keys equal TinyTorch's for Sequential(conv, bn, relu, flatten, fc) once
    # renamed by index: conv -> 0, bn -> 1, fc -> 4.
    rename = {"conv": "0", "bn": "1", "fc": "4"}
    state = {}
    for k, v in net.state_dict().items():
        head, rest = k.split(".", 1)
        state[f"{rename[head]}.{rest}"] = v.contiguous()
    save_file(state, os.path.join(DIR, "torch_model.safetensors"))
    save_file({"input": x, "output": y}, os.path.join(DIR, "torch_model_io.safetensors"))


def verify_tinytorch_file():
    path = os.path.join(DIR, "tinytorch_written.safetensors")
    if not os.path.exists(path):
        print(f"{path} missing: run TINYTORCH_REGEN_IO_FIXTURES=1 cargo test -p tinytorch --test io")
        return False
    got = load_file(path)
    want = expected()
    ok = sorted(got) == sorted(want)
    if not ok:
        print("keys differ:", sorted(got), sorted(want))
    for k, w in want.items():
        g = got.get(k)
        if g is None or g.dtype != w.dtype or g.shape != w.shape or not torch.equal(g, w):
            print(f"tensor {k}: got {g!r}, expected {w!r}")
            ok = False
    with safe_open(path, framework="pt") as f:
        meta = f.metadata()
    if meta != METADATA:
        print("metadata differs:", meta, METADATA)
        ok = False
    print(("OK: " if ok else "MISMATCH: ") + path + " loads in PyTorch with the expected contents")
    return ok


if __name__ == "__main__":
    write_torch_files()
    sys.exit(0 if verify_tinytorch_file() else 1)
