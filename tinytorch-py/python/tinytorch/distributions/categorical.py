"""``torch.distributions.Categorical(probs=None, logits=None)``: a choice among the
categories of the last dimension."""

from .. import _tinytorch as _C
from .._dtype_info import finfo
from .._multinomial import multinomial
from .distribution import Distribution
from .utils import broadcast_shape, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """``Categorical(probs=None, logits=None, validate_args=None)``: exactly one of
    ``probs`` (non-negative, normalised along the last dim) or ``logits`` (unnormalised log
    probabilities); the last dim holds the categories, the others are the batch shape."""

    has_enumerate_support = True
    _param_names = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        if param.dim() < 1:
            raise ValueError(f"`{'probs' if probs is not None else 'logits'}` parameter must "
                             "be at least one-dimensional.")
        super().__init__(tuple(param.shape[:-1]), (), validate_args)
        if probs is not None:
            self._check_param("probs", probs, (probs >= 0) & (probs == probs), "Simplex()")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = probs_to_logits(self.probs)
        else:
            self._check_param("logits", logits, logits == logits,
                              "IndependentConstraint(Real(), 1)")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = logits_to_probs(self.logits)
        self._num_events = param.shape[-1]

    @property
    def param_shape(self):
        """The shape of ``probs``/``logits``."""
        return tuple(self.probs.shape)

    @property
    def mean(self):
        return _C.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                       device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        drawn = multinomial(probs_2d, n, True).t()  # (n, batch)
        return drawn.reshape(*self._extended_shape(sample_shape))

    def log_prob(self, value):
        k = self._num_events
        self._check_value(value, (value >= 0) & (value <= k - 1) & (value == value.round()),
                          f"IntegerInterval(lower_bound=0, upper_bound={k - 1})")
        value = value.long().unsqueeze(-1)
        shape = broadcast_shape(tuple(value.shape[:-1]), tuple(self.logits.shape[:-1]))
        log_pmf = self.logits.expand(*shape, k)
        value = value.expand(*shape, 1)
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        """The categories ``0..K-1`` along a new first dim (expanded over the batch)."""
        values = _C.arange(self._num_events, dtype=_C.int64, device=self.probs.device)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values
