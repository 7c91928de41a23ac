"""``torch.distributions.Bernoulli(probs=None, logits=None)``: 1 with probability
``probs``, else 0."""

from .. import _tinytorch as _C
from ..nn import functional as F
from .distribution import Distribution
from .utils import broadcast_all, logits_to_probs, probs_to_logits


class Bernoulli(Distribution):
    """``Bernoulli(probs=None, logits=None, validate_args=None)``: exactly one of ``probs``
    (in [0, 1]) or ``logits`` (log-odds); numbers or tensors."""

    has_enumerate_support = True
    _param_names = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (probs,) = broadcast_all(probs)
            super().__init__(tuple(probs.shape), (), validate_args)
            self._check_param("probs", probs, (probs >= 0) & (probs <= 1),
                              "Interval(lower_bound=0.0, upper_bound=1.0)")
            self.probs = probs
            self.logits = probs_to_logits(probs, is_binary=True)
        else:
            (logits,) = broadcast_all(logits)
            super().__init__(tuple(logits.shape), (), validate_args)
            self._check_param("logits", logits, logits == logits, "Real()")
            self.logits = logits
            self.probs = logits_to_probs(logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of ``probs``/``logits``."""
        return tuple(self.probs.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = self.probs.detach().expand(*shape)
        u = _C.rand(*shape, dtype=probs.dtype, device=probs.device)
        return (u < probs).to(probs.dtype)

    def log_prob(self, value):
        self._check_value(value, (value == 0) | (value == 1), "Boolean()")
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype),
                                                   reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        """``[0., 1.]`` along a new first dim (expanded over the batch)."""
        values = _C.tensor([0.0, 1.0], dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values
