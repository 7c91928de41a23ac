#!/usr/bin/env python3
"""Reference values for the conformance suite (tinytorch-py/tests/conformance): other
people's PyTorch model code from PyPI, run by real PyTorch.

For every case of tinytorch-py/tests/conformance/conformance_cases.py (the same file the
tests run, so the two sides cannot drift apart) this runs ``run_case`` with the real ``torch`` and
stores its record under ``<case>/<key>`` in tinytorch-py/tests/fixtures/conformance.npz:
the forward output, the loss, every parameter's gradient, the losses of three SGD steps and
every parameter after them. It also stores, under ``meta/``, the torch version and the
package versions it ran with, which the tests check against the pins of
tinytorch-py/tests/conformance/requirements.txt.

Usage (needs torch and the pinned packages, installed with --no-deps; CI needs neither):
    pip install --no-deps -r tinytorch-py/tests/conformance/requirements.txt
    python scripts/gen_conformance_fixtures.py [case ...]
With case names, only those are regenerated (the others are kept from the existing file).
"""
import importlib.metadata
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "tinytorch-py", "tests", "conformance")
OUT = os.path.join(HERE, "..", "tinytorch-py", "tests", "fixtures", "conformance.npz")
sys.path.insert(0, SUITE)

import conformance_cases as cases  # noqa: E402  (needs SUITE on sys.path)


def main(names):
    torch.set_num_threads(1)
    # float32 matmuls in full precision, as tinytorch computes them.
    torch.backends.cuda.matmul.allow_tf32 = False
    stored = dict(np.load(OUT)) if names and os.path.exists(OUT) else {}
    for pkg, version in cases.PACKAGES.items():
        got = importlib.metadata.version(pkg)
        if got != version:
            sys.exit(f"{pkg} {got} installed but cases.PACKAGES pins {version}")
        stored[f"meta/version/{pkg}"] = np.array(version)
    stored["meta/torch"] = np.array(torch.__version__)
    for case in cases.CASES:
        if names and case.name not in names:
            continue
        for key in [k for k in stored if k.startswith(case.name + "/")]:
            del stored[key]
        record = cases.run_case(case)
        for key, value in record.items():
            stored[f"{case.name}/{key}"] = value
        print(f"{case.name:24s} loss {float(record['loss']):.6f} "
              f"params {sum(v.size for k, v in record.items() if k.startswith('after.'))}")
    np.savez_compressed(OUT, **stored)
    print(f"wrote {OUT} ({os.path.getsize(OUT) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main(set(sys.argv[1:]))
