"""``torch.nn.utils.parametrize``: a tensor of a module computed from other tensors every
time it is read (``register_parametrization``), PyTorch's mechanism behind
``parametrizations.weight_norm`` and friends.

As in PyTorch, registering a parametrization on ``module.<name>`` removes that parameter,
keeps its value (after the parametrization's ``right_inverse``, when it has one) as
``module.parametrizations.<name>.original`` (or ``original0``, ``original1``, ... when
``right_inverse`` returns several tensors), and swaps the module's class for a subclass
with a property ``<name>`` that runs the parametrizations on the originals. So the
state-dict keys are PyTorch's (``parametrizations.weight.original0``), ``isinstance`` checks
against the layer's class still hold, and the layer's own ``forward`` reads the computed
tensor without knowing."""

from ... import _tinytorch as _C
from ..._grad_mode import no_grad
from ..container import ModuleDict, ModuleList
from ..parameter import Parameter


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensors they
    start from (``original`` or ``original0``, ``original1``, ...)."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, _C.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        requires_grad = getattr(original, "requires_grad", True)
        if self.is_tensor:
            self.original = Parameter(new.detach().clone(), requires_grad=requires_grad)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, _C.Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of type "
                                     f"{type(t).__name__}")
                setattr(self, f"original{i}",
                        Parameter(t.detach().clone(), requires_grad=requires_grad))

    def right_inverse(self, value):
        """Set the originals so that the parametrized tensor becomes ``value``."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        modules = list(self)
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _inject_property(module, tensor_name):
    """Give the module's (already swapped) class a property that computes the tensor."""
    def getter(self):
        return self.parametrizations[tensor_name]()

    def setter(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(getter, setter))


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization, or one on ``tensor_name``."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Replace ``module.<tensor_name>`` (a parameter or buffer) by ``parametrization``
    applied to an original tensor; a second registration on the same name appends to the
    chain. Returns the module."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters[tensor_name]
    elif tensor_name in module._buffers:
        original = module._buffers[tensor_name]
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    if original is None:
        raise ValueError(f"register_parametrization: '{tensor_name}' of {type(module).__name__}"
                         " is None")
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    module._parameters.pop(tensor_name, None)
    module._buffers.pop(tensor_name, None)
    if not is_parametrized(module):
        # A class of its own per module, so the property does not leak into other
        # instances of the layer (PyTorch's "Parametrized<Class>").
        cls = module.__class__
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = parametrizations
    _inject_property(module, tensor_name)
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter again, holding the parametrized value (or the original, with
    ``leave_parametrized=False``, which needs a single original)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    with no_grad():
        if leave_parametrized:
            value = getattr(module, tensor_name).detach().clone()
        elif parametrizations.is_tensor:
            value = parametrizations.original.detach().clone()
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations._modules[tensor_name]
    module.register_parameter(tensor_name, Parameter(value))
    if not is_parametrized(module):
        del module._modules["parametrizations"]
        module.__class__ = module.__class__.__bases__[0]
    return module
