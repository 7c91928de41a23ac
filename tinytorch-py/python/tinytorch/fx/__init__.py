"""``torch.fx``: TinyTorch has no symbolic tracer; ``wrap`` (which marks a function as a leaf
for that tracer) returns the function, so modules written for FX tracing run eagerly."""


def wrap(fn_or_name):
    """``torch.fx.wrap(fn)`` or ``wrap("name")``: returns its argument."""
    return fn_or_name
