"""Layers whose math is a short composition of existing ops, written in Python:
``PReLU`` (learned negative slope), ``Hardswish``, ``ZeroPad2d``, ``ReLU6``, ``Hardtanh``,
``GLU``, ``Dropout2d``, ``ConvTranspose1d`` (the 2-D kernel over a height of one),
``InstanceNorm1d``/``InstanceNorm2d`` (batch norm of N * C channels), ``Unfold``/``Fold``."""

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
        return F.hardswish(input, self.inplace)


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
        return F.relu6(input, self.inplace)


class Hardtanh(Module):
    """``x`` clamped to [min_val, max_val] (default [-1, 1])."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be larger than min_val "
                             f"({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

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
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(_C.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype,
                                                          device=device))
            self.register_buffer("running_var", _C.ones(num_features, dtype=dtype,
                                                        device=device))
            self.register_buffer("num_batches_tracked", _C.tensor(0, device=device))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

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
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) or (C, L) inputs."""

    _dims = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) or (C, H, W) inputs."""

    _dims = 3


class Unfold(Module):
    """``Unfold(kernel_size, dilation=1, padding=0, stride=1)``: ``F.unfold``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """``Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)``: ``F.fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
