"""The cases of test_linalg.py and test_special.py, shared with their fixture script
(scripts/fixtures/gen_linalg_fixtures.py), which runs them with PyTorch: each case builds its leaf
tensors with ``make`` and evaluates an expression over them with ``torch`` bound to PyTorch
there and to TinyTorch in the tests, so both sides compute the same thing by construction.

A case is ``(name, leaves, expression, dtypes, grad)``: ``leaves`` maps a leaf's name to
``(kind, shape, phase)`` (see ``make``); the expression gives a tensor or a tuple of tensors;
with ``grad`` the fixture holds the gradient of ``sum_i (out_i * w_i).sum()`` for each leaf,
``w_i`` = 0.1, 0.2, ... in ``out_i``'s shape. Expressions that return eigen- or singular
vectors fix their sign first (``_sgn``), since LAPACK's signs follow no rule."""

import math


def values(n, phase):
    """n deterministic numbers in (-0.5, 0.5): 0.5 * sin(0.37 i + 0.11 i^2 + phase) (the
    quadratic term makes matrices of them full rank; plain sin(a i + b) gives rank 2)."""
    return [0.5 * math.sin(0.37 * i + 0.11 * i * i + phase) for i in range(n)]


def make(torch, kind, shape, phase, dtype):
    """A leaf: ``gen`` (the values as they are), ``dd`` (plus 2 I: diagonally dominant, so
    invertible), ``spd`` (``X X^T + I``: positive definite), ``sym`` (``X + X^T`` plus a
    spread diagonal: symmetric with distinct eigenvalues), ``sing`` (the last row a copy of
    the first: singular)."""
    n = math.prod(shape)
    x = torch.tensor(values(n, phase), dtype=dtype).reshape(*shape)
    if kind == "gen":
        return x
    k = shape[-1]
    eye = torch.eye(k, dtype=dtype)
    if kind == "dd":
        return x + 2 * eye
    if kind == "spd":
        return x @ x.mT + eye
    if kind == "sym":
        spread = torch.arange(k, dtype=dtype) * 0.9
        return x + x.mT + spread.unsqueeze(-1) * eye
    if kind == "sing":
        return torch.cat([x[..., :-1, :], x[..., :1, :]], -2)
    raise ValueError(kind)


F = ("float32", "float64")
D = ("float64",)

# Sign fixing for eigenvectors (columns) and singular vectors: the sign of each column's
# first entry (of U) multiplies the column of U and the row of Vh.
_SGN = "s = {u}[..., :1, :].sign(); "

LINALG = [
    # inverse, solve, determinants
    ("inv", {"A": ("dd", (3, 3), 0.1)}, "torch.linalg.inv(A)", F, True),
    ("inv_batched", {"A": ("dd", (2, 3, 3), 0.2)}, "torch.linalg.inv(A)", F, True),
    ("inv_transposed", {"A": ("dd", (3, 3), 0.3)}, "torch.linalg.inv(A.mT)", F, True),
    ("inv_empty_batch", {"A": ("dd", (0, 3, 3), 0.3)}, "torch.linalg.inv(A)", D, True),
    ("inverse_alias", {"A": ("dd", (3, 3), 0.4)}, "torch.inverse(A) + A.inverse()", D, True),
    ("solve", {"A": ("dd", (2, 3, 3), 0.5), "B": ("gen", (2, 3, 2), 0.6)},
     "torch.linalg.solve(A, B)", F, True),
    ("solve_vector", {"A": ("dd", (3, 3), 0.7), "B": ("gen", (3,), 0.8)},
     "torch.linalg.solve(A, B)", F, True),
    ("solve_batched_vectors", {"A": ("dd", (2, 3, 3), 0.9), "B": ("gen", (2, 3), 1.0)},
     "torch.linalg.solve(A, B)", D, True),
    ("solve_broadcast", {"A": ("dd", (3, 3), 1.1), "B": ("gen", (2, 3, 4), 1.2)},
     "torch.linalg.solve(A, B)", D, True),
    ("solve_right", {"A": ("dd", (3, 3), 1.3), "B": ("gen", (2, 3), 1.4)},
     "torch.linalg.solve(A, B, left=False)", D, True),
    ("solve_triangular_upper", {"A": ("dd", (3, 3), 1.5), "B": ("gen", (3, 2), 1.6)},
     "torch.linalg.solve_triangular(A, B, upper=True)", F, True),
    ("solve_triangular_lower_right_unit", {"A": ("dd", (3, 3), 1.7), "B": ("gen", (2, 3), 1.8)},
     "torch.linalg.solve_triangular(A, B, upper=False, left=False, unitriangular=True)", D, True),
    ("det", {"A": ("gen", (4, 4), 1.9)}, "torch.linalg.det(A)", F, True),
    ("det_batched", {"A": ("dd", (2, 3, 3), 2.0)}, "torch.linalg.det(A)", F, True),
    ("det_singular", {"A": ("sing", (3, 3), 2.1)}, "torch.linalg.det(A)", D, True),
    ("det_alias", {"A": ("gen", (3, 3), 2.2)}, "torch.det(A) + A.det()", D, True),
    ("slogdet", {"A": ("gen", (2, 3, 3), 2.3)}, "tuple(torch.linalg.slogdet(A))", F, True),
    ("logdet", {"A": ("spd", (3, 3), 2.4)}, "torch.logdet(A)", D, True),
    # factorisations
    ("cholesky", {"A": ("spd", (2, 3, 3), 2.5)}, "torch.linalg.cholesky(A)", F, True),
    ("cholesky_upper", {"A": ("spd", (3, 3), 2.6)}, "torch.linalg.cholesky(A, upper=True)",
     D, True),
    ("cholesky_composed", {"X": ("gen", (4, 4), 2.7)},
     "torch.linalg.cholesky(X @ X.mT + torch.eye(4, dtype=X.dtype))", D, True),
    ("qr", {"A": ("gen", (4, 3), 2.8)}, "tuple(torch.linalg.qr(A))", F, True),
    ("qr_wide", {"A": ("gen", (3, 4), 2.9)}, "tuple(torch.linalg.qr(A))", D, True),
    ("qr_batched_transposed", {"A": ("gen", (2, 3, 4), 3.0)}, "tuple(torch.linalg.qr(A.mT))",
     D, True),
    ("qr_complete", {"A": ("gen", (4, 2), 3.1)}, "tuple(torch.linalg.qr(A, mode='complete'))",
     F, False),
    ("qr_r", {"A": ("gen", (4, 3), 3.2)}, "torch.linalg.qr(A, mode='r')[1]", D, False),
    # spectral
    ("eigh", {"A": ("sym", (3, 3), 3.3)},
     "(lambda r: (r.eigenvalues, r.eigenvectors * r.eigenvectors[..., :1, :].sign()))"
     "(torch.linalg.eigh(A))", F, True),
    ("eigh_upper_batched", {"A": ("sym", (2, 4, 4), 3.4)},
     "(lambda r: (r[0], r[1] * r[1][..., :1, :].sign()))(torch.linalg.eigh(A, UPLO='U'))",
     D, True),
    ("eigh_nonsymmetric_lower", {"A": ("gen", (3, 3), 3.5)}, "torch.linalg.eigvalsh(A)", D, True),
    ("eigvalsh", {"A": ("sym", (2, 3, 3), 3.6)}, "torch.linalg.eigvalsh(A)", F, True),
    ("svd", {"A": ("gen", (4, 3), 3.7)},
     "(lambda r: (lambda s: (r.U * s, r.S, r.Vh * s.mT))(r.U[..., :1, :].sign()))"
     "(torch.linalg.svd(A, full_matrices=False))", F, True),
    ("svd_wide_batched", {"A": ("gen", (2, 3, 5), 3.8)},
     "(lambda r: (lambda s: (r.U * s, r.S, r.Vh * s.mT))(r.U[..., :1, :].sign()))"
     "(torch.linalg.svd(A, full_matrices=False))", D, True),
    ("svd_full_reconstructs", {"A": ("gen", (4, 3), 3.9)},
     "(lambda r: (r.S, (r.U[..., :, :3] * r.S.unsqueeze(-2)) @ r.Vh, r.U.mT @ r.U))"
     "(torch.linalg.svd(A))", F, False),
    ("svdvals", {"A": ("gen", (2, 3, 4), 4.0)}, "torch.linalg.svdvals(A)", F, True),
    ("svd_legacy", {"A": ("gen", (3, 3), 4.1)}, "torch.svd(A).S", D, True),
    # norms
    ("vector_norm_2", {"X": ("gen", (3, 4), 4.2)}, "torch.linalg.vector_norm(X)", F, True),
    ("vector_norm_ords", {"X": ("gen", (3, 4), 4.3)},
     "tuple(torch.linalg.vector_norm(X, o, dim=1) for o in (1, 3, 0.5, float('inf'), "
     "-float('inf'), 0))", F, True),
    ("vector_norm_keepdim", {"X": ("gen", (2, 3, 4), 4.4)},
     "torch.linalg.vector_norm(X, 2, dim=(0, 2), keepdim=True)", D, True),
    ("matrix_norm_ords", {"A": ("gen", (2, 3, 4), 4.5)},
     "tuple(torch.linalg.matrix_norm(A, o) for o in ('fro', 'nuc', 1, -1, 2, -2, "
     "float('inf'), -float('inf')))", F, True),
    ("matrix_norm_dims_keepdim", {"A": ("gen", (3, 2, 4), 4.6)},
     "(torch.linalg.matrix_norm(A, 'nuc', dim=(0, 2), keepdim=True), "
     "torch.linalg.matrix_norm(A, 1, dim=(2, 0)))", D, True),
    ("norm_dispatch", {"A": ("gen", (3, 4), 4.7)},
     "(torch.linalg.norm(A), torch.linalg.norm(A, 'fro'), torch.linalg.norm(A, 2), "
     "torch.linalg.norm(A, dim=1), torch.linalg.norm(A, 1, dim=(0, 1)), "
     "torch.linalg.norm(A.reshape(-1), 3))", D, True),
    # composed
    ("matrix_power", {"A": ("dd", (2, 3, 3), 4.8)},
     "tuple(torch.linalg.matrix_power(A, k) for k in (0, 1, 3, -2))", D, True),
    ("pinv", {"A": ("gen", (4, 3), 4.9)}, "torch.linalg.pinv(A)", F, True),
    ("pinv_wide", {"A": ("gen", (2, 5), 5.0)}, "torch.linalg.pinv(A)", D, True),
    ("lstsq", {"A": ("gen", (5, 3), 5.1), "B": ("gen", (5, 2), 5.2)},
     "(lambda r: (r.solution, r.residuals))(torch.linalg.lstsq(A, B))", D, True),
    ("matrix_rank", {"A": ("sing", (4, 4), 5.3)},
     "torch.linalg.matrix_rank(A).double()", D, False),
]

SPECIAL = [
    ("expit", {"X": ("gen", (2, 5), 0.1)}, "torch.special.expit(X * 8)", F, True),
    ("logit", {"X": ("gen", (2, 5), 0.2)}, "torch.special.logit(X.abs() + 0.05)", F, True),
    ("logit_eps", {"X": ("gen", (2, 5), 0.3)}, "torch.special.logit(X + 0.5, eps=0.1)", D, True),
    ("erf", {"X": ("gen", (2, 5), 0.4)}, "torch.special.erf(X * 6)", F, True),
    ("erfc", {"X": ("gen", (2, 5), 0.5)}, "torch.special.erfc(X * 12)", F, True),
    ("erfinv", {"X": ("gen", (2, 5), 0.6)}, "torch.special.erfinv(X * 1.98)", F, True),
    ("erfinv_edges", {"X": ("gen", (4,), 0.7)},
     "torch.erfinv(torch.tensor([-1.0, 1.0, 1.5, 0.0], dtype=X.dtype)) + X * 0", F, False),
    ("gammaln", {"X": ("gen", (3, 5), 0.8)}, "torch.special.gammaln(X * 9 + 0.01)", F, True),
    ("lgamma_method", {"X": ("gen", (5,), 0.9)}, "torch.lgamma(X.abs() * 30 + 0.5) + X.lgamma()",
     D, True),
    ("digamma", {"X": ("gen", (3, 5), 1.0)}, "torch.special.digamma(X * 9 + 0.01)", F, True),
    ("psi_large", {"X": ("gen", (5,), 1.1)}, "torch.special.psi(X.abs() * 100 + 1)", D, True),
    ("polygamma1", {"X": ("gen", (5,), 1.2)}, "torch.special.polygamma(1, X * 5 + 0.1)", F,
     False),
    ("multigammaln", {"X": ("gen", (5,), 1.3)}, "torch.special.multigammaln(X.abs() * 3 + 2, 3)",
     D, True),
    ("log_softmax", {"X": ("gen", (3, 4), 1.4)}, "torch.special.log_softmax(X * 3, 1)", F, True),
    ("softmax", {"X": ("gen", (3, 4), 1.5)}, "torch.special.softmax(X * 3, 0)", F, True),
    ("logsumexp", {"X": ("gen", (3, 4), 1.6)}, "torch.special.logsumexp(X * 3, 1)", F, True),
    ("xlogy", {"X": ("gen", (2, 5), 1.7), "Y": ("gen", (2, 5), 1.8)},
     "torch.special.xlogy(X * (X > 0), Y.abs() + 0.1)", F, True),
    ("xlogy_scalar", {"Y": ("gen", (5,), 1.9)}, "torch.special.xlogy(2.0, Y.abs() + 0.1)", D, True),
    ("xlog1py", {"X": ("gen", (2, 5), 2.0), "Y": ("gen", (2, 5), 2.1)},
     "torch.special.xlog1py(X * (X > 0), Y)", D, True),
    ("i0", {"X": ("gen", (2, 5), 2.2)}, "torch.special.i0(X * 40)", F, True),
    ("i0e", {"X": ("gen", (2, 5), 2.3)}, "torch.special.i0e(X * 120)", F, True),
    ("i1", {"X": ("gen", (2, 5), 2.4)}, "torch.special.i1(X * 40)", F, True),
    ("i1e", {"X": ("gen", (2, 5), 2.5)}, "torch.special.i1e(X * 120)", F, True),
    ("i0_method", {"X": ("gen", (5,), 2.6)}, "torch.i0(X * 4) + X.i0()", D, True),
    ("sinc", {"X": ("gen", (2, 5), 2.7)}, "torch.special.sinc(X * 5)", F, True),
    ("sinc_zero", {"X": ("gen", (3,), 2.8)}, "torch.special.sinc(X * 0)", D, True),
    ("ndtr", {"X": ("gen", (2, 5), 2.9)}, "torch.special.ndtr(X * 16)", F, True),
    ("ndtri", {"X": ("gen", (2, 5), 3.0)}, "torch.special.ndtri(X.abs() * 1.9 + 0.02)", D, True),
    ("log_ndtr", {"X": ("gen", (2, 5), 3.1)}, "torch.special.log_ndtr(X * 8)", D, True),
    # PyTorch's gradient of entr is -(1 + log x) everywhere (NaN for x < 0); ours is 0
    # outside x > 0, so gradients are compared on x > 0 only.
    ("entr", {"X": ("gen", (2, 5), 3.2)}, "torch.special.entr(X * 2)", D, False),
    ("entr_positive", {"X": ("gen", (2, 5), 3.25)}, "torch.special.entr(X.abs() * 2 + 0.01)",
     F, True),
    ("entr_zero", {"X": ("gen", (3,), 3.3)}, "torch.special.entr(X.abs() * (X > 0))", D, False),
    ("log1p_expm1_exp2", {"X": ("gen", (2, 5), 3.4)},
     "(torch.special.log1p(X), torch.special.expm1(X), torch.special.exp2(X * 3))", F, True),
    ("round", {"X": ("gen", (2, 5), 3.5)},
     "(torch.special.round(X * 10), torch.special.round(X, decimals=2))", D, False),
    ("erfc_method", {"X": ("gen", (5,), 3.6)}, "torch.erfc(X) + X.erfc() + torch.digamma(X + 1)",
     D, True),
]


def weights(torch, t):
    """0.1, 0.2, ... in ``t``'s shape and dtype (the upstream gradient)."""
    n = t.numel()
    return (torch.arange(1, n + 1, dtype=torch.float64) * 0.1).reshape(tuple(t.shape)).to(t.dtype)


def run(torch, case, dtype_name):
    """Evaluate ``case`` in ``torch`` (PyTorch or TinyTorch): the outputs (a tuple) and,
    when the case has ``grad``, the leaves' gradients (a dict; ``None`` for none)."""
    name, leaves, expr, _, grad = case
    dtype = getattr(torch, dtype_name)
    env = {"torch": torch}
    for leaf, (kind, shape, phase) in leaves.items():
        env[leaf] = make(torch, kind, shape, phase, dtype).detach().requires_grad_(grad)
    out = eval(expr, env)  # noqa: S307 (the expressions are the fixed cases above)
    outs = out if isinstance(out, tuple) else (out,)
    grads = {}
    if grad:
        loss = sum((o * weights(torch, o)).sum() for o in outs if o.dtype.is_floating_point)
        loss.backward()
        grads = {leaf: env[leaf].grad for leaf in leaves}
    return outs, grads
