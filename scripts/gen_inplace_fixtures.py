# Regenerate with: python scripts/gen_inplace_fixtures.py  (needs torch; CI does not)
"""PyTorch reference values for tinytorch-py/tests/test_inplace_autograd.py, written as JSON
to tinytorch-py/tests/fixtures/inplace_autograd.json: for every case of
tinytorch-py/tests/inplace_cases.py (in-place ops on graph tensors), its outputs and input
gradients as flat lists; and PyTorch's messages and ``_version`` values of ``MESSAGES``."""

import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tinytorch-py", "tests"))
from inplace_cases import CASES, MESSAGES  # noqa: E402

OUT = os.path.join(ROOT, "tinytorch-py", "tests", "fixtures", "inplace_autograd.json")


def main():
    data = {"cases": {}, "messages": {}}
    for name, case in CASES.items():
        res = case(torch)
        data["cases"][name] = {
            k: {"shape": list(v.shape), "values": v.detach().double().reshape(-1).tolist()}
            for k, v in res.items()
        }
    for name, fn in MESSAGES.items():
        data["messages"][name] = fn(torch)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1)
    print(f"{len(CASES)} cases; fixtures in {os.path.relpath(OUT, ROOT)} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
