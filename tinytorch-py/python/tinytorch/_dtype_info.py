"""``torch.finfo`` and ``torch.iinfo``: the numerical limits of a dtype (IEEE-754 values of
float16, bfloat16, float32 and float64; the ranges of int64, uint8 and bool)."""

from . import _tinytorch as _C

# name: (bits, eps, max, smallest normal, resolution)
_FLOATS = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
    "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 0.01),
    "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-06),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
}
_INTS = {"int64": (64, -2 ** 63, 2 ** 63 - 1), "int32": (32, -2 ** 31, 2 ** 31 - 1),
         "uint8": (8, 0, 255), "bool": (8, 0, 1)}


def _name(dtype):
    return str(dtype).replace("torch.", "")


class finfo:
    """``torch.finfo(dtype=None)`` (default: float32): ``bits``, ``eps``, ``max``, ``min``
    (= -max), ``tiny`` and ``smallest_normal``, ``resolution``, ``dtype``."""

    def __init__(self, type=None):
        type = _C.float32 if type is None else type
        if not isinstance(type, _C.dtype) or _name(type) not in _FLOATS:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use "
                            f"torch.iinfo to handle '{type}'")
        self.bits, self.eps, self.max, self.smallest_normal, self.resolution = \
            _FLOATS[_name(type)]
        self.min = -self.max
        self.tiny = self.smallest_normal
        self.dtype = _name(type)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:e}, max={self.max:e}, "
                f"eps={self.eps:e}, smallest_normal={self.smallest_normal:e}, "
                f"tiny={self.tiny:e}, dtype={self.dtype})")


class iinfo:
    """``torch.iinfo(dtype)``: ``bits``, ``min``, ``max``, ``dtype`` of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, _C.dtype) or _name(type) not in _INTS:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to "
                            f"handle '{type}'")
        self.bits, self.min, self.max = _INTS[_name(type)]
        self.dtype = _name(type)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
