"""``torch.autograd``: ``grad``, ``backward``, ``Function`` and the grad-mode switches."""

from .. import _tinytorch as _C
from .._grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401
from .function import Function, FunctionCtx  # noqa: F401


def Variable(data, requires_grad=False, volatile=False):
    """``torch.autograd.Variable(t, requires_grad=False)``, the pre-0.4 wrapper: since
    PyTorch 0.4 a Variable is a tensor, so this returns ``t`` (requiring grad if asked)."""
    if not isinstance(data, _C.Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    return data.requires_grad_(True) if requires_grad else data


def _as_list(x):
    return [x] if isinstance(x, _C.Tensor) else list(x)


def _root(outputs, grad_outputs):
    """One output and its upstream gradient: several are folded into ``sum((o * g).sum())``,
    whose gradients are the same."""
    outputs = _as_list(outputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    grad_outputs = _as_list(grad_outputs) if not isinstance(grad_outputs, (list, tuple)) else list(grad_outputs)
    if len(outputs) == 1:
        return outputs[0], grad_outputs[0]
    with enable_grad():
        total = None
        for o, g in zip(outputs, grad_outputs):
            term = (o * g).sum() if g is not None else o.sum()
            total = term if total is None else total + term
    return total, None


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned as a tuple; no
    ``.grad`` changes. With ``create_graph=True`` the gradients are themselves differentiable
    (Hessian-vector products, gradient penalties); ``retain_graph`` defaults to
    ``create_graph``."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported by "
                                  "TinyTorch")
    # only_inputs is deprecated in PyTorch and ignored there too
    root, g = _root(outputs, grad_outputs)
    single = isinstance(inputs, _C.Tensor)
    inputs = _as_list(inputs)
    retain = None if retain_graph is None else bool(retain_graph)
    grads = _C._autograd_grad(root, g, inputs, retain, bool(create_graph))
    if any(x is None for x in grads):
        if materialize_grads:
            grads = [_C._like("zeros", i) if x is None else x for x, i in zip(grads, inputs)]
        elif not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                               "in the graph. Set allow_unused=True if this is the desired "
                               "behavior.")
    return tuple(grads) if not single or len(grads) != 1 else (grads[0],)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """``torch.autograd.backward(tensors, grad_tensors)``: backward from each tensor."""
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        keep = retain_graph if retain_graph is not None else (create_graph or i + 1 < len(tensors))
        t.backward(g, retain_graph=keep, create_graph=create_graph)
