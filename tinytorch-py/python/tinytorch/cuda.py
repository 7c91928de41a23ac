"""``torch.cuda``: whether a GPU is there (TinyTorch loads CUDA at run time) and its tensor
memory counters."""

from . import _tinytorch as _C


def is_available():
    return _C._cuda_is_available()


def device_count():
    return 1 if is_available() else 0


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
