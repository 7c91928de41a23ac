"""``torch.ao.nn``: quantized modules."""

from . import quantized  # noqa: F401
