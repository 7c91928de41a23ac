"""``torch.backends.cudnn``: whether cuDNN loads, its version, and the flags programs set
(``benchmark``, ``deterministic``, ``allow_tf32``, ``enabled``), with PyTorch's defaults.

The flags reach TinyTorch's CUDA convolutions, which run through cuDNN where it loads:
``benchmark`` times cuDNN's algorithms on the first convolution of each shape instead of
asking its heuristic, ``deterministic`` allows only deterministic algorithms, ``allow_tf32``
lets float32 convolutions use TF32 tensor cores, and ``enabled = False`` runs them as
im2col + cuBLAS matmul. ``benchmark_limit`` is stored (every algorithm is timed).

A module has no ``__setattr__`` of its own, so this module's class is swapped for a
subclass whose ``__setattr__`` hands each flag to the backend as it is set; the value also
stays a plain module attribute, so reading it costs nothing."""

import contextlib
import sys
import types

from .. import _tinytorch as _C

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True

_BACKEND_FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32")


class _CudnnModule(types.ModuleType):
    """This module, with attribute assignment that reaches the backend's flags."""

    def __setattr__(self, name, value):
        if name in _BACKEND_FLAGS:
            if not isinstance(value, bool):
                # PyTorch's setters (torch._C._set_cudnn_*) accept only bools, and say so
                # in a RuntimeError (TORCH_CHECK's).
                raise RuntimeError(f"set_{name}_cudnn expects a bool, but got "
                                f"{type(value).__name__}")
            _C._cudnn_set_flag(name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CudnnModule
# The backend starts from this module's values (one process may import the package after
# Rust code changed a flag: Python's view wins, as it is the one programs read).
for _name in _BACKEND_FLAGS:
    _C._cudnn_set_flag(_name, globals()[_name])
del _name


def is_available():
    """Whether cuDNN loads in this process (``libcudnn.so.9`` on ``LD_LIBRARY_PATH`` or the
    system's library paths, e.g. PyTorch's ``nvidia/cudnn/lib`` wheel folder)."""
    return _C._cudnn_is_available()


def version():
    """cuDNN's version number (90100 for 9.1.0), or None where it does not load, as in
    PyTorch."""
    return _C._cudnn_version()


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Within the block, set the flags to the given values (PyTorch's defaults of this
    function, which turn cuDNN off unless ``enabled=True``); restore them after."""
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {n: getattr(module, n) for n in names}
    new = dict(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        for n, v in new.items():
            setattr(module, n, v)
        yield
    finally:
        for n, v in saved.items():
            setattr(module, n, v)
