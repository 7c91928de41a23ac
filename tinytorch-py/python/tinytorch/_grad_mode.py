"""``no_grad``, ``enable_grad``, ``set_grad_enabled``: context managers and decorators over
TinyTorch's per-thread grad mode."""

import functools

from . import _tinytorch as _C


class _GradMode:
    """Sets grad mode to ``self._mode`` inside a ``with`` block or a decorated function,
    and restores the previous mode on the way out (also on an exception)."""

    _mode = False

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Operations inside record no gradients (``torch.no_grad``)."""

    _mode = False


class inference_mode(no_grad):
    """``torch.inference_mode``: here the same as ``no_grad``."""

    def __init__(self, mode=True):
        self._mode = not mode


class enable_grad(_GradMode):
    """Operations inside record gradients again (``torch.enable_grad``)."""

    _mode = True


class set_grad_enabled(_GradMode):
    """``torch.set_grad_enabled(mode)``: sets the mode at once, and as a context manager
    restores the previous one on exit."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _C._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __call__(self, func):
        _C._set_grad_enabled(self._prev)
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)

        return wrapper
