"""The two matrix routines MultivariateNormal needs, composed from tensor ops (the Rust
library has no factorisations): the Cholesky factor of a batch of symmetric positive
definite matrices, and the solution of lower-triangular systems. Each loops over the ``n``
rows or columns of one matrix (not over elements, nor over the batch), so gradients flow
through them like through any other ops; they are meant for the small ``n`` of a
distribution's event."""

from .. import _tinytorch as _C


def cholesky(a):
    """``L`` lower triangular with ``L @ L.mT == a`` (..., n, n); RuntimeError, as
    ``torch.linalg.cholesky``'s, when ``a`` is not positive definite."""
    n = a.shape[-1]
    if a.dim() < 2 or a.shape[-2] != n:
        raise RuntimeError(f"linalg.cholesky: A must be batches of square matrices, but they "
                           f"are {tuple(a.shape[-2:])} matrices")
    rows = _C.arange(n, device=a.device)
    columns = []
    for j in range(n):
        col = a[..., :, j]
        if j:
            done = _C.stack(columns, -1)  # (..., n, j)
            col = col - (done * done[..., j:j + 1, :]).sum(-1)
        pivot = col[..., j:j + 1]
        if not bool((pivot > 0).all()):
            raise RuntimeError(f"linalg.cholesky: The factorization could not be completed "
                               f"because the input is not positive-definite (the leading minor "
                               f"of order {j + 1} is not positive-definite).")
        below = (rows >= j).to(col.dtype)  # the column's entries above the diagonal are 0
        columns.append(col / pivot.sqrt() * below)
    return _C.stack(columns, -1)


def solve_lower(l, b):
    """``x`` with ``l @ x == b`` for lower-triangular ``l`` (..., n, n) and vectors ``b``
    (..., n), batch dims broadcast: forward substitution."""
    n = l.shape[-1]
    xs = []
    for i in range(n):
        acc = b[..., i]
        if i:
            acc = acc - (l[..., i, :i] * _C.stack(xs, -1)).sum(-1)
        xs.append(acc / l[..., i, i])
    return _C.stack(xs, -1)
