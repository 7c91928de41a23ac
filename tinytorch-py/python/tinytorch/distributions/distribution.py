"""``torch.distributions.Distribution``: the base class. Shapes follow PyTorch: a sample
has shape ``sample_shape + batch_shape + event_shape``; ``sample`` draws without gradients,
``rsample`` (where the family has a reparameterisation) with them."""

from .. import _tinytorch as _C
from .._grad_mode import no_grad

_validate_default = True


class Distribution:
    """``Distribution(batch_shape=(), event_shape=(), validate_args=None)``; subclasses
    give ``rsample`` or ``sample``, ``log_prob``, ``entropy``, ``mean``, ``variance``.
    With ``validate_args`` (on by default, as in PyTorch), bad parameters and values outside
    the support raise ``ValueError``."""

    has_rsample = False
    has_enumerate_support = False

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions made from now on."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects a bool, got {value!r}")
        global _validate_default
        _validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        self._validate_args = _validate_default if validate_args is None else validate_args

    # ---- shapes ----------------------------------------------------------------------

    @property
    def batch_shape(self):
        """The shape of independent, differently parameterised distributions."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw of one distribution."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    # ---- sampling ----------------------------------------------------------------------

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised draw (gradients flow to the parameters)."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample (it is not "
                                  "reparameterizable)")

    def sample_n(self, n):
        """``sample((n,))``."""
        return self.sample((n,))

    # ---- densities and moments ---------------------------------------------------------

    def log_prob(self, value):
        """The log density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def entropy(self):
        """The entropy, one per batch element."""
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def perplexity(self):
        """``exp(entropy())``."""
        return self.entropy().exp()

    @property
    def mean(self):
        """The mean."""
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def mode(self):
        """The mode."""
        raise NotImplementedError(f"{type(self).__name__}.mode is not implemented")

    @property
    def variance(self):
        """The variance."""
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self):
        """The standard deviation, ``variance.sqrt()``."""
        return self.variance.sqrt()

    # ---- validation --------------------------------------------------------------------

    def _check_param(self, name, value, ok, constraint):
        """ValueError (PyTorch's message) unless ``ok`` (a bool tensor) holds everywhere."""
        if self._validate_args and not bool(ok.all()):
            raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) of distribution {type(self).__name__} to "
                             f"satisfy the constraint {constraint}, but found invalid values:"
                             f"\n{value}")

    def _check_value(self, value, ok, support):
        """ValueError unless ``value`` is a tensor and ``ok`` (its support check) holds."""
        if not self._validate_args:
            return
        if not isinstance(value, _C.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        if not bool(ok.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support}) of "
                             f"the distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        parts = []
        for name in self._param_names:
            v = self.__dict__.get(name)
            if v is not None:
                parts.append(f"{name}: {v.item() if v.dim() == 0 else tuple(v.shape)}")
        return f"{type(self).__name__}({', '.join(parts)})"

    _param_names = ()
