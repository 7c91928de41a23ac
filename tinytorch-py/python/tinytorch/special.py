"""``torch.special``: the special functions. ``erfc``, ``erfinv``, ``gammaln``, ``digamma``,
``polygamma`` (orders 0, 1) and the Bessel functions ``i0``, ``i0e``, ``i1``, ``i1e`` are
Rust kernels (computed in f64, ``tinytorch-core/src/backend/cpu/special.rs``); the rest are
composed from tensor ops here, so their gradients follow from those of the pieces, with
PyTorch's values at the special points (``xlogy(0, y) = 0``, ``sinc(0) = 1``,
``entr(0) = 0``)."""

import math as _math

from . import _tinytorch as _C
from ._tinytorch import _special as _S

__all__ = [
    "expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi",
    "polygamma", "multigammaln", "log_softmax", "softmax", "logsumexp", "xlogy", "xlog1py",
    "i0", "i0e", "i1", "i1e", "sinc", "ndtr", "ndtri", "log_ndtr", "entr", "log1p", "expm1",
    "exp2", "round",
]


def expit(input, *, out=None):
    """``1 / (1 + exp(-x))``, the logistic sigmoid."""
    return input.sigmoid()


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    p = input if eps is None else input.clamp(eps, 1.0 - eps)
    return (p / (1 - p)).log()


def erf(input, *, out=None):
    """The error function."""
    return input.erf()


def erfc(input, *, out=None):
    """``1 - erf(x)``, accurate where ``erf(x)`` is close to 1."""
    return input.erfc()


def erfcx(input, *, out=None):
    """The scaled complementary error function ``exp(x^2) * erfc(x)`` (composed: it
    overflows to inf * 0 beyond x ~ 26 in f64, where PyTorch's kernel does not)."""
    return (input * input).exp() * input.erfc()


def erfinv(input, *, out=None):
    """The inverse error function on [-1, 1]."""
    return input.erfinv()


def gammaln(input, *, out=None):
    """``log|Gamma(x)|``."""
    return input.lgamma()


def digamma(input, *, out=None):
    """The digamma function ``d/dx log Gamma(x)``."""
    return input.digamma()


psi = digamma


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of digamma, for ``n`` 0 and 1."""
    return _S.polygamma(int(n), input)


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)``."""
    out = input.new_full(input.shape, p * (p - 1) / 4 * _math.log(_math.pi))
    for j in range(p):
        out = out + (input - j / 2).lgamma()
    return out


def log_softmax(input, dim, *, dtype=None):
    """``log(softmax(x))`` along ``dim``, stable."""
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def softmax(input, dim, *, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(x)))`` over ``dim``, stable."""
    return input.logsumexp(dim, keepdim)


def _as_tensor(x, like):
    if isinstance(x, _C.Tensor):
        return x
    return _C.tensor(x, dtype=like.dtype if like.dtype.is_floating_point else None,
                     device=like.device)


def _x_times_log(input, other, log):
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN); a number
    argument becomes a tensor like the other one."""
    if not isinstance(input, _C.Tensor):
        input = _as_tensor(input, other)
    other = _as_tensor(other, input)
    value = input * log(other)
    return _C.where((input == 0) & ~other.isnan(), value.new_zeros(value.shape), value)


def xlogy(input, other, *, out=None):
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
    return _x_times_log(input, other, lambda t: t.log())


def xlog1py(input, other, *, out=None):
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
    return _x_times_log(input, other, lambda t: t.log1p())


def i0(input, *, out=None):
    """The modified Bessel function of the first kind of order 0."""
    return input.i0()


def i0e(input, *, out=None):
    """``i0(x) * exp(-|x|)``."""
    return _S.i0e(input)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind of order 1."""
    return _S.i1(input)


def i1e(input, *, out=None):
    """``i1(x) * exp(-|x|)``."""
    return _S.i1e(input)


def sinc(input, *, out=None):
    """The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0 (gradient 0 there)."""
    zero = input == 0
    safe = _C.where(zero, input.new_ones(input.shape), input) * _math.pi
    return _C.where(zero, input.new_ones(input.shape), safe.sin() / safe)


def ndtr(input, *, out=None):
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``, through ``erfc`` for accuracy
    in the lower tail."""
    return (input * (-_math.sqrt(0.5))).erfc() * 0.5


def ndtri(input, *, out=None):
    """The standard normal quantile function, ``sqrt(2) * erfinv(2 p - 1)``."""
    return (input * 2 - 1).erfinv() * _math.sqrt(2.0)


def log_ndtr(input, *, out=None):
    """``log(ndtr(x))``."""
    return ndtr(input).log()


def entr(input, *, out=None):
    """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    safe = _C.where(input > 0, input, input.new_ones(input.shape))
    value = -input * safe.log()
    value = _C.where(input == 0, input.new_zeros(input.shape), value)
    return _C.where(input < 0, input.new_full(input.shape, -_math.inf), value)


def log1p(input, *, out=None):
    """``log(1 + x)``, accurate near 0."""
    return input.log1p()


def expm1(input, *, out=None):
    """``exp(x) - 1``, accurate near 0."""
    return input.expm1()


def exp2(input, *, out=None):
    """``2 ** x``."""
    return 2.0 ** input


def round(input, decimals=0, *, out=None):  # noqa: A001 (PyTorch's name)
    """Round half to even (to ``decimals`` places)."""
    if decimals == 0:
        return input.round()
    scale = 10.0 ** decimals
    return (input * scale).round() / scale


# name -> function for both ``torch.<name>(x, ...)`` and ``x.<name>(...)`` where PyTorch
# has the name at top level too (``torch.lgamma``, ``x.logit()``, ``torch.polygamma``).
TORCH_NAMES = {
    "logit": logit, "xlogy": xlogy, "sinc": sinc, "mvlgamma": multigammaln,
    "exp2": exp2,
}
