"""``torch.autocast`` / ``torch.amp.autocast``: a context manager (and decorator) around the
Rust library's autocast scope (``tinytorch::amp``), which is one per thread and applies to
the ops of every device."""

import functools
import warnings

from .. import _tinytorch as _C

_DEFAULT_DTYPES = {"cuda": "float16", "cpu": "bfloat16"}


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: inside the
    scope, matmuls, linear layers and convolutions of float32 inputs run in ``dtype``
    (float16 by default for ``"cuda"``, bfloat16 for ``"cpu"``), softmax and the losses
    built on it in float32; gradients flow back to the float32 weights. ``enabled=False``
    turns autocast off inside the scope. As in PyTorch, ``"cuda"`` without a GPU warns and
    disables the scope, and so does a ``dtype`` other than float16/bfloat16 on ``"cpu"``
    (on ``"cuda"`` such a dtype, float32, gives a scope that changes nothing). TinyTorch's scope is per thread, not per device: a ``"cpu"`` scope
    also casts the ops of GPU tensors."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"autocast: expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type not in _DEFAULT_DTYPES:
            raise RuntimeError(f"autocast: unsupported device_type {device_type!r} (TinyTorch "
                               "has 'cpu' and 'cuda')")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else getattr(_C, _DEFAULT_DTYPES[device_type])
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not _C._cuda_is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                          "Disabling", stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in (_C.float16, _C.bfloat16):
            if device_type == "cpu":
                # PyTorch's words and behaviour: a warning, and the scope does nothing.
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
            # On "cuda" PyTorch runs the scope in the given dtype without a word; for
            # float32, the only such dtype in use, that changes nothing for float32 inputs.
            self._enabled = False
        self._previous = []

    def __enter__(self):
        target = self.fast_dtype if self._enabled else None
        self._previous.append(_C._set_autocast_dtype(target))
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._set_autocast_dtype(self._previous.pop())
        return False

    def __call__(self, func):
        """Use as a decorator: ``func`` runs inside this scope."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper
