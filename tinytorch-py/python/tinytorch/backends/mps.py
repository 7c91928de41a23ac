"""``torch.backends.mps``: Apple's Metal backend, which TinyTorch does not have."""


def is_available():
    """Whether the MPS device can be used: never, in TinyTorch."""
    return False


def is_built():
    """Whether TinyTorch was built with MPS: never."""
    return False
