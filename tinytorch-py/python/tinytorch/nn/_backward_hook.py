"""The machinery of ``Module.register_full_backward_hook`` (PyTorch's
``torch.utils.hooks.BackwardHook``): the module's tensor inputs and outputs go through
identity autograd Functions. The outputs' backward records grad_output; the inputs' backward
(which runs once every input's gradient is known) calls the hooks with
``(module, grad_input, grad_output)`` and hands on the grad_input they return. When no input
needs a gradient, the hooks run from the outputs' backward with ``grad_input`` all None."""

from .. import _tinytorch as _C
from ..autograd.function import Function


class _Identity(Function):
    """n tensors in, the same n out; backward calls ``ctx.on_grad(grads)``, which returns the
    gradients to pass on."""

    @staticmethod
    def forward(ctx, on_grad, *tensors):
        ctx.on_grad = on_grad
        outs = tuple(t.detach() for t in tensors)
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_grad(grads))


def _tensor_positions(values):
    return [i for i, v in enumerate(values) if isinstance(v, _C.Tensor)]


def _apply_identity(values, on_grad):
    """``values`` (a tuple) with its tensors replaced by the identity's outputs."""
    positions = [i for i in _tensor_positions(values) if values[i].requires_grad]
    if not positions:
        return values, 0
    outs = _Identity.apply(on_grad, *[values[i] for i in positions])
    outs = outs if isinstance(outs, tuple) else (outs,)
    values = list(values)
    for i, o in zip(positions, outs):
        values[i] = o
    return tuple(values), len(positions)


class BackwardHook:
    """The state of one call of a module with full backward hooks."""

    def __init__(self, module, hooks):
        self.module, self.hooks = module, hooks
        self.n_inputs = 0
        self.input_positions = []
        self.grad_output = None

    def _run_hooks(self, grad_input):
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"backward hook returned {len(result)} gradients for "
                                       f"{len(grad_input)} inputs")
                grad_input = result
        return grad_input

    def wrap_inputs(self, args):
        self.n_args = len(args)
        self.input_positions = _tensor_positions(args)

        def on_grad(grads):
            if self.grad_output is None:
                # The output's gradient did not come through this module: no hook call.
                return grads
            # grad_input has an entry per tensor argument; None where none is needed.
            full = [None] * len(self.input_positions)
            needing = [k for k, i in enumerate(self.input_positions) if args[i].requires_grad]
            for k, g in zip(needing, grads):
                full[k] = g
            full = self._run_hooks(tuple(full))
            self.grad_output = None
            return tuple(full[k] for k in needing)

        wrapped, self.n_inputs = _apply_identity(args, on_grad)
        return wrapped

    def wrap_outputs(self, out):
        single = not isinstance(out, tuple)
        values = (out,) if single else out

        def on_grad(grads):
            self.grad_output = tuple(grads)
            if self.n_inputs == 0:
                self._run_hooks(tuple(None for _ in self.input_positions))
                self.grad_output = None
            return grads

        wrapped, _ = _apply_identity(values, on_grad)
        return wrapped[0] if single else wrapped
