"""``torch.multinomial``: indices drawn from rows of (unnormalised) probabilities, composed
from tensor ops (the Rust library has no multinomial kernel).

With replacement, each draw is the number of entries of the normalised cumulative sum at or
below a uniform number (inverse-CDF sampling, found by binary search; a zero-probability
category never has the interval to be picked, and the sum's last entry is exactly 1). Without replacement, PyTorch's
own method: the ``num_samples`` largest of ``p_i / E_i`` with ``E_i = -log U_i ~ Exp(1)``, which
draws in the order that sampling one category at a time without putting it back would
(categories of probability zero come after all others)."""

from . import _tinytorch as _C


def _check(input, num_samples, replacement):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype}")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.dim()} dims "
                           f"(shape {tuple(input.shape)})")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples "
                           f"(num_samples={num_samples})")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           f"without replacement (num_samples={num_samples}, "
                           f"categories={categories})")
    if input.numel() and not bool((input.isfinite() & (input >= 0)).all()):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if input.numel() and not bool((input.sum(-1) > 0).all()):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                           "probabilities <= 0)")


def _count_at_or_below(cdf, u):
    """For each ``u[r, j]``, how many entries of the non-decreasing row ``cdf[r]`` are
    ``<= u[r, j]``: a binary search run for all draws at once (``log2(categories)`` rounds
    of gathers), so memory stays ``rows * num_samples`` whatever the number of categories."""
    k = cdf.shape[-1]
    lo = _C.zeros(*u.shape, dtype=_C.int64)
    hi = _C.full(tuple(u.shape), k, dtype=_C.int64)
    for _ in range(k.bit_length()):
        mid = (lo + hi) // 2
        right = cdf.gather(-1, mid.clamp_max(k - 1)) <= u
        right = right & (mid < hi)
        lo = _C.where(right, mid + 1, lo)
        hi = _C.where(right, hi, mid)
    return lo


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``torch.multinomial(input, num_samples, replacement=False, *, generator=None)``: for
    each row of ``input`` (1-D: one row), ``num_samples`` category indices (int64) drawn with
    probabilities proportional to the row's entries."""
    if out is not None:
        raise TypeError("multinomial(): out= is not supported by TinyTorch")
    _check(input, num_samples, replacement)
    device = input.device
    probs = input.detach().to(_C.float64).cpu()
    one_row = probs.dim() == 1
    if one_row:
        probs = probs.unsqueeze(0)
    rows = probs.shape[0]
    if replacement:
        cdf = probs.cumsum(-1)
        cdf = cdf / cdf[:, -1:]
        u = _C.rand(rows, num_samples, generator=generator, dtype=_C.float64)
        out = _count_at_or_below(cdf, u)
    else:
        u = _C.rand(rows, probs.shape[1], generator=generator, dtype=_C.float64)
        exponential = -u.log()  # Exp(1); u = 0 gives inf, a draw of probability 2^-53
        out = (probs / exponential).topk(num_samples, dim=-1).indices
    out = out.to(_C.int64)
    if one_row:
        out = out.squeeze(0)
    return out.to(device) if device.type != "cpu" else out
