"""``torch.distributions``: Categorical, Normal, Bernoulli, Uniform and MultivariateNormal
with PyTorch's parameters, shapes (``sample_shape + batch_shape + event_shape``),
``sample``/``rsample`` (reparameterised, so gradients reach the parameters), ``log_prob``,
``entropy``, ``mean``, ``variance``; ``kl_divergence`` for each family with itself. One file
per family; ``kl.py`` holds the divergences."""

from . import kl, utils  # noqa: F401
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform
from . import bernoulli, categorical, distribution, multivariate_normal, normal, uniform  # noqa

__all__ = ["Bernoulli", "Categorical", "Distribution", "MultivariateNormal", "Normal",
           "Uniform", "kl_divergence", "register_kl"]
