"""Training programs written in the idioms of well-known public PyTorch scripts, run with
tinytorch and compared with what real PyTorch computed (issue 48).

The programs (tests/programs: a nanoGPT-style GPT with generation, pytorch/examples' word
language models, DCGAN, VAE, time-sequence prediction with LBFGS, REINFORCE) say
``import torch``; here ``torch_shim`` makes that tinytorch, and
scripts/fixtures/gen_program_fixtures.py ran the same files with PyTorch into
fixtures/programs.json. Every random number comes from NumPy, so both libraries train on
identical data from identical weights.

Compared: every float (per-step losses, gradient norms, final parameter sums, predictions)
within a relative tolerance; everything else exactly: generated token ids and text,
chosen actions, counts, flags. Two lists whose entries can be near zero by cancellation
(``NEAR_ZERO``) also get an absolute slack of the tolerance times the list's largest
magnitude.

Tolerances. float32 programs: rtol 1e-4. Both libraries compute in float32 with different
summation orders (blocked matmuls, fused attention and LayerNorm kernels); one step agrees
to about 1e-7, and a few optimiser steps grow that to at most 5e-6 (the GPT's gradient
norms after 20 AdamW steps), which leaves a margin of 20 for other CPUs' kernels. The
float64 LBFGS program: rtol 1e-9; 40 closure evaluations of a 30-step LSTM unroll agree to
about 4e-12. The test does not import PyTorch (CI has none).
"""

import importlib
import json
import math
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "conformance"))

import torch_shim  # noqa: E402

torch = torch_shim.install()

from programs import PROGRAMS  # noqa: E402  (their `import torch` is the shim's by now)

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "programs.json")
with open(FIXTURE) as _f:
    REFERENCE = json.load(_f)

RTOL = {"time_sequence_prediction": 1e-9}
DEFAULT_RTOL = 1e-4
#: Lists whose entries may be near zero through cancellation, compared with an absolute
#: slack of rtol times the list's largest magnitude: the generator's outputs after Tanh on a
#: small pre-activation, and the REINFORCE losses, sums of log-probabilities weighted by
#: normalised returns that add up to zero.
NEAR_ZERO = {"dcgan.fixed_fake_first", "reinforce.losses"}


def compare(got, want, path, rtol, errors, worst, atol=0.0):
    """Walks ``want`` (the PyTorch record) and ``got`` together; appends a message to
    ``errors`` for each difference and keeps the largest relative float error in
    ``worst``."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            errors.append(f"{path}: keys {sorted(got) if isinstance(got, dict) else got!r} "
                          f"but PyTorch gives {sorted(want)}")
            return
        for key in want:
            compare(got[key], want[key], f"{path}.{key}", rtol, errors, worst)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            errors.append(f"{path}: {got!r} but PyTorch gives {want!r}")
            return
        floats = [abs(v) for v in want if isinstance(v, float)]
        slack = rtol * max(floats) if floats and path in NEAR_ZERO else 0.0
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, f"{path}[{i}]", rtol, errors, worst, atol=slack)
    elif isinstance(want, float):
        if not isinstance(got, (float, int)) or isinstance(got, bool) or math.isnan(got):
            errors.append(f"{path}: {got!r} but PyTorch gives {want!r}")
            return
        err = abs(got - want)
        # The error relative to the value, or to the list's scale for entries near zero.
        worst[0] = max(worst[0], err / max(abs(want), atol / rtol, 1e-300))
        if not err <= atol + rtol * abs(want):
            errors.append(f"{path}: {got!r} but PyTorch gives {want!r} "
                          f"(relative error {err / max(abs(want), 1e-30):.2e}, rtol {rtol})")
    elif type(got) is not type(want) or got != want:
        errors.append(f"{path}: {got!r} but PyTorch gives {want!r} (must be equal)")


def test_the_fixture_covers_every_program():
    assert sorted(k for k in REFERENCE if k != "meta") == sorted(PROGRAMS)


def test_the_programs_run_on_tinytorch():
    module = importlib.import_module("programs._common")
    assert module.torch.__name__ == "tinytorch"


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_pytorch(name):
    module = importlib.import_module(f"programs.{name}")
    assert module.torch.__name__ == "tinytorch"
    start = time.time()
    got = module.run()
    seconds = time.time() - start
    # Through JSON, as the fixture went: tuples become lists, dict keys strings.
    got = json.loads(json.dumps(got))
    errors, worst = [], [0.0]
    rtol = RTOL.get(name, DEFAULT_RTOL)
    compare(got, REFERENCE[name], name, rtol, errors, worst)
    print(f"{name}: {seconds:.2f} s, largest relative difference {worst[0]:.2e}")
    assert not errors, (f"{len(errors)} values differ from PyTorch's; the first ones:\n"
                        + "\n".join(errors[:10]))
