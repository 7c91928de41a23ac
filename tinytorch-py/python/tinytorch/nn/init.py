"""``torch.nn.init``: PyTorch's initialisers. The bounds are PyTorch's formulas; the random
draws come from TinyTorch's generator (so the same seed gives other numbers than PyTorch)."""

import math

from .._grad_mode import no_grad


def calculate_gain(nonlinearity, param=None):
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid"]
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std) draws truncated to [a, b], PyTorch's inverse-CDF method:
    uniform draws between the normal CDF at a and at b, mapped back through ``erfinv``, then
    clamped to [a, b] against rounding."""
    from .._composite import erfinv

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        import warnings
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad():
        from .. import _tinytorch as _C
        u = _C.rand(*tensor.shape, generator=generator, dtype=_C.float64) * (2 * hi - 2 * lo) \
            + (2 * lo - 1)
        values = (erfinv(u) * (std * math.sqrt(2.0)) + mean).clamp(a, b)
        return tensor.copy_(values)


def orthogonal_(tensor, gain=1.0, generator=None):
    """Fill with a (semi-)orthogonal matrix times ``gain``: the orthonormal factor of a
    Gaussian matrix (rows = ``tensor.shape[0]``, the other dims flattened), as PyTorch's QR
    with the signs of R's diagonal made positive gives it; here by Gram-Schmidt with a second
    orthogonalisation pass per column, in float64."""
    from .. import _tinytorch as _C

    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    a = _C.randn(rows, cols, generator=generator, dtype=_C.float64)
    if rows < cols:
        a = a.t()
    n, k = a.shape
    q = _C.zeros(n, k, dtype=_C.float64)
    with no_grad():
        for j in range(k):
            v = a[:, j]
            for _ in range(2):  # "twice is enough" (Kahan, Parlett)
                if j:
                    basis = q[:, :j]
                    v = v - basis @ (basis.t() @ v)
            q[:, j] = v / v.norm()
        if rows < cols:
            q = q.t()
        return tensor.copy_((q * gain).reshape(*tensor.shape))
