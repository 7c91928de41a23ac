# Regenerate with: python scripts/gen_linalg_fixtures.py  (needs torch; CI does not)
"""PyTorch reference values for tinytorch-py/tests/test_linalg.py and test_special.py,
written as JSON to tinytorch-py/tests/fixtures/linalg_special.json.

The cases (tinytorch-py/tests/linalg_cases.py) are expressions over leaf tensors built from
deterministic numbers; this script evaluates each with PyTorch in each of its dtypes and
stores the outputs and, for the differentiable cases, the gradients of
``sum_i (out_i * w_i).sum()`` for every leaf (``w_i`` = 0.1, 0.2, ...), as flat lists of
floats with their shapes."""

import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tinytorch-py", "tests")
OUT = os.path.join(TESTS, "fixtures", "linalg_special.json")
sys.path.insert(0, TESTS)

import linalg_cases  # noqa: E402


def flat(t):
    return {"shape": list(t.shape), "values": t.detach().double().reshape(-1).tolist()}


def main():
    torch.set_default_dtype(torch.float32)
    data = {"torch_version": torch.__version__}
    for case in linalg_cases.LINALG + linalg_cases.SPECIAL:
        name, _, _, dtypes, _ = case
        for dtype in dtypes:
            try:
                outs, grads = linalg_cases.run(torch, case, dtype)
            except Exception as e:
                raise RuntimeError(f"case {name}/{dtype}") from e
            data[f"{name}/{dtype}"] = {
                "outs": [flat(o) for o in outs],
                "grads": {k: None if g is None else flat(g) for k, g in grads.items()},
            }
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"wrote {OUT}: {len(data) - 1} cases")


if __name__ == "__main__":
    main()
