"""torch.special against PyTorch: every case of linalg_cases.SPECIAL (forward and
gradients, f32/f64) compared with the fixture written by scripts/fixtures/gen_linalg_fixtures.py,
and the torch.* / Tensor aliases of the new kernels."""

import pytest

import tinytorch as torch

import linalg_cases
from _linalg_fixture_check import check, ids, params


@pytest.mark.parametrize("case,dtype", params(linalg_cases.SPECIAL),
                         ids=ids(linalg_cases.SPECIAL))
def test_matches_pytorch(case, dtype):
    check(case, dtype)


def test_aliases_exist():
    x = torch.tensor([0.5, 0.75])
    for name in ("lgamma", "digamma", "erfc", "erfinv", "i0"):
        assert torch.allclose(getattr(torch, name)(x), getattr(x, name)())
    assert torch.allclose(torch.special.psi(x), torch.digamma(x))
    assert torch.allclose(torch.polygamma(1, x), x.polygamma(1))
    assert torch.allclose(torch.logit(x * 0.5), (x * 0.5).logit())


def test_integer_input_computes_in_float():
    x = torch.tensor([1, 2, 3])
    assert torch.lgamma(x).dtype == torch.float32
    assert abs(float(torch.lgamma(x)[2]) - 0.6931471805599453) < 1e-6


def test_polygamma_higher_order_is_not_implemented():
    with pytest.raises(NotImplementedError):
        torch.special.polygamma(2, torch.tensor([1.0]))
