"""``F.affine_grid`` and ``F.grid_sample`` (4-D inputs), composed from tensor ops: the
sampling positions are unnormalised as PyTorch does (``align_corners``), and each output
value gathers its corner pixels from the flattened input, so gradients reach both the
input and the grid (through the bilinear weights)."""

import warnings

from .. import _tinytorch as _C


def _align_corners(align_corners, op):
    if align_corners is None:
        warnings.warn(f"Default {op} behavior has changed to align_corners=False since "
                      "1.3.0. Please specify align_corners=True if the old behavior is "
                      "desired.", UserWarning, stacklevel=3)
        return False
    return align_corners


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3) for an output
    of ``size`` (N, C, H, W): ``theta @ (x, y, 1)`` at each output pixel's normalised
    position."""
    align_corners = _align_corners(align_corners, "affine_grid")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid: TinyTorch has the 4-D (2-D image) case only, "
                                  f"got size {tuple(size)}")
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{tuple(size)}. Got {tuple(theta.shape)}.")
    n, _, h, w = size

    def positions(k):
        p = _C.linspace(-1.0, 1.0, k, dtype=theta.dtype) if k > 1 else _C.full(
            (k,), -1.0, dtype=theta.dtype)
        return p if align_corners else p * ((k - 1) / k)

    xs = positions(w).reshape(1, w).expand(h, w)
    ys = positions(h).reshape(h, 1).expand(h, w)
    base = _C.stack([xs, ys, _C.ones(h, w, dtype=theta.dtype)], -1).to(theta.device)
    grid = base.reshape(1, h * w, 3) @ theta.transpose(1, 2)
    return grid.reshape(n, h, w, 2)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) at the normalised positions ``grid`` (N, Ho, Wo, 2;
    (-1, -1) is the top-left corner): ``mode`` "bilinear" or "nearest", ``padding_mode``
    "zeros" or "border"."""
    align_corners = _align_corners(align_corners, "grid_sample")
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'"
                         if mode != "bicubic" else "grid_sample: TinyTorch has no bicubic mode")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample: padding_mode={padding_mode!r} is not supported "
                                  "by TinyTorch ('zeros' and 'border' are)")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2:
        raise NotImplementedError(f"grid_sample: TinyTorch has 4-D inputs with (N, H, W, 2) "
                                  f"grids; got input {tuple(input.shape)}, grid "
                                  f"{tuple(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {tuple(input.shape)} and grid with sizes "
                           f"{tuple(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]

    def unnormalise(g, size):
        if align_corners:
            return (g + 1) / 2 * (size - 1)
        return ((g + 1) * size - 1) / 2

    x = unnormalise(grid[..., 0], w)
    y = unnormalise(grid[..., 1], h)
    if padding_mode == "border":
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    flat = input.reshape(n, c, h * w)

    def fetch(ix, iy):
        """input[n, :, iy, ix] for integer positions, zero outside the image."""
        inside = ((ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)).to(input.dtype)
        index = iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)
        index = index.reshape(n, 1, ho * wo).expand(n, c, ho * wo)
        return flat.gather(2, index).reshape(n, c, ho, wo) * inside.unsqueeze(1)

    if mode == "nearest":
        return fetch(x.round().long(), y.round().long())
    x0, y0 = x.floor(), y.floor()
    wx1, wy1 = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    ix0, iy0 = x0.long(), y0.long()
    return (fetch(ix0, iy0) * (wx0 * wy0) + fetch(ix0 + 1, iy0) * (wx1 * wy0)
            + fetch(ix0, iy0 + 1) * (wx0 * wy1) + fetch(ix0 + 1, iy0 + 1) * (wx1 * wy1))
