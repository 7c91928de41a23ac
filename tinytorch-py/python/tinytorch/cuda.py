"""``torch.cuda``: whether a GPU is there (TinyTorch loads CUDA at run time)."""

from . import _tinytorch as _C


def is_available():
    return _C._cuda_is_available()


def device_count():
    return 1 if is_available() else 0
