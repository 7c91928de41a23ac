"""TinyTorch with PyTorch's Python API: ``import tinytorch as torch``.

The engine is TinyTorch's Rust library (``tinytorch._tinytorch``); this package binds it
under PyTorch's names. Python code lives here only where Python is its natural home:
``nn.Module``'s attribute registration, the optimizer classes and schedulers around the Rust
optimizers, ``DataLoader`` iteration, ``no_grad`` as a context manager.
"""

from . import _tinytorch as _C
from ._tinytorch import (
    Tensor,
    Generator,
    dtype,
    device,
    tensor,
    zeros,
    ones,
    empty,
    full,
    rand,
    randn,
    randint,
    arange,
    linspace,
    eye,
    cat,
    stack,
    einsum,
    where,
    is_tensor,
    manual_seed,
    is_grad_enabled,
    OutOfMemoryError,
    float32,
    float,
    float64,
    double,
    float16,
    half,
    bfloat16,
    int64,
    long,
    int32,
    int,
    uint8,
    bool,
)
from ._grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode
from ._functions import *  # noqa: F401,F403 (the torch.* forms of the tensor methods)
from ._functions import __all__ as _function_names
from ._serialization import save, load
from ._tinytorch import randperm  # noqa: E402
from ._multinomial import multinomial  # noqa: E402
from . import _tensor  # noqa: E402
from ._legacy_types import CPU_TYPES as _CPU_TYPES  # noqa: E402
from ._memory_format import (  # noqa: E402
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from ._compile import compile  # noqa: E402,A001
from . import nn, optim, utils, autograd, cuda, profile, ao, distributed  # noqa: E402
from . import accelerator, amp, backends, distributions, onnx  # noqa: E402
from ._dtype_info import finfo, iinfo  # noqa: E402
from . import functional  # noqa: E402
from .functional import meshgrid, unique, median  # noqa: E402
from ._composite import (  # noqa: E402
    bernoulli, bincount, cdist, diag, hann_window, hstack, is_complex, normal, ravel,
    tensor_split, vstack,
)
from . import _utils, fx, hub, jit, multiprocessing  # noqa: E402
from . import serialization  # noqa: E402
from .amp import autocast  # noqa: E402
from .ao.quantization import qint8  # noqa: E402
quantization = ao.quantization  # ``torch.quantization``, the older name


def _join_compute_pool():
    # The main thread lives as long as the interpreter: it may join the CPU pool.
    import threading

    if threading.current_thread() is threading.main_thread():
        _C._use_this_thread_for_compute()


_join_compute_pool()
_tensor.install(Tensor)
from . import linalg, special  # noqa: E402


def _install_linalg_special():
    # ``torch.det(A)`` / ``A.det()``, ``torch.logit(x)`` / ``x.logit()``, ...: one function
    # serves both forms.
    names = {**linalg.LEGACY, **special.TORCH_NAMES}
    globals().update(names)
    for name, fn in names.items():
        setattr(Tensor, name, fn)
    Tensor.polygamma = lambda self, n: special.polygamma(n, self)


_install_linalg_special()
polygamma = special.polygamma
globals().update(_CPU_TYPES)  # torch.FloatTensor, torch.LongTensor, ...

import math as _math  # noqa: E402 (``float`` here is torch.float, the dtype)

inf = _math.inf
nan = _math.nan
pi = _math.pi
e = _math.e

concatenate = cat
concat = cat


def set_float32_matmul_precision(precision):
    """``"highest"`` keeps float32 matmuls in float32 on the GPU; ``"high"`` and
    ``"medium"`` let them use TF32 (``torch.backends.cuda.matmul.allow_tf32``). As in
    PyTorch, another string warns and changes nothing; a non-string is a RuntimeError."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    backends.cuda.matmul.allow_tf32 = precision != "highest"
    global _float32_matmul_precision
    _float32_matmul_precision = precision


_float32_matmul_precision = "highest"


def get_float32_matmul_precision():
    """The setting of ``set_float32_matmul_precision`` (``"highest"`` at start). As in
    PyTorch, setting ``torch.backends.cuda.matmul.allow_tf32`` sets it too: True reads as
    ``"high"`` (unless ``"medium"`` was set), False as ``"highest"``."""
    if not backends.cuda.matmul.allow_tf32:
        return "highest"
    return "high" if _float32_matmul_precision == "highest" else _float32_matmul_precision


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None, pin_memory=False):
    """A tensor of ``input``'s shape (and dtype and device unless given): ``torch.zeros``'s
    values. ``memory_format`` and ``pin_memory`` change nothing in TinyTorch (row-major
    tensors)."""
    return _C._like("zeros", input, None, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None, pin_memory=False):
    """A tensor of ``input``'s shape (and dtype and device unless given): ``torch.ones``'s
    values. ``memory_format`` and ``pin_memory`` change nothing in TinyTorch (row-major
    tensors)."""
    return _C._like("ones", input, None, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None, pin_memory=False):
    """A tensor of ``input``'s shape (and dtype and device unless given): ``torch.empty``'s
    values. ``memory_format`` and ``pin_memory`` change nothing in TinyTorch (row-major
    tensors)."""
    return _C._like("empty", input, None, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, layout=None, pin_memory=False):
    """A tensor of ``input``'s shape filled with ``fill_value``."""
    return _C._like("full", input, fill_value, dtype, device, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None, pin_memory=False):
    """A tensor of ``input``'s shape (and dtype and device unless given): ``torch.rand``'s
    values. ``memory_format`` and ``pin_memory`` change nothing in TinyTorch (row-major
    tensors)."""
    return _C._like("rand", input, None, dtype, device, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None, pin_memory=False):
    """A tensor of ``input``'s shape (and dtype and device unless given): ``torch.randn``'s
    values. ``memory_format`` and ``pin_memory`` change nothing in TinyTorch (row-major
    tensors)."""
    return _C._like("randn", input, None, dtype, device, requires_grad)


_NUMPY_DTYPES = {"float32": float32, "float64": float64, "float16": float16, "int64": int64,
                 "int32": int32, "uint8": uint8, "bool": bool}


def from_numpy(ndarray):
    """A CPU tensor sharing the array's memory: writes through either show in the other, and
    the tensor keeps the array alive."""
    import builtins  # `any` here is torch.any

    import numpy as np

    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    name = ndarray.dtype.name
    if name not in _NUMPY_DTYPES:
        raise TypeError(f"can't convert np.ndarray of type numpy.{name}. The only supported "
                        "types are: " + ", ".join(_NUMPY_DTYPES) + ".")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    size = ndarray.itemsize
    if builtins.any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and "
                         "tensors with negative strides are not currently supported. (You can "
                         "probably work around this by making a copy of your array  with "
                         "array.copy().) ")
    if builtins.any(s % size for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    if not ndarray.flags.writeable:
        import warnings

        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data "
                      "or make it writable before converting it to a tensor.", UserWarning,
                      stacklevel=2)
    address = ndarray.__array_interface__["data"][0]
    return _C._from_numpy(ndarray, address, list(ndarray.shape),
                          [s // size for s in ndarray.strides], _NUMPY_DTYPES[name])


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor):
        t = data
        if dtype is not None:
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        return t
    if type(data).__module__ == "numpy":
        t = from_numpy(data)
        return t.to(dtype) if dtype is not None else t
    return tensor(data, dtype=dtype, device=device)


def get_default_dtype():
    return float32


def numel(input):
    return input.numel()


Size = tuple

__version__ = "0.1.0"
