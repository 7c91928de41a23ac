"""``nn.utils.weight_norm``/``remove_weight_norm``: a parameter ``w`` re-expressed as
``g * v / ||v||`` (Salimans & Kingma, 2016) with ``g`` and ``v`` as the trained parameters
(``<name>_g``, ``<name>_v``, PyTorch's names), recomputed before every forward."""

from ..parameter import Parameter


def _attach(module, name, kind, fn, weight):
    """Install the reparametrisation ``kind`` (``"weight_norm"``, ``"spectral_norm"``) of
    ``module.<name>``: the plain attribute ``<name>`` holds ``weight`` until the forward
    pre-hook ``fn`` recomputes it, and ``module._<kind>_<name>`` keeps the hook's handle.
    Returns ``module``."""
    object.__setattr__(module, name, weight)
    handle = module.register_forward_pre_hook(fn)
    object.__setattr__(module, f"_{kind}_{name}", handle)
    return module


def _attached_handle(module, name, kind):
    """The handle ``_attach`` kept for ``kind`` of ``module.<name>``; ValueError if none."""
    handle = module.__dict__.get(f"_{kind}_{name}")
    if handle is None:
        raise ValueError(f"{kind} of '{name}' not found in {module}")
    return handle


def _detach(module, name, kind, handle, weight, parameters=(), buffers=()):
    """Undo ``_attach``: remove the hook and the attributes, delete the reparametrisation's
    ``parameters`` and ``buffers`` (full names) and make ``weight`` the Parameter ``<name>``
    again. Returns ``module``."""
    handle.remove()
    object.__delattr__(module, f"_{kind}_{name}")
    object.__delattr__(module, name)
    for p in parameters:
        del module._parameters[p]
    for b in buffers:
        del module._buffers[b]
    module.register_parameter(name, Parameter(weight))
    return module


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (kept, size 1 elsewhere); over all
    elements for ``dim=None``."""
    if dim is None:
        return v.norm()
    dim = dim % v.dim()
    moved = v.transpose(0, dim) if dim else v
    norms = moved.reshape(moved.shape[0], -1).norm(2, 1)
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    return norms.reshape(*shape)


class _WeightNorm:
    """The forward pre-hook that recomputes the weight."""

    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterise ``module.<name>`` as ``<name>_g * <name>_v / ||<name>_v||`` (norm
    over every dim but ``dim``; ``dim=None``: the whole tensor); returns ``module``."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    weight = getattr(module, name)
    if not isinstance(weight, Parameter):
        raise TypeError(f"weight_norm: module.{name} is not a Parameter")
    fn = _WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    return _attach(module, name, "weight_norm", fn, fn.compute_weight(module))


def remove_weight_norm(module, name="weight"):
    """Undo ``weight_norm``: ``module.<name>`` is a plain Parameter again (its current
    value); returns ``module``."""
    handle = _attached_handle(module, name, "weight_norm")
    hook = _WeightNorm(name, None)
    for h in module._forward_pre_hooks.values():
        if isinstance(h, _WeightNorm) and h.name == name:
            hook = h
    weight = hook.compute_weight(module).detach()
    return _detach(module, name, "weight_norm", handle, weight,
                   parameters=(name + "_g", name + "_v"))
