"""``torch.*`` functions that the Rust library has no kernel for, composed from its ops:
``diag``, ``normal``, ``bernoulli``, ``bincount``, ``hann_window``, ``erfinv``, ``hstack``,
``vstack``, ``tensor_split``, ``cdist``, ``ravel``, ``is_complex``. Each checks its
arguments as PyTorch does, with PyTorch's exception types."""

import math

from . import _tinytorch as _C
from ._grad_mode import no_grad


def diag(input, diagonal=0):
    """A 1-D ``input`` as the ``diagonal``-th diagonal of a square matrix (zeros elsewhere);
    of a 2-D ``input``, its ``diagonal``-th diagonal (a copy)."""
    if input.dim() == 2:
        return input.diagonal(diagonal, 0, 1).clone()
    if input.dim() != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    k = input.shape[0]
    n = k + abs(diagonal)
    start = diagonal if diagonal >= 0 else -diagonal * n
    index = _C.arange(k, device=input.device) * (n + 1) + start
    flat = _C.zeros(n * n, dtype=input.dtype, device=input.device)
    return flat.scatter(0, index, input).reshape(n, n)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    """Draws from N(mean, std): ``mean`` and/or ``std`` tensors (broadcast together), or
    numbers with a ``size``."""
    if out is not None:
        raise TypeError("normal(): out= is not supported by TinyTorch")
    stds = std.reshape(-1).tolist() if isinstance(std, _C.Tensor) else [std]
    bad = [s for s in stds if not s >= 0]
    if bad:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {bad[0]:g}")
    tensors = [t for t in (mean, std) if isinstance(t, _C.Tensor)]
    if tensors:
        like = tensors[0]
        with no_grad():
            shape = tuple((mean + std).shape)  # the broadcast shape
            eps = _C.randn(*shape, generator=generator, dtype=like.dtype).to(like.device)
            return eps * std + mean
    if size is None:
        raise TypeError("normal(): with a float mean and std, a size is needed")
    eps = _C.randn(*size, generator=generator, dtype=dtype or _C.float32)
    t = eps * std + mean
    t = t.to(device) if device is not None else t
    return t.requires_grad_(True) if requires_grad else t


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 draws (``input``'s dtype and shape) that are 1 with probability ``input`` (or
    ``p``, a number, when given)."""
    if out is not None:
        raise TypeError("bernoulli(): out= is not supported by TinyTorch")
    if p is not None:
        probs = _C.full(tuple(input.shape), float(p), dtype=_C.float64)
    else:
        probs = input if input.is_floating_point() else input.to(_C.float64)
    if not bool(((probs >= 0) & (probs <= 1)).all()):
        raise RuntimeError("bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got "
                           "false.")
    with no_grad():
        u = _C.rand(*input.shape, generator=generator, dtype=_C.float64).to(input.device)
        return (u < probs.detach().to(_C.float64)).to(input.dtype)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer ``input`` (the
    sum of ``weights`` at those places, if given); at least ``minlength`` bins."""
    if (input.dim() != 1 or input.is_floating_point() or input.dtype == _C.bool
            or (input.numel() and int(input.min()) < 0)):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("bincount: minlength should be >= 0")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError("bincount: weights should be 1-d and have the same length as input")
    n = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        src = _C.ones(input.shape[0], dtype=_C.int64, device=input.device)
    else:
        src = weights if weights.is_floating_point() else weights.to(_C.float64)
    bins = _C.zeros(n, dtype=src.dtype, device=input.device)
    return bins.scatter_add(0, input, src) if input.numel() else bins


def hann_window(window_length, periodic=True, *, dtype=None, device=None,
                requires_grad=False):
    """``0.5 - 0.5 cos(2 pi n / N)`` for n < ``window_length``, N = ``window_length``
    (periodic) or ``window_length - 1``."""
    if window_length < 0:
        raise RuntimeError(f"hann_window requires non-negative window_length, got "
                           f"window_length={window_length}")
    dtype = dtype or _C.float32
    if window_length <= 1:
        t = _C.ones(window_length, dtype=dtype)
    else:
        n = window_length if periodic else window_length - 1
        t = 0.5 - 0.5 * (_C.arange(window_length, dtype=_C.float64) * (2 * math.pi / n)).cos()
        t = t.to(dtype)
    t = t.to(device) if device is not None else t
    return t.requires_grad_(True) if requires_grad else t


# Giles (2010), "Approximating the erfinv function": single-precision polynomials in
# w = -log(1 - x^2), for w < 5 (in w - 2.5) and beyond (in sqrt(w) - 3).
_CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _horner(coefficients, w):
    p = w * 0 + coefficients[0]
    for c in coefficients[1:]:
        p = p * w + c
    return p


def erfinv(input):
    """The inverse of ``erf`` on (-1, 1) (±inf at ±1, NaN outside): Giles' polynomials, then
    two Newton steps on ``erf(y) = x`` for full precision."""
    x = input if input.is_floating_point() else input.to(_C.float32)
    w = -((1 - x) * (1 + x)).clamp_min(1e-300 if x.dtype == _C.float64 else 1e-38).log()
    central = _horner(_CENTRAL, w - 2.5)
    tail = _horner(_TAIL, w.clamp_min(0).sqrt() - 3)
    y = _C.where(w < 5, central, tail) * x
    for _ in range(2):
        step = (y.erf() - x) / ((2 / math.sqrt(math.pi)) * (-(y * y)).exp())
        y = y - _C.where(x.abs() < 1, step, step * 0)
    inf = _C.full(tuple(x.shape), math.inf, dtype=x.dtype, device=x.device)
    y = _C.where(x >= 1, inf, y)
    y = _C.where(x <= -1, -inf, y)
    nan = inf * 0
    return _C.where(x.abs() > 1, nan, y)


def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    tensors = [t.reshape(1) if t.dim() == 0 else t for t in tensors]
    return _C.cat(tensors, 0 if tensors[0].dim() == 1 else 1)


def vstack(tensors):
    """Concatenate along dim 0, 1-D tensors (and 0-D ones) as rows."""
    return _C.cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)


def tensor_split(input, indices_or_sections, dim=0):
    """Views of ``input`` split along ``dim``: into ``n`` parts whose sizes differ by at
    most one (the first ones larger), or at the given indices."""
    size = input.shape[dim]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, "
                               f"got {n}")
        bounds, start = [], 0
        for i in range(n):
            start += size // n + (1 if i < size % n else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in indices_or_sections]
    out, start = [], 0
    for b in bounds + [size]:
        b = max(min(b, size), start)
        out.append(input.narrow(dim, start, b - start))
        start = b
    return tuple(out)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The ``p``-norm distances between the rows of ``x1`` (..., P, M) and of ``x2``
    (..., R, M): shape (..., P, R)."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist: X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 2.0:
        return (diff * diff).sum(-1).sqrt()
    return diff.norm(p, -1)


def is_complex(input):
    """Whether ``input`` has a complex dtype: TinyTorch has none."""
    return False


def ravel(input):
    """``input.reshape(-1)``."""
    return input.reshape(-1)
