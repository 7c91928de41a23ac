"""``torch.jit``: TinyTorch has no TorchScript compiler; ``script`` and ``trace`` return
the module or function itself (which computes the same results in eager mode), and the
decorators that mark code for the compiler return what they decorate."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` unchanged (no TorchScript)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged: running it is what a trace would replay."""
    if not callable(func):
        raise TypeError(f"torch.jit.trace: expected a function or Module, got "
                        f"{type(func).__name__}")
    return func


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` (or ``@torch.jit.ignore(drop=True)``): returns the function."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """``@torch.jit.unused``: returns the function."""
    return fn


def export(fn):
    """``@torch.jit.export``: returns the function."""
    return fn


def is_scripting():
    """Whether TorchScript is compiling the caller: never."""
    return False


def is_tracing():
    """Whether a trace is recording the caller: never."""
    return False
