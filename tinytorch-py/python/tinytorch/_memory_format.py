"""``torch.memory_format`` and its values. TinyTorch's tensors are always row-major
(``contiguous_format``); the functions that take ``memory_format=`` accept every value and
give the same row-major tensor, whose values are what PyTorch's would be."""


class memory_format:
    """A memory layout name (``torch.channels_last``, ...)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
