"""torch.linalg against PyTorch: every case of linalg_cases.LINALG (forward and gradients,
f32/f64, batched, 0-size batch, transposed input) compared with the fixture written by
scripts/fixtures/gen_linalg_fixtures.py; the error types and messages; f64 gradient checks by
central differences for the factorisations."""

import pytest

import tinytorch as torch

import linalg_cases
from _linalg_fixture_check import check, ids, params


@pytest.mark.parametrize("case,dtype", params(linalg_cases.LINALG), ids=ids(linalg_cases.LINALG))
def test_matches_pytorch(case, dtype):
    check(case, dtype)


def test_linalg_error_is_a_runtime_error():
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)


def test_singular_inverse_and_solve_raise_linalg_error():
    a = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(torch.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        torch.linalg.inv(a)
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal"):
        torch.linalg.inv(torch.stack([torch.eye(2), a]))
    with pytest.raises(torch.linalg.LinAlgError, match="input matrix is singular"):
        torch.linalg.solve(a, torch.ones(2))


def test_not_positive_definite_cholesky_raises_linalg_error():
    with pytest.raises(torch.linalg.LinAlgError,
                       match="the leading minor of order 1 is not positive-definite"):
        torch.linalg.cholesky(-torch.eye(2))
    with pytest.raises(RuntimeError, match="leading minor of order 2"):
        torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))


def test_shape_and_dtype_errors_are_runtime_errors():
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        torch.linalg.inv(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.linalg.det(torch.ones(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        torch.linalg.solve(torch.eye(3), torch.ones(2))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        torch.linalg.inv(torch.ones(2, 2, dtype=torch.int64))
    for bad in (lambda: torch.linalg.inv(torch.ones(2, 3)),):
        with pytest.raises(RuntimeError) as info:
            bad()
        assert not isinstance(info.value, torch.linalg.LinAlgError)


def test_named_results_unpack():
    a = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    w, v = torch.linalg.eigh(a)
    r = torch.linalg.eigh(a)
    assert r.eigenvalues is not None and r.eigenvectors.shape == (2, 2)
    u, s, vh = torch.linalg.svd(a)
    assert torch.linalg.svd(a).S.shape == (2,)
    q, rr = torch.linalg.qr(a)
    assert torch.allclose(q @ rr, a, atol=1e-6)
    sign, logabs = torch.linalg.slogdet(a)
    assert float(sign) == 1.0 and abs(float(logabs.exp()) - 5.0) < 1e-5


def test_factorisations_on_larger_random_matrices():
    torch.manual_seed(0)
    a = torch.randn(3, 7, 5, dtype=torch.float64)
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    assert torch.allclose((u * s.unsqueeze(-2)) @ vh, a, atol=1e-12)
    q, r = torch.linalg.qr(a)
    assert torch.allclose(q @ r, a, atol=1e-12)
    assert torch.allclose(q.mT @ q, torch.eye(5, dtype=torch.float64), atol=1e-12)
    sym = a.mT @ a
    w, v = torch.linalg.eigh(sym)
    assert torch.allclose((v * w.unsqueeze(-2)) @ v.mT, sym, atol=1e-11)
    l = torch.linalg.cholesky(sym)
    assert torch.allclose(l @ l.mT, sym, atol=1e-11)
    sq = a[..., :5, :]
    assert torch.allclose(sq @ torch.linalg.inv(sq), torch.eye(5, dtype=torch.float64),
                          atol=1e-10)


@pytest.mark.parametrize("fn", [
    lambda a: torch.linalg.inv(a + 3 * torch.eye(3, dtype=a.dtype)),
    lambda a: torch.linalg.det(a),
    lambda a: torch.linalg.cholesky(a @ a.mT + torch.eye(3, dtype=a.dtype)),
    lambda a: torch.linalg.qr(a)[0] * 2 + torch.linalg.qr(a)[1],
    lambda a: torch.linalg.eigvalsh(a + a.mT),
    lambda a: torch.linalg.svdvals(a),
    lambda a: torch.linalg.matrix_norm(a, "nuc"),
])
def test_gradient_matches_central_differences_f64(fn):
    torch.manual_seed(1)
    a = torch.randn(2, 3, 3, dtype=torch.float64)
    w = torch.randn(*fn(a).shape, dtype=torch.float64)
    x = a.clone().requires_grad_(True)
    (fn(x) * w).sum().backward()
    flat = a.reshape(-1).tolist()
    eps = 1e-6
    for i in range(len(flat)):
        def at(delta):
            v = list(flat)
            v[i] += delta
            t = torch.tensor(v, dtype=torch.float64).reshape(*a.shape)
            return float((fn(t) * w).sum())
        numeric = (at(eps) - at(-eps)) / (2 * eps)
        analytic = x.grad.reshape(-1)[i].item()
        assert abs(numeric - analytic) <= 1e-6 + 1e-5 * abs(numeric), (i, numeric, analytic)


def test_cuda_tensors_round_trip_through_the_host():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = torch.tensor([[4.0, 1.0], [1.0, 3.0]], device="cuda", requires_grad=True)
    l = torch.linalg.cholesky(a)
    assert l.device.type == "cuda"
    torch.linalg.det(a).backward()
    assert a.grad.device.type == "cuda"
