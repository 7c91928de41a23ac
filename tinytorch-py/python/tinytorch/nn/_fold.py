"""``F.unfold`` (im2col: every sliding block of a batch of images as a column) and its
inverse-by-summation ``F.fold``, composed from a gather and a scatter-add over the padded,
flattened images, so gradients flow through both."""

from .. import _tinytorch as _C


def _pair(v, what):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{what} must be an int or a pair of ints, got {v!r}")
        return tuple(v)
    return (v, v)


def _block_index(kh, kw, out_h, out_w, stride, dilation, padded_w, device):
    """For each kernel offset (ki, kj) and output position (oi, oj), the flat index of the
    pixel it covers in the padded image: shape (kh * kw * out_h * out_w,)."""
    (sh, sw), (dh, dw) = stride, dilation
    ki = _C.arange(kh, device=device).reshape(kh, 1, 1, 1)
    kj = _C.arange(kw, device=device).reshape(1, kw, 1, 1)
    oi = _C.arange(out_h, device=device).reshape(1, 1, out_h, 1)
    oj = _C.arange(out_w, device=device).reshape(1, 1, 1, out_w)
    return ((oi * sh + ki * dh) * padded_w + (oj * sw + kj * dw)).reshape(-1)


def _out_size(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C * kh * kw, L): the blocks of ``kernel_size`` at every position
    (``L`` of them, row-major), each flattened channel by channel."""
    if input.dim() != 4:
        raise NotImplementedError(f"unfold: TinyTorch has 4-D (batched image) inputs, got "
                                  f"{input.dim()}-D")
    (kh, kw), (dh, dw) = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    (ph, pw), (sh, sw) = _pair(padding, "padding"), _pair(stride, "stride")
    n, c, h, w = input.shape
    out_h, out_w = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    if out_h <= 0 or out_w <= 0:
        raise RuntimeError(f"unfold: the kernel {kh}x{kw} (dilation {dh}x{dw}) does not fit the "
                           f"padded input of {h + 2 * ph}x{w + 2 * pw}")
    from .functional import pad

    x = pad(input, (pw, pw, ph, ph)) if ph or pw else input
    hp, wp = h + 2 * ph, w + 2 * pw
    index = _block_index(kh, kw, out_h, out_w, (sh, sw), (dh, dw), wp, input.device)
    cols = x.reshape(n, c, hp * wp).gather(2, index.reshape(1, 1, -1).expand(n, c, -1))
    return cols.reshape(n, c * kh * kw, out_h * out_w)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C * kh * kw, L) -> (N, C, H, W): each column added back where ``unfold`` took its
    block from (overlapping blocks sum)."""
    (kh, kw), (dh, dw) = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    (ph, pw), (sh, sw) = _pair(padding, "padding"), _pair(stride, "stride")
    h, w = _pair(output_size, "output_size")
    if input.dim() != 3:
        raise NotImplementedError(f"fold: TinyTorch has 3-D (batched) inputs, got "
                                  f"{input.dim()}-D")
    n, ckk, length = input.shape
    if ckk % (kh * kw):
        raise RuntimeError(f"fold: expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={ckk} and "
                           f"kernel_size={(kh, kw)}")
    out_h, out_w = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    if out_h * out_w != length:
        raise RuntimeError(f"fold: expected input's size at dimension 2 to match the calculated "
                           f"number of sliding blocks {out_h} * {out_w} = {out_h * out_w}, but "
                           f"got input.size(2)={length}.")
    c = ckk // (kh * kw)
    hp, wp = h + 2 * ph, w + 2 * pw
    index = _block_index(kh, kw, out_h, out_w, (sh, sw), (dh, dw), wp, input.device)
    src = input.reshape(n, c, kh * kw * length)
    out = _C.zeros(n, c, hp * wp, dtype=input.dtype, device=input.device)
    out = out.scatter_add(2, index.reshape(1, 1, -1).expand(n, c, -1), src)
    out = out.reshape(n, c, hp, wp)
    return out[:, :, ph:ph + h, pw:pw + w]
