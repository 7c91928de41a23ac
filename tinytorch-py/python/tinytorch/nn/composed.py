"""Layers whose math is a short composition of existing ops, written in Python:
``PReLU`` (learned negative slope), ``Hardswish``, ``ZeroPad2d``, ``ReLU6``, ``Hardtanh``,
``GLU``, ``Dropout2d``, ``ConvTranspose1d`` (the 2-D kernel over a height of one),
``Conv3d`` (2-D kernels summed over the kernel's depth), ``SELU``, the padding layers
(``ConstantPad1d``/``2d``/``3d``, ``ZeroPad1d``/``3d``, ``ReflectionPad1d``/``2d``/``3d``,
``ReplicationPad1d``/``2d``/``3d``: ``F.pad`` with a mode),
``InstanceNorm1d``/``InstanceNorm2d`` (batch norm of N * C channels), ``Unfold``/``Fold``."""

from .. import _tinytorch as _C
from . import functional as F
from .layers import (_channel_norm_extra_repr, _channel_norm_init, _conv_extra_repr,
                     _OptionsModule)
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


class _InplaceActivation(_OptionsModule):
    """An activation ``_fn(input, inplace)`` whose only option is ``inplace``, not shown."""

    _options, _shown = ("inplace",), ()

    def __init__(self, inplace=False):
        super().__init__(inplace)


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardswish)


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


class _PadNd(Module):
    """``F.pad`` of the last ``_dims`` dims with a fixed mode; ``padding`` an int (the same
    on every side) or 2 * ``_dims`` ints, last dim first: (left, right, top, bottom, ...)."""

    _dims = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        n = 2 * self._dims
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} ints, "
                             f"got {padding!r}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pad the last dim with ``value``: ``ConstantPad1d(padding, value)``."""
    _dims = 1


class ConstantPad2d(_PadNd):
    """Pad the last two dims with ``value``: ``ConstantPad2d(padding, value)``."""
    _dims = 2


class ConstantPad3d(_PadNd):
    """Pad the last three dims with ``value``: ``ConstantPad3d(padding, value)``."""
    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class _ModePad(_PadNd):
    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad1d(_ModePad):
    """Pad the last dim with its reflection (the edge element not repeated)."""
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_ModePad):
    """Pad the last two dims with their reflection."""
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_ModePad):
    """Pad the last three dims with their reflection."""
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_ModePad):
    """Pad the last dim by repeating its edge elements."""
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_ModePad):
    """Pad the last two dims by repeating their edge elements."""
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_ModePad):
    """Pad the last three dims by repeating their edge elements."""
    _dims, _mode = 3, "replicate"


class ReLU6(_InplaceActivation):
    """``min(max(0, x), 6)``."""

    _fn = staticmethod(F.relu6)


class Hardtanh(_OptionsModule):
    """``x`` clamped to [min_val, max_val] (default [-1, 1])."""

    _fn = staticmethod(F.hardtanh)
    _options, _shown = ("min_val", "max_val", "inplace"), ("min_val", "max_val")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be larger than min_val "
                             f"({min_val})")
        super().__init__(min_val, max_val, inplace)


class GLU(_OptionsModule):
    """The gated linear unit along ``dim``."""

    _fn, _options = staticmethod(F.glu), ("dim",)

    def __init__(self, dim=-1):
        super().__init__(dim)


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


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with SELU's constants (``F.selu``)."""

    _fn = staticmethod(F.selu)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Conv3d(Module):
    """``Conv3d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
    groups=1, bias=True)``: ``F.conv3d`` with PyTorch's parameters (weight (C_out,
    C_in / groups, kD, kH, kW), bias (C_out,)) and initialisation (kaiming-uniform with
    a = sqrt(5), bias uniform in +-1/sqrt(fan_in))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        import math

        from . import init

        if padding_mode != "zeros":
            raise ValueError("only padding_mode='zeros' is supported")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._triple(kernel_size, "kernel_size")
        self.stride = F._triple(stride, "stride")
        self.padding = padding if isinstance(padding, str) else F._triple(padding, "padding")
        self.dilation = F._triple(dilation, "dilation")
        self.groups = groups
        shape = (out_channels, in_channels // groups) + self.kernel_size
        dtype = dtype or _C.float32
        self.weight = Parameter(_C.zeros(*shape, dtype=dtype, device=device))
        self.bias = (Parameter(_C.zeros(out_channels, dtype=dtype, device=device)) if bias
                     else None)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    def extra_repr(self):
        return _conv_extra_repr(self)


class ConvTranspose1d(Module):
    """``ConvTranspose1d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    output_padding=0, groups=1, bias=True, dilation=1)``: ``F.conv_transpose1d`` with
    PyTorch's parameters (weight (C_in, C_out / groups, K)) and initialisation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        from .layers import _ConvNd

        if padding_mode != "zeros":
            raise ValueError("Only \"zeros\" padding mode is supported for ConvTranspose1d")
        # _ConvNd builds and initialises the parameters; this Module takes them over.
        conv = _ConvNd(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                       groups, bias, device, dtype, transposed=True,
                       output_padding=output_padding)
        for name in ("in_channels", "out_channels", "kernel_size", "stride", "padding",
                     "dilation", "groups", "output_padding"):
            setattr(self, name, getattr(conv, name))
        self.weight, self.bias = conv.weight, conv.bias
        if bias is False:
            self.register_parameter("bias", None)
        self._repr = conv.extra_repr

    def forward(self, input):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)

    def extra_repr(self):
        return self._repr()


class _InstanceNorm(Module):
    """Instance norm over the positions of each (sample, channel); ``affine`` adds a weight
    and bias per channel, ``track_running_stats`` running averages used in eval mode."""

    _dims = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__()
        _channel_norm_init(self, num_features, eps, momentum, affine, track_running_stats,
                           device, dtype, register_none=True)

    def forward(self, input):
        if input.dim() not in (self._dims, self._dims + 1):
            raise ValueError(f"expected {self._dims}D or {self._dims + 1}D input (got "
                             f"{input.dim()}D input)")
        unbatched = input.dim() == self._dims
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats, self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        return _channel_norm_extra_repr(self)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) or (C, L) inputs."""

    _dims = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) or (C, H, W) inputs."""

    _dims = 3


class Unfold(_OptionsModule):
    """``Unfold(kernel_size, dilation=1, padding=0, stride=1)``: ``F.unfold``."""

    _fn = staticmethod(F.unfold)
    _options = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)


class Fold(_OptionsModule):
    """``Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)``: ``F.fold``."""

    _fn = staticmethod(F.fold)
    _options = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(output_size, kernel_size, dilation, padding, stride)
