"""Helpers of the distributions: broadcasting parameters together, and the conversions
between probabilities and logits (PyTorch's ``torch.distributions.utils``)."""

import numbers

from .. import _tinytorch as _C
from .._dtype_info import finfo


def broadcast_shape(*shapes):
    """The shape that ``shapes`` broadcast to (NumPy's rule); ValueError if they do not."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"shapes {[tuple(s) for s in shapes]} cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_all(*values):
    """The tensors and numbers in ``values`` as tensors of one broadcast shape (numbers take
    the dtype and device of the first tensor, float32 when there is none)."""
    tensors = [v for v in values if isinstance(v, _C.Tensor)]
    for v in values:
        if not isinstance(v, (_C.Tensor, numbers.Number)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or "
                             f"torch.Tensor, got {type(v).__name__}")
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None and like.is_floating_point() else _C.float32
    device = like.device if like is not None else None
    values = [v if isinstance(v, _C.Tensor) else _C.tensor(float(v), dtype=dtype, device=device)
              for v in values]
    shape = broadcast_shape(*[tuple(v.shape) for v in values])
    return [v.expand(*shape) if tuple(v.shape) != shape else v for v in values]


def clamp_probs(probs):
    """Probabilities kept within ``[eps, 1 - eps]`` of their dtype."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid of binary logits, softmax of categorical ones (last dim)."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs, is_binary=False):
    """``log p - log(1 - p)`` of binary probabilities, ``log p`` of categorical ones (both
    clamped away from 0 and 1 first)."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()
