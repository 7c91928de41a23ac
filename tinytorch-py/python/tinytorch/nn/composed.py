"""Layers whose math is a short composition of existing ops, written in Python:
``PReLU`` (learned negative slope), ``Hardswish``, ``ZeroPad2d``, ``ReLU6``, ``Hardtanh``,
``GLU``, ``Dropout2d``."""

from .. import _tinytorch as _C
from . import functional as F
from .module import Module
from .parameter import Parameter


class PReLU(Module):
    """``PReLU(num_parameters=1, init=0.25)``: ``max(0, x) + a * min(0, x)`` with a learned
    ``a``, one per channel (dim 1) or one for all."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(_C.full((num_parameters,), float(init),
                                        dtype=dtype or _C.float32, device=device))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input)


class ZeroPad2d(Module):
    """Pad the last two dims with zeros: ``padding`` an int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 4:
            raise ValueError(f"ZeroPad2d: padding must be an int or 4 ints, got {padding!r}")

    def forward(self, input):
        return F.pad(input, self.padding)

    def extra_repr(self):
        return f"{self.padding}"


class ReLU6(Module):
    """``min(max(0, x), 6)``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu6(input)


class Hardtanh(Module):
    """``x`` clamped to [min_val, max_val] (default [-1, 1])."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be larger than min_val "
                             f"({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class GLU(Module):
    """The gated linear unit along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Dropout2d(Module):
    """Channel dropout (``F.dropout2d``) while training."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
