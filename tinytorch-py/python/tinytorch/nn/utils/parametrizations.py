"""``torch.nn.utils.parametrizations``: ``weight_norm`` as a parametrization
(``nn.utils.parametrize``), PyTorch's current form of weight normalisation: ``weight`` is
computed as ``g * v / ||v||`` from ``parametrizations.weight.original0`` (g, the norms) and
``original1`` (v, the direction), the state-dict keys PyTorch writes."""

from ..module import Module
from . import parametrize
from .weight_norm import _norm_except_dim


class _WeightNorm(Module):
    """``forward(g, v) = v * g / ||v||`` with the norm over every dim but ``dim``;
    ``right_inverse(w) = (||w||, w)``, so registering it keeps the weight's value."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def _norm_dim(self):
        # PyTorch's norm_except_dim takes -1 as "over all elements".
        return None if self.dim == -1 else self.dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self._norm_dim()))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self._norm_dim()), weight


def weight_norm(module, name="weight", dim=0):
    """Weight-normalise ``module.<name>`` (Salimans & Kingma, 2016) through a
    parametrization; ``dim=None`` normalises over the whole tensor. Returns the module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
