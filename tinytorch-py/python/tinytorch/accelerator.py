"""``torch.accelerator``: the device beyond the CPU that this process may use (CUDA in
TinyTorch)."""

from . import _tinytorch as _C


def is_available():
    """Whether a GPU can be used."""
    return _C._cuda_is_available()


def device_count():
    """The number of accelerators (GPUs) TinyTorch uses."""
    return 1 if is_available() else 0


def current_accelerator(check_available=False):
    """``torch.device("cuda")`` where CUDA is compiled in (and, with ``check_available``,
    a GPU is present), else None."""
    if not _C._cuda_is_built() or (check_available and not is_available()):
        return None
    return _C.device("cuda")


def current_device_index():
    """The index of the current accelerator: 0 with a GPU, else -1 (as PyTorch returns)."""
    return 0 if is_available() else -1


def synchronize(device=None):
    """Wait for the accelerator's queued work (``torch.cuda.synchronize``)."""
    from . import cuda

    cuda.synchronize(device)
