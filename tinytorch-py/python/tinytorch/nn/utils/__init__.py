"""``torch.nn.utils``: gradient clipping; pruning in ``prune``; ``rnn.pad_sequence``;
``weight_norm``; ``spectral_norm``; ``parametrize`` and ``parametrizations.weight_norm``."""

import math

from ... import _tinytorch as _C
from ..._grad_mode import no_grad


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients so that their joint norm is at most ``max_norm``; returns the
    norm before clipping."""
    params = list(parameters) if not isinstance(parameters, _C.Tensor) else [parameters]
    with no_grad():
        total = _C.clip_grad_norm_(params, float(max_norm), float(norm_type))
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError("the total norm of the gradients is non-finite")
    return total


def clip_grad_value_(parameters, clip_value):
    params = list(parameters) if not isinstance(parameters, _C.Tensor) else [parameters]
    with no_grad():
        _C.clip_grad_value_(params, float(clip_value))
from . import parametrizations, parametrize, prune, rnn  # noqa: E402,F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402,F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401
