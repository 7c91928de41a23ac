"""``torch.distributions.kl.kl_divergence(p, q)``: KL(p || q) in closed form, one function
per pair of families, registered with ``register_kl`` and found through the classes' MROs
(the most specific registered pair wins)."""

import math

from ..nn import functional as F
from ._linalg import solve_lower
from .bernoulli import Bernoulli
from .categorical import Categorical
from .multivariate_normal import MultivariateNormal, _mahalanobis
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_shape

_KL_REGISTRY = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...``."""
    if not (isinstance(type_p, type) and isinstance(type_q, type)):
        raise TypeError(f"register_kl expects two classes, got {type_p!r} and {type_q!r}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def _lookup(type_p, type_q):
    for i, p in enumerate(type_p.__mro__):
        for j, q in enumerate(type_q.__mro__):
            if (p, q) in _KL_REGISTRY:
                return _KL_REGISTRY[p, q]
    return None


def kl_divergence(p, q):
    """KL(p || q), one value per batch element; NotImplementedError for a pair without a
    closed form here."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fn(p, q)


def _fill(t, mask, value):
    return t.masked_fill(mask.expand(*t.shape) if tuple(mask.shape) != tuple(t.shape) else mask,
                         value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _fill(t, q.probs == 0, math.inf)
    t = _fill(t, p.probs == 0, 0.0)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _fill(_fill(t1, q.probs == 0, math.inf), p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _fill(_fill(t2, q.probs == 1, math.inf), p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _fill(result, (q.low > p.low) | (q.high < p.high), math.inf)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    n = p.event_shape[0]
    half_term1 = q._half_log_det() - p._half_log_det()
    batch = broadcast_shape(q.batch_shape, p.batch_shape)
    lq = q._scale_tril.expand(*batch, n, n)
    lp = p._scale_tril.expand(*batch, n, n)
    # tr(Σq^-1 Σp) = |Lq^-1 Lp|_F^2; the solve's rows are Lq^-1 times Lp's columns.
    term2 = solve_lower(lq.unsqueeze(-3), lp.transpose(-1, -2)).pow(2).sum((-2, -1))
    term3 = _mahalanobis(q._scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


__all__ = ["kl_divergence", "register_kl"]
