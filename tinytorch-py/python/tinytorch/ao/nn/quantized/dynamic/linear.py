"""``torch.ao.nn.quantized.dynamic.Linear``: int8 weights (symmetric, one scale per output
channel), activations quantized on every call from their own range, i32 sums, f32 out —
TinyTorch's ``quant::DynamicQuantLinear`` with its VNNI/AVX2 kernels. Inference only: it has
no parameters and records no gradient."""

from ..... import _tinytorch as _C
from .....nn.module import Module


class Linear(Module):
    """A Linear layer run in int8; build it with ``Linear.from_float(linear)`` (what
    ``quantize_dynamic`` does)."""

    def __init__(self, in_features, out_features, bias_=True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self._has_bias = bias_
        self._packed = None

    @classmethod
    def from_float(cls, mod):
        """The int8 form of the float ``nn.Linear`` ``mod``."""
        q = cls(mod.in_features, mod.out_features, mod.bias is not None)
        q._packed = _C._DynamicQuantLinear(mod.weight.detach(),
                                           None if mod.bias is None else mod.bias.detach())
        return q

    def forward(self, x):
        if self._packed is None:
            raise RuntimeError("quantized Linear has no weights; build it with from_float")
        return self._packed.forward(x)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype=torch.qint8, qscheme=torch.per_channel_symmetric")
