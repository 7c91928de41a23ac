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
    argument (None for non-tensors and inputs that need none). One tensor output."""

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
        if not isinstance(out, _C.Tensor):
            raise NotImplementedError(f"{cls.__name__}.forward returned a "
                                      f"{type(out).__name__}: Functions with several outputs "
                                      "are not supported yet")
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]

        def backward(grad):
            grads = cls.backward(ctx, grad)
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got "
                                   f"{len(grads)})")
            return [grads[i] for i in positions]

        return _C._custom_function(out, [args[i] for i in positions], backward,
                                   cls.__name__)
