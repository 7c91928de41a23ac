"""``torch.distributions.Normal(loc, scale)``: the Gaussian, reparameterised as
``loc + scale * eps`` with ``eps ~ N(0, 1)``."""

import math

from .. import _tinytorch as _C
from .distribution import Distribution
from .utils import broadcast_all

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class Normal(Distribution):
    """``Normal(loc, scale, validate_args=None)``: mean ``loc``, standard deviation
    ``scale`` (> 0); numbers or tensors, broadcast together into the batch shape."""

    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), (), validate_args)
        self._check_param("loc", self.loc, self.loc == self.loc, "Real()")
        self._check_param("scale", self.scale, self.scale > 0,
                          "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _C.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check_value(value, value == value, "Real()")
        return (-((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log()
                - _LOG_SQRT_2PI)

    def cdf(self, value):
        """``P(X <= value)``."""
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()
