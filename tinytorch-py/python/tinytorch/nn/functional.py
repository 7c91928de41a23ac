"""``torch.nn.functional``: TinyTorch's Rust ops under PyTorch's names."""

from .._tinytorch import _functional as _F

relu = _F.relu
sigmoid = _F.sigmoid
tanh = _F.tanh
silu = _F.silu
gelu = _F.gelu
leaky_relu = _F.leaky_relu
elu = _F.elu
softplus = _F.softplus
softmax = _F.softmax
log_softmax = _F.log_softmax
linear = _F.linear
conv1d = _F.conv1d
conv2d = _F.conv2d
conv_transpose2d = _F.conv_transpose2d
max_pool2d = _F.max_pool2d
avg_pool2d = _F.avg_pool2d
adaptive_avg_pool2d = _F.adaptive_avg_pool2d
max_pool1d = _F.max_pool1d
avg_pool1d = _F.avg_pool1d
adaptive_max_pool2d = _F.adaptive_max_pool2d
pixel_shuffle = _F.pixel_shuffle
pixel_unshuffle = _F.pixel_unshuffle
interpolate = _F.interpolate
dropout = _F.dropout
embedding = _F.embedding
one_hot = _F.one_hot
pad = _F.pad
layer_norm = _F.layer_norm
rms_norm = _F.rms_norm
group_norm = _F.group_norm
batch_norm = _F.batch_norm
cross_entropy = _F.cross_entropy
nll_loss = _F.nll_loss
mse_loss = _F.mse_loss
l1_loss = _F.l1_loss
smooth_l1_loss = _F.smooth_l1_loss
huber_loss = _F.huber_loss
binary_cross_entropy = _F.binary_cross_entropy
binary_cross_entropy_with_logits = _F.binary_cross_entropy_with_logits
kl_div = _F.kl_div
# TinyTorch's addition: knowledge distillation (Hinton et al.), see tinytorch::ops::loss.
distillation_loss = _F.distillation_loss


def relu6(input, inplace=False):
    return input.clamp_(0.0, 6.0) if inplace else input.clamp(0.0, 6.0)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``x / max(||x||_p, eps)`` along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    out = input * (input + 3).clamp(0.0, 6.0) / 6
    return input.copy_(out) if inplace else out


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``; a weight of several values applies one per
    channel (dim 1)."""
    if weight.numel() != 1:
        if input.dim() < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(f"prelu: mismatch of parameter numbers ({weight.numel()}) and "
                               f"input channel size ({input.shape[1] if input.dim() > 1 else 1})")
        weight = weight.reshape(-1, *([1] * (input.dim() - 2)))
    positive = input.clamp_min(0.0)
    return positive + weight * (input - positive)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clamped to [min_val, max_val]."""
    if inplace:
        return input.clamp_(min_val, max_val)
    return input.clamp(min_val, max_val)


def logsigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably."""
    return -softplus(-input)


def glu(input, dim=-1):
    """The gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of (N, C, H, W), dim 0 of (C, H, W)) with probability
    ``p``, scaling the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    from .. import _tinytorch as _C

    batched = input.dim() == 4
    shape = tuple(input.shape[:2] if batched else input.shape[:1]) + (1,) * 2
    keep = (_C.rand(*shape, dtype=_C.float32) >= p).to(input.dtype).to(input.device)
    return input * keep / (1.0 - p) if p < 1.0 else input * 0.0


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q k^T * scale + mask) v`` (the Rust fused attention). With ``enable_gqa``,
    ``key``/``value`` with fewer heads (dim -3) than ``query`` are shared by groups of query
    heads, as in PyTorch (grouped-query attention)."""
    if enable_gqa and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if heads % kv_heads:
            raise RuntimeError(f"scaled_dot_product_attention: the query's {heads} heads are not "
                               f"a multiple of the key's {kv_heads}")
        key = key.repeat_interleave(heads // kv_heads, -3)
        value = value.repeat_interleave(heads // kv_heads, -3)
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale)


# SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))``: the ELU with SELU's alpha,
    scaled."""
    if inplace:
        elu(input, _SELU_ALPHA, True)
        input.mul_(_SELU_SCALE)
        return input
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def _triple(v, what):
    v = tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)
    if len(v) != 3:
        raise ValueError(f"conv3d: {what} must be an int or 3 ints, got {v!r}")
    return v


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The 3-D convolution (cross-correlation) of PyTorch: input (N, C_in, D, H, W) or
    (C_in, D, H, W), weight (C_out, C_in / groups, kD, kH, kW), ``padding`` ints or
    ``"valid"`` / ``"same"``.

    Composed of the 2-D kernel: output depth slice ``o`` is the sum over ``kd`` of the 2-D
    convolution of input depth slice ``o * stride + kd * dilation`` with ``weight[:, :, kd]``.
    All output slices of one ``kd`` go through one ``conv2d`` call, the depth folded into
    the batch, so there are ``kD`` calls; autograd differentiates the composition."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"conv3d: expected a 4-D (unbatched) or 5-D input, got "
                           f"{input.dim()}-D of shape {tuple(input.shape)}")
    if weight.dim() != 5:
        raise RuntimeError(f"conv3d: expected a 5-D weight, got shape {tuple(weight.shape)}")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    stride = _triple(stride, "stride")
    dilation = _triple(dilation, "dilation")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * 3
        elif padding == "same":
            if stride != (1, 1, 1):
                raise ValueError("conv3d: padding='same' is not supported for strided "
                                 "convolutions")
            # PyTorch puts the odd element of the total on the high side.
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                    for d, k in zip(dilation, kernel)]
        else:
            raise ValueError(f"conv3d: invalid padding string {padding!r}, should be one of "
                             "'valid', 'same'")
    else:
        pads = [(p, p) for p in _triple(padding, "padding")]
    if any(lo or hi for lo, hi in pads):
        # F.pad takes the last dim first: (W low, W high, H low, H high, D low, D high).
        x = pad(x, (pads[2][0], pads[2][1], pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    n, c, depth, height, width = x.shape
    if c != weight.shape[1] * groups:
        raise RuntimeError(f"conv3d: input has {c} channels but weight {tuple(weight.shape)} "
                           f"with groups={groups} expects {weight.shape[1] * groups}")
    span = dilation[0] * (kernel[0] - 1) + 1
    out_depth = (depth - span) // stride[0] + 1
    if out_depth < 1:
        raise RuntimeError(f"conv3d: the kernel's depth span {span} exceeds the padded input "
                           f"depth {depth}")
    out = None
    for kd in range(kernel[0]):
        start = kd * dilation[0]
        # (N, C, out_depth, H, W) -> (N * out_depth, C, H, W)
        slices = x[:, :, start:start + (out_depth - 1) * stride[0] + 1:stride[0]]
        slices = slices.permute(0, 2, 1, 3, 4).reshape(n * out_depth, c, height, width)
        part = conv2d(slices, weight[:, :, kd], None, stride[1:], 0, dilation[1:], groups)
        out = part if out is None else out + part
    _, c_out, out_h, out_w = out.shape
    out = out.reshape(n, out_depth, c_out, out_h, out_w).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The 1-D transposed convolution, as ``conv_transpose2d`` over a height of one: input
    (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, K)."""
    def one(v):
        return v[0] if isinstance(v, (tuple, list)) else v

    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    out = conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, one(stride)),
                           (0, one(padding)), (0, one(output_padding)), groups,
                           (1, one(dilation))).squeeze(2)
    return out.squeeze(0) if unbatched else out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its positions: batch norm of the input seen
    as one sample of N * C channels (PyTorch's method); running statistics, when given, are
    updated with the average over the batch."""
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(1, n * c, *input.shape[2:])
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out = batch_norm(x, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        from .. import _grad_mode

        with _grad_mode.no_grad():
            running_mean.copy_(rm.reshape(n, c).mean(0))
            running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(*input.shape)


from ._grid import affine_grid, grid_sample  # noqa: E402,F401
from ._fold import fold, unfold  # noqa: E402,F401
