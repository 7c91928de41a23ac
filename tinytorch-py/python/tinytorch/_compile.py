"""``torch.compile``: TinyTorch has no graph compiler (its kernels are compiled ahead of time,
and fused where it pays), so compiling returns the model or function itself, unchanged."""


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """``torch.compile(model)`` returns ``model``; ``@torch.compile`` and
    ``@torch.compile(mode=...)`` return the decorated function. The keyword arguments are
    checked as PyTorch checks them and otherwise have no effect."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)

        return decorate
    if not callable(model):
        raise RuntimeError(f"torch.compile: model must be a nn.Module or a callable, got "
                           f"{type(model).__name__}")
    return model
