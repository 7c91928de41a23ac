"""``torch.linalg``: PyTorch's signatures over TinyTorch's linear-algebra ops (the kernels and
backward rules are in Rust, ``tinytorch-core/src/ops/linalg/``). Results that PyTorch returns as
named tuples (``eigh``, ``svd``, ``qr``, ``slogdet``, ``lstsq``) are named tuples here too.
A singular or not positive-definite matrix raises ``LinAlgError``, a ``RuntimeError``."""

from collections import namedtuple as _namedtuple

from . import _tinytorch as _C
from ._dtype_info import finfo as _finfo
from ._tinytorch import _linalg as _L

LinAlgError = _L.LinAlgError

_EighResult = _namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_SvdResult = _namedtuple("linalg_svd", ["U", "S", "Vh"])
_QrResult = _namedtuple("linalg_qr", ["Q", "R"])
_SlogdetResult = _namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_LstsqResult = _namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])

__all__ = [
    "LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "solve", "solve_triangular",
    "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "matrix_power",
    "pinv", "lstsq", "matrix_rank", "vecdot", "multi_dot", "matmul", "diagonal",
]


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (all dims when ``None``): ``ord`` any
    number or ±inf (0 counts the non-zeros)."""
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not str")
    if dim is None:
        dims = []
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    return _L.vector_norm(_cast(x, dtype), float(ord), dims, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm of ``A`` over the two dims ``dim``: ``'fro'``, ``'nuc'``, ±1 (column
    sums), ±2 (singular values), ±inf (row sums)."""
    return _L.matrix_norm(_cast(A, dtype), ord, tuple(dim), keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """``vector_norm`` or ``matrix_norm`` as PyTorch picks: a matrix norm when ``dim`` is a
    pair, or when ``dim`` is ``None``, ``ord`` is given and ``A`` is 2-D; the 2-norm of
    the flattened tensor when both are ``None``."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.dim() != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def inv(A, *, out=None):
    """The inverse of each square matrix of ``A`` (..., n, n)."""
    return _L.inv(A)


def solve(A, B, *, left=True, out=None):
    """``X`` with ``A @ X == B`` (``X @ A == B`` when not ``left``); ``B`` a matrix or a
    batch of vectors, batch dims broadcast."""
    return _L.solve(A, B, left)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """``X`` with ``A @ X == B`` for triangular ``A`` (only its ``upper`` or lower triangle
    is read)."""
    return _L.solve_triangular(A, B, upper, left, unitriangular)


def det(A, *, out=None):
    """The determinant of each square matrix."""
    return _L.det(A)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of each square matrix's determinant, without overflow."""
    return _SlogdetResult(*_L.slogdet(A))


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor ``L`` (``A = L L^T``; ``U = L^T`` when ``upper``)."""
    return _L.cholesky(A, upper)


def qr(A, mode="reduced", *, out=None):
    """``(Q, R)`` by Householder reflections; ``mode`` ``'reduced'``, ``'complete'`` or
    ``'r'`` (empty ``Q``)."""
    return _QrResult(*_L.qr(A, mode))


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L", *, out=None):
    """``(eigenvalues ascending, eigenvectors)`` of each symmetric matrix, reading its
    ``UPLO`` triangle."""
    return _EighResult(*_L.eigh(A, _uplo(UPLO)))


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of each symmetric matrix, ascending."""
    return _L.eigh(A, _uplo(UPLO))[0]


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending."""
    return _SvdResult(*_L.svd(A, full_matrices))


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix, descending."""
    return _L.svd(A, False)[1]


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (the inverse's power when negative)."""
    return _L.matrix_power(A, int(n))


def _tolerance(S, A, atol, rtol):
    # PyTorch: max(atol, rtol * max(S)), rtol = eps * max(m, n) when neither is given.
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else \
            _finfo(A.dtype).eps * max(A.shape[-2], A.shape[-1])
    tol = S.amax(-1, keepdim=True) * rtol if S.shape[-1] else S.sum(-1, keepdim=True)
    if atol is not None:
        tol = tol.clamp(min=atol)
    return tol


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse through the SVD: singular values at or below
    ``max(atol, rtol * max(S))`` count as zero."""
    if atol is None:
        return _L.pinv(A, rtol)
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _tolerance(S, A, atol, rtol)
    s_inv = _C.where(keep, 1.0 / _C.where(keep, S, S.new_ones(S.shape)), S.new_zeros(S.shape))
    return (Vh.mT * s_inv.unsqueeze(-2)) @ U.mT


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above ``max(atol, rtol * max(S))`` (int64)."""
    S = svdvals(A)
    return (S > _tolerance(S, A, atol, rtol)).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A @ X = B`` (minimum norm, through ``pinv``) as
    PyTorch returns it: ``(solution, residuals, rank, singular_values)``. As with PyTorch's
    CPU default driver ``'gelsy'``, ``residuals`` and ``singular_values`` are empty; with
    ``driver`` ``'gelsd'``/``'gelss'``/``'gels'`` the residuals (squared norms) are given
    when ``m > n`` and ``A`` has full rank, and ``'gelsd'``/``'gelss'`` give the singular
    values."""
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    X = _L.lstsq(A, Bm, rcond)
    rank = matrix_rank(A, rtol=rcond)
    m, n = A.shape[-2], A.shape[-1]
    empty = _C.zeros(0, dtype=A.dtype, device=A.device)
    residuals = empty
    singular_values = empty
    if driver in ("gelsd", "gelss", "gels") and m > n and bool((rank == n).all()):
        residuals = ((A @ X - Bm) ** 2).sum(-2)
    if driver in ("gelsd", "gelss"):
        singular_values = svdvals(A)
    if vector:
        X = X.squeeze(-1)
    return _LstsqResult(X, residuals, rank, singular_values)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot products of ``x`` and ``y`` along ``dim`` (broadcast)."""
    return (x * y).sum(dim)


def multi_dot(tensors, *, out=None):
    """The product of the matrices in order (the first may be a vector, as the last)."""
    if len(tensors) < 2:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got "
                           f"{len(tensors)}")
    result = tensors[0]
    for t in tensors[1:]:
        result = result @ t
    return result


def matmul(input, other, *, out=None):
    """``input @ other`` (``torch.matmul``)."""
    return input @ other


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices of ``A`` (``torch.diagonal`` with the last two dims as
    default)."""
    return A.diagonal(offset, dim1, dim2)


# ---- the older ``torch.*`` and ``Tensor.*`` names (``torch.det``, ``x.inverse()``, ...) ----

_SvdLegacy = _namedtuple("svd", ["U", "S", "V"])
_QrLegacy = _namedtuple("qr", ["Q", "R"])


def _logdet(A):
    """``log(det(A))``: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = _L.slogdet(A)
    return _C.where(sign < 0, logabs.new_full(logabs.shape, float("nan")), logabs)


def _svd_legacy(A, some=True, compute_uv=True):
    """``torch.svd``: ``(U, S, V)`` (``V``, not ``Vh``), reduced unless ``some=False``."""
    U, S, Vh = _L.svd(A, not some)
    return _SvdLegacy(U, S, Vh.mT)


def _qr_legacy(A, some=True):
    """``torch.qr``: reduced unless ``some=False``."""
    return _QrLegacy(*_L.qr(A, "reduced" if some else "complete"))


def _cholesky_legacy(A, upper=False):
    """``torch.cholesky`` (deprecated in PyTorch for ``torch.linalg.cholesky``)."""
    return _L.cholesky(A, upper)


def _pinverse(A, rcond=1e-15):
    """``torch.pinverse``: ``pinv`` with relative cutoff ``rcond``."""
    return _L.pinv(A, rcond)


# name -> function for both ``torch.<name>(A, ...)`` and ``A.<name>(...)``.
LEGACY = {
    "det": det, "logdet": _logdet, "slogdet": slogdet, "inverse": inv,
    "cholesky": _cholesky_legacy, "svd": _svd_legacy, "qr": _qr_legacy,
    "pinverse": _pinverse, "matrix_power": matrix_power,
}
