"""``torch.cuda``: whether a GPU is there (TinyTorch loads CUDA at run time), seeding,
synchronisation and its tensor memory counters.

Without a GPU these behave as PyTorch's do without one: ``is_available()`` is False,
``device_count()`` 0, the seeding functions do nothing (PyTorch seeds CUDA lazily, when it
is first used), and the functions that need a device (``synchronize``, ``current_device``,
``get_device_name``) raise: an ``AssertionError`` "Torch not compiled with CUDA enabled"
when CUDA is not compiled in, as PyTorch's CPU build raises, else a ``RuntimeError``.
``Event`` (``streams.py``) is a CUDA event on the GPU's stream, for timing GPU work."""

from .. import _tinytorch as _C
from .._legacy_types import CUDA_TYPES as _CUDA_TYPES
from . import amp  # noqa: F401
from .streams import Event  # noqa: F401

# ``torch.cuda.OutOfMemoryError`` is ``torch.OutOfMemoryError``: raised when a GPU allocation
# fails even after the cached buffers are freed.
OutOfMemoryError = _C.OutOfMemoryError

globals().update(_CUDA_TYPES)  # torch.cuda.FloatTensor, torch.cuda.LongTensor, ...


def is_available():
    """Whether a CUDA GPU can be used."""
    return _C._cuda_is_available()


def device_count():
    """The number of GPUs TinyTorch uses (it computes on ``cuda:0``)."""
    return 1 if is_available() else 0


def _ordinal(device, op):
    """The GPU number of ``device`` (None, an int, ``"cuda:1"`` or a ``torch.device``),
    after checking that there is a GPU, as PyTorch's lazy CUDA initialisation does."""
    if not _C._cuda_is_built():
        raise AssertionError(f"torch.cuda.{op}: Torch not compiled with CUDA enabled")
    if not is_available():
        raise RuntimeError(f"torch.cuda.{op}: Found no NVIDIA driver on your system (no CUDA "
                           "device is available)")
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        d = _C.device(device) if isinstance(device, str) else device
        if d.type != "cuda":
            raise ValueError(f"torch.cuda.{op}: expected a cuda device, but got: {d}")
        index = d.index or 0
    if not 0 <= index < device_count():
        raise RuntimeError(f"torch.cuda.{op}: invalid device ordinal {index} (there are "
                           f"{device_count()} devices)")
    return index


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 tensors can be used on the GPU: TinyTorch's CUDA kernels cover
    bfloat16 wherever there is a GPU; False without one, as in PyTorch."""
    return is_available()


def current_device():
    """The index of the current GPU (always 0: TinyTorch computes on ``cuda:0``)."""
    return _ordinal(None, "current_device")


def set_device(device):
    """Select the current GPU; TinyTorch has one, so only ``cuda:0`` (or 0) is valid."""
    _ordinal(device, "set_device")


def synchronize(device=None):
    """Wait until all work queued on the GPU has finished."""
    _C._cuda_synchronize(_ordinal(device, "synchronize"))


def get_device_name(device=None):
    """The GPU's name as the driver reports it (``"NVIDIA H100 80GB HBM3"``)."""
    return _C._cuda_device_name(_ordinal(device, "get_device_name"))


class _CudaDeviceProperties:
    """What ``get_device_properties`` returns: ``name``, ``major``, ``minor``,
    ``total_memory`` (bytes), ``multi_processor_count``."""

    def __init__(self, name, major, minor, total_memory, multi_processor_count):
        self.name, self.major, self.minor = name, major, minor
        self.total_memory, self.multi_processor_count = total_memory, multi_processor_count

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    """The GPU's name, compute capability, memory and multiprocessor count, as the driver
    reports them."""
    return _CudaDeviceProperties(*_C._cuda_device_properties(
        _ordinal(device, "get_device_properties")))


def get_device_capability(device=None):
    """The GPU's compute capability ``(major, minor)``."""
    p = get_device_properties(device)
    return p.major, p.minor


def manual_seed(seed):
    """Seed the GPU's random stream. TinyTorch draws random numbers for GPU tensors from the
    same generator as the CPU's (``torch.manual_seed``), so, as PyTorch does without a GPU,
    this leaves every stream as it is; ``int(seed)`` is still checked."""
    int(seed)


def manual_seed_all(seed):
    """Seed every GPU's random stream: see ``manual_seed``."""
    int(seed)


def empty_cache():
    """Release cached GPU memory to the driver. TinyTorch's caching allocator keeps its
    blocks for reuse, and without a GPU there is nothing to release: a no-op, as PyTorch's is
    when CUDA was never initialised."""


def _gpu(device):
    if device is None:
        return "cuda:0"
    if isinstance(device, int):
        return f"cuda:{device}"
    return str(device)


def memory_allocated(device=None):
    """Bytes of live tensors on the GPU (``cuda:0`` by default)."""
    return _C._memory_allocated(_gpu(device))


def max_memory_allocated(device=None):
    """The most tensor bytes live on the GPU at once since the last reset."""
    return _C._max_memory_allocated(_gpu(device))


def reset_peak_memory_stats(device=None):
    """Start ``max_memory_allocated``'s peak over from what is live now."""
    _C._reset_peak_memory_stats(_gpu(device))
