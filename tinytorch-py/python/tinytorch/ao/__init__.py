"""``torch.ao``: quantization (``ao.quantization.quantize_dynamic``) and its quantized modules
(``ao.nn.quantized.dynamic.Linear``)."""

from . import nn, quantization  # noqa: F401
