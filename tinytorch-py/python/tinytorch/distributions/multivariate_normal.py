"""``torch.distributions.MultivariateNormal``: the Gaussian over vectors, parameterised by
its covariance, its precision or the covariance's Cholesky factor ``scale_tril``;
reparameterised as ``loc + scale_tril @ eps``."""

import math

from .. import _tinytorch as _C
from ._linalg import cholesky, solve_lower
from .distribution import Distribution
from .utils import broadcast_shape

_LOG_2PI = math.log(2 * math.pi)


def _mahalanobis(scale_tril, diff):
    """``|scale_tril^-1 diff|^2`` over the last dim (batch dims broadcast)."""
    return solve_lower(scale_tril, diff).pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """``MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None,
    scale_tril=None, validate_args=None)``: exactly one of the three matrices (..., n, n);
    ``loc`` (..., n). The factorisations are done by ``_linalg`` (loops over ``n``)."""

    has_rsample = True
    _param_names = ("loc", "scale_tril")

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        matrix = given[0]
        if matrix.dim() < 2:
            which = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                     if covariance_matrix is not None else "precision_matrix")
            raise ValueError(f"{which} matrix must be at least two-dimensional, with "
                             "optional leading batch dimensions")
        n = loc.shape[-1]
        if tuple(matrix.shape[-2:]) != (n, n):
            raise ValueError(f"MultivariateNormal: the matrix must be ({n}, {n}) to match loc "
                             f"of shape {tuple(loc.shape)}, got {tuple(matrix.shape)}")
        batch_shape = broadcast_shape(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        super().__init__(batch_shape, (n,), validate_args)
        self.loc = loc.expand(*batch_shape, n)
        if scale_tril is not None:
            diag = scale_tril.diagonal(dim1=-2, dim2=-1)
            self._check_param("scale_tril", scale_tril,
                              (scale_tril == scale_tril.tril()) & (diag > 0).unsqueeze(-1),
                              "LowerCholesky()")
            self._scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._scale_tril = cholesky(covariance_matrix)
        else:
            self._scale_tril = _precision_to_scale_tril(precision_matrix)

    @property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance (batch-expanded)."""
        n = self._event_shape[0]
        return self._scale_tril.expand(*self._batch_shape, n, n)

    @property
    def covariance_matrix(self):
        """``scale_tril @ scale_tril.mT``."""
        return self.scale_tril @ self.scale_tril.transpose(-1, -2)

    @property
    def precision_matrix(self):
        """The inverse of the covariance, ``L^-T L^-1``."""
        n = self._event_shape[0]
        eye = _C.eye(n, dtype=self.loc.dtype, device=self.loc.device)
        l_inv_t = solve_lower(self._scale_tril.unsqueeze(-3), eye)  # (L^-1)^T: row j = L^-1 e_j
        return (l_inv_t @ l_inv_t.transpose(-1, -2)).expand(*self._batch_shape, n, n)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._scale_tril.pow(2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _C.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        self._check_value(value, value == value, "IndependentConstraint(Real(), 1)")
        n = self._event_shape[0]
        m = _mahalanobis(self._scale_tril, value - self.loc)
        return -0.5 * (n * _LOG_2PI + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h


def _precision_to_scale_tril(p):
    """The Cholesky factor of ``p``'s inverse, without forming the inverse: with ``F``
    the flip of both axes, ``L_f = cholesky(F p F)``, and the factor is ``(F L_f F)^-T``'s
    lower triangle (PyTorch's method)."""
    n = p.shape[-1]
    lf = cholesky(p.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).transpose(-1, -2)  # lower triangular
    eye = _C.eye(n, dtype=p.dtype, device=p.device)
    # Solve l_inv @ X = I column by column: each row of the result is one column of X.
    return solve_lower(l_inv.unsqueeze(-3), eye).transpose(-1, -2)
