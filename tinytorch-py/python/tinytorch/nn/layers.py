"""The built-in layers: thin Modules that own their Parameters and buffers, initialise them
as PyTorch does, and call ``nn.functional`` (TinyTorch's Rust ops) in ``forward``."""

import math

from .. import _tinytorch as _C
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _shape_tuple(shape):
    """A shape given as an int or a sequence of ints, as a tuple."""
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _empty(*shape, dtype=None, device=None):
    return _C.zeros(*shape, dtype=dtype, device=device)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b``; W is ``(out_features, in_features)``, initialised uniformly in
    +-1/sqrt(in_features) (PyTorch's kaiming_uniform with a=sqrt(5)), b likewise."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype, device=device))
        self.bias = Parameter(_empty(out_features, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _conv_extra_repr(m):
    """A convolution's arguments as PyTorch prints them, those at their defaults left out
    (padding all zeros, dilation all ones, one group, a bias); any number of spatial dims."""
    s = f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}, stride={m.stride}"
    if isinstance(m.padding, str) or any(p != 0 for p in m.padding):
        s += f", padding={m.padding}"
    if any(d != 1 for d in m.dilation):
        s += f", dilation={m.dilation}"
    if m.groups != 1:
        s += f", groups={m.groups}"
    if m.bias is None:
        s += ", bias=False"
    return s


class _ConvNd(Module):
    def __init__(self, nd, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, device, dtype, transposed=False, output_padding=0):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        norm = _pair if nd == 2 else (lambda v: (v[0],) if isinstance(v, (tuple, list)) else (v,))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = norm(kernel_size)
        self.stride = norm(stride)
        self.padding = padding if isinstance(padding, str) else norm(padding)
        self.dilation = norm(dilation)
        self.groups = groups
        self.output_padding = norm(output_padding)
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(_empty(*shape, dtype=dtype, device=device))
        self.bias = Parameter(_empty(out_channels, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        return _conv_extra_repr(self)


class _ZeroPaddedConvNd(_ConvNd):
    """A (not transposed) convolution of ``_nd`` spatial dims, zero padding only."""

    _nd = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError("only padding_mode='zeros' is supported")
        super().__init__(self._nd, in_channels, out_channels, kernel_size, stride, padding,
                         dilation, groups, bias, device, dtype)


class Conv1d(_ZeroPaddedConvNd):
    _nd = 1

    def forward(self, input):
        pad = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(input, self.weight, self.bias, self.stride[0], pad, self.dilation[0],
                        self.groups)


class Conv2d(_ZeroPaddedConvNd):
    _nd = 2

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, device, dtype, transposed=True,
                         output_padding=output_padding)

    def forward(self, input):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class _OptionsModule(Module):
    """A Module whose ``forward`` is ``_fn(input, *options)``, the options being the
    attributes named in ``_options``, set in that order from the values the subclass's
    ``__init__`` passes on; its ``extra_repr`` shows the attributes named in ``_shown``
    (default: all the options) as ``name=value``."""

    _fn = None
    _options = ()
    _shown = None

    def __init__(self, *values):
        super().__init__()
        for name, value in zip(self._options, values):
            setattr(self, name, value)

    def forward(self, input):
        return self._fn(input, *(getattr(self, k) for k in self._options))

    def extra_repr(self):
        shown = self._options if self._shown is None else self._shown
        return ", ".join(f"{k}={getattr(self, k)}" for k in shown)


class _MaxPoolNd(_OptionsModule):
    """Max pooling; ``stride`` defaults to ``kernel_size``."""

    _options = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__(kernel_size, stride or kernel_size, padding, dilation, ceil_mode)


class _AvgPoolNd(_OptionsModule):
    """Average pooling; ``stride`` defaults to ``kernel_size``."""

    _options = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride or kernel_size, padding, ceil_mode,
                         count_include_pad)


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class AvgPool2d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool2d)
    _shown = ()


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        if return_indices:
            raise TypeError("MaxPool1d(return_indices=True) is not supported")
        super().__init__(kernel_size, stride, padding, dilation, return_indices, ceil_mode)


class AvgPool1d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool1d)
    _shown = ("kernel_size", "stride", "padding")


class AdaptiveMaxPool2d(_OptionsModule):
    _fn, _options = staticmethod(F.adaptive_max_pool2d), ("output_size",)

    def __init__(self, output_size, return_indices=False):
        if return_indices:
            raise TypeError("AdaptiveMaxPool2d(return_indices=True) is not supported")
        super().__init__(output_size)


class PixelShuffle(_OptionsModule):
    _fn, _options = staticmethod(F.pixel_shuffle), ("upscale_factor",)

    def __init__(self, upscale_factor):
        super().__init__(upscale_factor)


class PixelUnshuffle(_OptionsModule):
    _fn, _options = staticmethod(F.pixel_unshuffle), ("downscale_factor",)

    def __init__(self, downscale_factor):
        super().__init__(downscale_factor)


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor}"
        else:
            info = f"size={self.size}"
        return info + f", mode='{self.mode}'"


class AdaptiveAvgPool2d(_OptionsModule):
    _fn, _options = staticmethod(F.adaptive_avg_pool2d), ("output_size",)

    def __init__(self, output_size):
        super().__init__(output_size)


def _affine_params(module, shape, affine, dtype, device, bias=True, register_none=False):
    """Give a normalisation layer its learned affine transform: ``module.weight`` (ones) and
    ``module.bias`` (zeros) of ``shape``; without ``bias`` the bias alone is None. Without
    ``affine`` both are None: plain attributes, or, with ``register_none``, parameters."""
    if affine:
        module.weight = Parameter(_C.ones(*shape, dtype=dtype, device=device))
        module.bias = Parameter(_C.zeros(*shape, dtype=dtype, device=device)) if bias else None
    elif register_none:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)
    else:
        module.weight = module.bias = None


def _channel_norm_init(module, num_features, eps, momentum, affine, track_running_stats,
                       device, dtype, register_none=False):
    """The options, parameters and buffers that batch and instance norms share: a weight
    and bias per channel (see ``_affine_params``) and, with ``track_running_stats``, the
    ``running_mean`` / ``running_var`` / ``num_batches_tracked`` buffers (else None)."""
    module.num_features, module.eps, module.momentum = num_features, eps, momentum
    module.affine, module.track_running_stats = affine, track_running_stats
    _affine_params(module, (num_features,), affine, dtype, device, register_none=register_none)
    if track_running_stats:
        module.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype, device=device))
        module.register_buffer("running_var", _C.ones(num_features, dtype=dtype, device=device))
        module.register_buffer("num_batches_tracked", _C.tensor(0, device=device))
    else:
        module.running_mean = module.running_var = module.num_batches_tracked = None


def _channel_norm_extra_repr(m):
    """A batch or instance norm's arguments as PyTorch prints them."""
    return (f"{m.num_features}, eps={m.eps}, momentum={m.momentum}, "
            f"affine={m.affine}, track_running_stats={m.track_running_stats}")


class _BatchNorm(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        _channel_norm_init(self, num_features, eps, momentum, affine, track_running_stats,
                           device, dtype)

    def forward(self, input):
        use_batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, use_batch_stats, self.momentum, self.eps)

    def extra_repr(self):
        return _channel_norm_extra_repr(self)


class BatchNorm1d(_BatchNorm):
    pass


class BatchNorm2d(_BatchNorm):
    pass


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) inputs."""

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
        return super().forward(input)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _shape_tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, dtype, device, bias)

    def forward(self, input):
        return F.layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _shape_tuple(normalized_shape), eps
        self.weight = (Parameter(_C.ones(*self.normalized_shape, dtype=dtype, device=device))
                       if elementwise_affine else None)

    def forward(self, input):
        return F.rms_norm(input, list(self.normalized_shape), self.weight, self.eps)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        _affine_params(self, (num_channels,), affine, dtype, device)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace=False"


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 device=None, dtype=None):
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise ValueError("max_norm, scale_grad_by_freq and sparse are not supported")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(_empty(num_embeddings, embedding_dim, dtype=dtype,
                                           device=device))
            init.normal_(self.weight)
            if padding_idx is not None:
                with _no_grad():
                    self.weight[padding_idx] = 0.0
        else:
            self.weight = Parameter(_weight)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


def _no_grad():
    from .._grad_mode import no_grad
    return no_grad()


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, list(self.unflattened_size))


def _activation(name, fn, arg_names=(), defaults=()):
    """A Module class calling ``fn(input, *args)`` with the constructor's arguments."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(zip(arg_names, defaults))
        values.update(zip(arg_names, args))
        values.update({k: v for k, v in kwargs.items() if k in arg_names})
        for k in arg_names:
            object.__setattr__(self, k, values[k])

    def forward(self, input):
        return fn(input, *(getattr(self, k) for k in arg_names))

    def extra_repr(self):
        # PyTorch shows ``inplace=True`` only when set.
        return ", ".join(f"{k}={getattr(self, k)}" for k in arg_names
                         if k != "inplace" or getattr(self, k))

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr})


ReLU = _activation("ReLU", lambda x, inplace: F.relu(x, inplace), ("inplace",), (False,))
Sigmoid = _activation("Sigmoid", F.sigmoid)
Tanh = _activation("Tanh", F.tanh)
SiLU = _activation("SiLU", lambda x, inplace: F.silu(x, inplace), ("inplace",), (False,))
GELU = _activation("GELU", F.gelu, ("approximate",), ("none",))
LeakyReLU = _activation("LeakyReLU", lambda x, s, inplace: F.leaky_relu(x, s, inplace),
                        ("negative_slope", "inplace"), (0.01, False))
ELU = _activation("ELU", lambda x, a, inplace: F.elu(x, a, inplace), ("alpha", "inplace"),
                  (1.0, False))
Softplus = _activation("Softplus", F.softplus, ("beta", "threshold"), (1.0, 20.0))
Softmax = _activation("Softmax", lambda x, dim: F.softmax(x, dim), ("dim",), (None,))
LogSoftmax = _activation("LogSoftmax", lambda x, dim: F.log_softmax(x, dim), ("dim",), (None,))


def _loss(name, fn, arg_names, defaults):
    """A loss Module: ``forward(input, target)`` calls ``fn(input, target, **options)``."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(zip(arg_names, defaults))
        values.update(zip(arg_names, args))
        values.update(kwargs)
        for k, v in values.items():
            if k == "weight" and v is not None:
                self.register_buffer("weight", v)
            else:
                object.__setattr__(self, k, v)

    def forward(self, input, target):
        return fn(input, target, **{k: getattr(self, k) for k in arg_names})

    return type(name, (Module,), {"__init__": __init__, "forward": forward})


CrossEntropyLoss = _loss("CrossEntropyLoss", F.cross_entropy,
                         ("weight", "ignore_index", "reduction", "label_smoothing"),
                         (None, -100, "mean", 0.0))
NLLLoss = _loss("NLLLoss", F.nll_loss, ("weight", "ignore_index", "reduction"),
                (None, -100, "mean"))
MSELoss = _loss("MSELoss", F.mse_loss, ("reduction",), ("mean",))
L1Loss = _loss("L1Loss", F.l1_loss, ("reduction",), ("mean",))
SmoothL1Loss = _loss("SmoothL1Loss", F.smooth_l1_loss, ("reduction", "beta"), ("mean", 1.0))
HuberLoss = _loss("HuberLoss", F.huber_loss, ("reduction", "delta"), ("mean", 1.0))
BCELoss = _loss("BCELoss", F.binary_cross_entropy, ("weight", "reduction"), (None, "mean"))
BCEWithLogitsLoss = _loss("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits,
                          ("weight", "reduction", "pos_weight"), (None, "mean", None))
KLDivLoss = _loss("KLDivLoss", F.kl_div, ("reduction", "log_target"), ("mean", False))
