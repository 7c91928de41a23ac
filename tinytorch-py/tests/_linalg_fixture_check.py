"""The comparison that test_linalg.py and test_special.py run for every case of
linalg_cases.py against fixtures/linalg_special.json (scripts/fixtures/gen_linalg_fixtures.py)."""

import json
import os

import tinytorch as torch

import linalg_cases

with open(os.path.join(os.path.dirname(__file__), "fixtures", "linalg_special.json")) as _f:
    DATA = json.load(_f)

# f32 kernels round once from f64 here but LAPACK computes in f32 there; gradients chain a
# few such results.
TOL = {"float32": (2e-4, 2e-4), "float64": (1e-9, 1e-8)}


def params(cases):
    """``(case, dtype)`` pairs with readable ids for pytest.mark.parametrize."""
    out = []
    for case in cases:
        for dtype in case[3]:
            out.append((case, dtype))
    return out


def ids(cases):
    return [f"{c[0]}-{d}" for c, d in params(cases)]


def _close(got, want, what, atol, rtol):
    assert list(got.shape) == want["shape"], f"{what}: shape {tuple(got.shape)} vs {want['shape']}"
    g = got.detach().double().reshape(-1).tolist()
    w = want["values"]
    bad = []
    for i, (a, b) in enumerate(zip(g, w)):
        if a != a and b != b:  # both NaN
            continue
        if a == b:  # equal, infinities included
            continue
        if not abs(a - b) <= atol + rtol * abs(b):
            bad.append((i, a, b))
    assert not bad, f"{what}: {len(bad)} of {len(w)} differ, first {bad[:3]}"


def check(case, dtype):
    """Forward outputs and gradients of ``case`` in ``dtype`` equal PyTorch's."""
    want = DATA[f"{case[0]}/{dtype}"]
    outs, grads = linalg_cases.run(torch, case, dtype)
    atol, rtol = TOL[dtype]
    assert len(outs) == len(want["outs"])
    for i, (o, w) in enumerate(zip(outs, want["outs"])):
        assert str(o.dtype).endswith(dtype) or not o.dtype.is_floating_point, \
            f"output {i}: dtype {o.dtype}, want {dtype}"
        _close(o, w, f"{case[0]} output {i}", atol, rtol)
    for leaf, w in want["grads"].items():
        g = grads[leaf]
        if w is None:
            assert g is None, f"{case[0]}: {leaf} has a gradient, PyTorch gives none"
            continue
        assert g is not None, f"{case[0]}: no gradient for {leaf}"
        _close(g, w, f"{case[0]} grad {leaf}", atol * 10, rtol * 10)
