"""Other people's PyTorch model code, run unmodified on tinytorch (issue 48).

Each case of ``conformance_cases.py`` imports a model from a pinned PyPI package (installed with
``pip install --no-deps`` by scripts/test_all.sh) whose ``import torch`` resolves to
tinytorch through ``torch_shim``, loads NumPy-drawn weights with ``load_state_dict``, and
must reproduce what real PyTorch computed on the same numbers
(tests/fixtures/conformance.npz, from scripts/fixtures/gen_conformance_fixtures.py): the forward
output, the loss, every parameter gradient, the losses of three SGD steps and the
parameters after them. A case whose package is not installed is skipped; an API that
tinytorch lacks fails the case with the error the model code hit (e.g. the
``AttributeError`` naming the missing attribute).
"""

import importlib.metadata
import importlib.util
import os

import numpy as np
import pytest

import torch_shim

torch = torch_shim.install()

import conformance_cases as cases  # noqa: E402  (imports `torch`: the shim's by now)

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "conformance.npz")
REFERENCE = dict(np.load(FIXTURE))

#: float32 on both sides, but different summation orders (blocked matmul, fused kernels):
#: elements agree to this relative error, or to this fraction of the tensor's largest
#: magnitude for elements near zero.
RTOL = 1e-4
ATOL_SCALE = 1e-4  # the default of Case.atol_scale
#: A gradient that is zero in exact arithmetic (the bias of a layer followed by a
#: LayerNorm or BatchNorm, whose output does not depend on it) comes out as roundoff, on
#: both sides, whose size follows the magnitudes of the whole backward pass rather than its
#: own: gradients also agree to this fraction of the largest gradient of the model.
GRAD_NOISE_SCALE = 1e-5


def assert_close(got, want, what, floor=0.0, atol_scale=ATOL_SCALE):
    """Elementwise ``|got - want| <= atol + RTOL * |want|`` with ``atol`` ``atol_scale``
    times the larger of ``want``'s largest magnitude and ``floor``; the message names the
    tensor and its worst element."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} but PyTorch gives {want.shape}"
    if want.size == 0:
        return
    atol = atol_scale * max(float(np.abs(want).max()), floor, 1e-6)
    err = np.abs(got - want)
    bad = ~(err <= atol + RTOL * np.abs(want))
    if bad.any():
        k = int(np.argmax(np.where(bad, err, -1).reshape(-1)))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {want.size} elements differ from PyTorch; worst at "
            f"flat index {k}: {got.reshape(-1)[k]!r} vs {want.reshape(-1)[k]!r} "
            f"(atol {atol:.2e}, rtol {RTOL})")


def test_fixture_matches_the_pinned_packages():
    """The fixtures were generated with exactly the versions that CI installs."""
    for pkg, version in cases.PACKAGES.items():
        assert str(REFERENCE[f"meta/version/{pkg}"]) == version, pkg


def test_shim_aliases_torch_to_tinytorch():
    import sys

    import tinytorch
    import tinytorch.nn.functional

    import torch.nn.functional as F  # resolved by the shim

    assert sys.modules["torch"] is tinytorch and F is tinytorch.nn.functional
    assert sys.modules["torch.nn"] is tinytorch.nn
    with pytest.raises(ModuleNotFoundError, match="tinytorch.no_such_module"):
        import torch.no_such_module  # noqa: F401


def _require(case):
    """Skips when a package the case needs is absent; fails when its version differs from
    the pin the fixtures were made with."""
    for module in case.modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (scripts/test_all.sh installs it)")
    for pkg, version in cases.PACKAGES.items():
        try:
            installed = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
        module = pkg.replace("-", "_")
        if module in case.modules:
            assert installed == version, (
                f"{pkg} {installed} is installed but the fixtures come from {version}")


@pytest.mark.parametrize("name", [case.name for case in cases.CASES])
def test_model_matches_pytorch(name):
    case = cases.CASE_BY_NAME[name]
    _require(case)
    if f"{name}/loss" not in REFERENCE:
        pytest.fail(f"no reference for {name}: run scripts/fixtures/gen_conformance_fixtures.py {name}")
    if case.missing_api:
        # A known gap: the model must still fail, and with the error naming the API; once
        # tinytorch has it, this fails ("DID NOT RAISE") until the case drops missing_api.
        with pytest.raises((AttributeError, ImportError)) as info:
            cases.run_case(case)
        assert case.missing_api.rsplit(".", 1)[-1] in str(info.value), info.value
        pytest.xfail(f"tinytorch lacks {case.missing_api}: {info.value}")
    got = cases.run_case(case)
    want = {k[len(name) + 1:]: v for k, v in REFERENCE.items() if k.startswith(name + "/")}

    tol = case.atol_scale
    assert_close(got["out"], want["out"], f"{name}: forward output", atol_scale=tol)
    assert_close(got["loss"], want["loss"], f"{name}: loss", atol_scale=tol)
    got_grads = sorted(k for k in got if k.startswith("grad."))
    want_grads = sorted(k for k in want if k.startswith("grad."))
    assert got_grads == want_grads, (
        f"{name}: parameters with a gradient differ: only in tinytorch "
        f"{sorted(set(got_grads) - set(want_grads))}, only in PyTorch "
        f"{sorted(set(want_grads) - set(got_grads))}")
    grad_scale = max((float(np.abs(want[k]).max()) for k in want_grads if want[k].size),
                     default=0.0)
    for key in want_grads:
        assert_close(got[key], want[key], f"{name}: {key}",
                     floor=grad_scale * GRAD_NOISE_SCALE / tol, atol_scale=tol)
    assert_close(got["losses"], want["losses"], f"{name}: losses of {cases.STEPS} SGD steps",
                 atol_scale=tol)
    want_after = sorted(k for k in want if k.startswith("after."))
    assert sorted(k for k in got if k.startswith("after.")) == want_after
    for key in want_after:
        assert_close(got[key], want[key], f"{name}: {key} after {cases.STEPS} SGD steps",
                     atol_scale=tol)
