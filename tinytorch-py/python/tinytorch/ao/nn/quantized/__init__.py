"""``torch.ao.nn.quantized``: dynamically quantized modules in ``dynamic``."""

from . import dynamic  # noqa: F401
