"""``torch.autograd``: the grad-mode switches and ``backward``."""

from .._grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401


def backward(tensors, grad_tensors=None, retain_graph=None):
    """``torch.autograd.backward(tensors, grad_tensors)``: backward from each tensor."""
    from .. import Tensor

    if isinstance(tensors, Tensor):
        tensors, grad_tensors = [tensors], [grad_tensors]
    grad_tensors = grad_tensors or [None] * len(tensors)
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        keep = retain_graph if retain_graph is not None else i + 1 < len(tensors)
        t.backward(g, retain_graph=keep)
