"""``torch.nn.utils.prune``: magnitude pruning by reparametrisation, as in PyTorch.

``l1_unstructured(module, "weight", amount)`` turns ``module.weight`` into
``weight_orig * weight_mask``: the parameter becomes ``weight_orig``, the mask the buffer
``weight_mask`` (both in the state dict under PyTorch's names), and a forward pre-hook
recomputes ``module.weight`` before every call, so pruned weights stay zero while
``weight_orig`` trains (their gradient is zero). Pruning the same tensor again prunes among
what is left. ``remove`` makes it permanent. The masks come from TinyTorch's Rust pruning
(``tinytorch::prune``), equal to PyTorch's on the same weights.
"""

from ... import _tinytorch as _C
from ..._grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["L1Unstructured", "LnStructured", "l1_unstructured", "ln_structured",
           "global_unstructured", "remove", "is_pruned"]


class L1Unstructured:
    """The method of ``l1_unstructured``, for ``global_unstructured(pruning_method=...)``."""

    PRUNING_TYPE = "unstructured"


class LnStructured:
    """The method of ``ln_structured`` (not accepted by ``global_unstructured``)."""

    PRUNING_TYPE = "structured"


class _Reparam:
    """The forward pre-hook that recomputes ``module.<name>`` from its original and mask."""

    def __init__(self, name):
        self.name = name

    def compute(self, module):
        return getattr(module, self.name + "_orig") * getattr(module, self.name + "_mask")

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute(module))


def _hook_of(module, name):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, _Reparam) and hook.name == name:
            return key, hook
    return None, None


def _current(module, name):
    """The original (unmasked) tensor and the current mask (None before any pruning)."""
    if _hook_of(module, name)[1] is not None:
        return getattr(module, name + "_orig"), getattr(module, name + "_mask")
    param = module._parameters.get(name)
    if param is None:
        raise AttributeError(f"Parameter '{name}' of module {module} has to be pruned")
    return param, None


def _apply_mask(module, name, mask):
    if _hook_of(module, name)[1] is None:
        orig = module._parameters.pop(name)
        module.register_parameter(name + "_orig", orig)
        module.register_forward_pre_hook(_Reparam(name))
    module.register_buffer(name + "_mask", mask)
    _, hook = _hook_of(module, name)
    object.__setattr__(module, name, hook.compute(module))
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune ``amount`` (a fraction, or a count) of ``module.<name>``'s remaining entries
    with the smallest absolute value (of ``importance_scores`` when given)."""
    orig, mask = _current(module, name)
    scores = orig if importance_scores is None else importance_scores
    with no_grad():
        new = _C._prune_l1_unstructured(scores.detach(), amount, mask)
    return _apply_mask(module, name, new)


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune ``amount`` of ``module.<name>``'s remaining slices along ``dim`` with the
    smallest Ln norm (``n`` an order >= 1, or ``float("inf")``)."""
    orig, mask = _current(module, name)
    scores = orig if importance_scores is None else importance_scores
    n = float("inf") if n in ("inf", float("inf")) else float(n)
    with no_grad():
        new = _C._prune_ln_structured(scores.detach(), amount, n, int(dim), mask)
    return _apply_mask(module, name, new)


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune ``amount`` of the remaining entries of all ``(module, name)`` pairs together,
    smallest absolute value first."""
    if pruning_method is not L1Unstructured:
        raise TypeError("global_unstructured supports pruning_method=L1Unstructured only")
    if set(kwargs) != {"amount"}:
        raise TypeError(f"global_unstructured takes amount=..., got {sorted(kwargs)}")
    parameters = list(parameters)
    importance_scores = importance_scores or {}
    current = [_current(m, n) for m, n in parameters]
    scores = [importance_scores.get((m, n), orig).detach()
              for (m, n), (orig, _) in zip(parameters, current)]
    with no_grad():
        masks = _C._prune_global_unstructured(scores, kwargs["amount"],
                                              [mask for _, mask in current])
    for (module, name), mask in zip(parameters, masks):
        _apply_mask(module, name, mask)


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` becomes a parameter again,
    holding the pruned values; ``<name>_orig``, ``<name>_mask`` and the hook go."""
    key, hook = _hook_of(module, name)
    if hook is None:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                         "pruning can be removed")
    with no_grad():
        value = hook.compute(module)
    del module._forward_pre_hooks[key]
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_mask"]
    object.__delattr__(module, name)
    module.register_parameter(name, Parameter(value.detach()))
    return module


def is_pruned(module):
    """Whether ``module`` or one of its submodules has a pruned tensor."""
    return any(isinstance(h, _Reparam) for m in module.modules()
               for h in m._forward_pre_hooks.values())
