"""``torch.backends.cudnn``: the flags programs set (``benchmark``, ``deterministic``,
``allow_tf32``, ``enabled``), stored with PyTorch's defaults. TinyTorch's GPU convolutions
(im2col and Winograd kernels of its own) do not read them: they pick one algorithm per shape
without benchmarking and are deterministic either way."""

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    """Whether cuDNN can be used: TinyTorch's Python package does not load cuDNN."""
    return False


def version():
    """cuDNN's version, None when it is not available (as in PyTorch)."""
    return None
