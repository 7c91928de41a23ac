"""``torch.distributions.Uniform(low, high)``: uniform on ``[low, high)``, reparameterised
as ``low + (high - low) * u`` with ``u ~ U(0, 1)``."""

from .. import _tinytorch as _C
from .distribution import Distribution
from .utils import broadcast_all


class Uniform(Distribution):
    """``Uniform(low, high, validate_args=None)``, ``low < high``; numbers or tensors,
    broadcast together into the batch shape."""

    has_rsample = True
    _param_names = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape), (), validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(f"Uniform is not defined when low >= high (low={self.low}, "
                             f"high={self.high})")

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.low * float("nan")

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _C.rand(*shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        self._check_value(value, (value >= self.low) & (value <= self.high),
                          f"Interval(lower_bound={self.low}, upper_bound={self.high})")
        inside = (value >= self.low).to(self.low.dtype) * (value < self.high).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        """``P(X <= value)``."""
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self):
        return (self.high - self.low).log()
