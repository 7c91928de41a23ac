"""``torch.autograd.Function``: a user op with its own ``backward``, run by the Rust engine
(the Python ``backward`` is called back when the engine reaches the node)."""

from .. import _tinytorch as _C
from .._grad_mode import no_grad


class FunctionCtx:
    """The ``ctx`` of ``forward``/``backward``: tensors saved for backward and which inputs
    need a gradient."""

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


class Function:
    """Subclass with ``@staticmethod forward(ctx, *args)`` and ``backward(ctx, grad)``, then
    call ``YourFunction.apply(*args)``. ``backward`` returns one gradient per ``forward``
    argument (None for non-tensors and inputs that need none). ``forward`` may return one
    tensor or a tuple; ``backward`` then gets one gradient per output (zeros for a float
    output the loss did not use, None for other outputs)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom "
                                  "autograd.Function.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]

        def input_grads(grads):
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got "
                                   f"{len(grads)})")
            return [grads[i] for i in positions]

        inputs = [args[i] for i in positions]
        if isinstance(out, _C.Tensor):
            return _C._custom_function(out, inputs, lambda g: input_grads(cls.backward(ctx, g)),
                                       cls.__name__)
        if not isinstance(out, tuple):
            raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple, got "
                            f"{type(out).__name__}")
        return _apply_several(cls, ctx, out, inputs, input_grads)


def _apply_several(cls, ctx, outs, inputs, input_grads):
    """Several outputs through the one-output node: the float outputs are flattened into one
    tensor, which the node produces, and handed back as differentiable views of it; the
    node's backward splits its gradient into one per output for ``cls.backward``."""
    import tinytorch as torch

    diff = [i for i, o in enumerate(outs) if isinstance(o, _C.Tensor) and o.is_floating_point()]
    if not diff:
        return outs
    dtype = outs[diff[0]].dtype
    if any(outs[i].dtype != dtype for i in diff):
        raise NotImplementedError(f"{cls.__name__}.forward returned float outputs of "
                                  "different dtypes: cast them to one")
    shapes = [tuple(outs[i].shape) for i in diff]
    sizes = [outs[i].numel() for i in diff]
    with no_grad():
        flat = torch.cat([outs[i].reshape(-1) for i in diff])

    def backward(grad):
        grads = [None] * len(outs)
        at = 0
        for i, shape, n in zip(diff, shapes, sizes):
            grads[i] = grad[at:at + n].reshape(shape)
            at += n
        return input_grads(cls.backward(ctx, *grads))

    flat = _C._custom_function(flat, inputs, backward, cls.__name__)
    result, at = list(outs), 0
    for i, shape, n in zip(diff, shapes, sizes):
        result[i] = flat[at:at + n].reshape(shape)
        at += n
    return tuple(result)
