"""``torch.ao.nn.quantized.dynamic``: int8 Linear with activations quantized per call."""

from .linear import Linear  # noqa: F401
