"""``torch.functional``: ``meshgrid`` and ``unique``, composed from tensor ops (views and
a sort), as PyTorch keeps them in its own ``torch/functional.py``."""

import warnings
from collections import namedtuple

from . import _tinytorch as _C


def meshgrid(*tensors, indexing=None):
    """``meshgrid(*tensors, indexing="ij")``: for N 0-D/1-D tensors of sizes s1..sN, N
    tensors of shape (s1, ..., sN) (expanded views), the i-th varying along dim i;
    ``indexing="xy"`` swaps the first two dims (Cartesian). Without ``indexing``, "ij" with
    PyTorch's warning."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                         f'{indexing}')
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {tuple(t.shape)}")
        if t.dtype != tensors[0].dtype or t.device != tensors[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               f"the same dtype and device, got {t.dtype} on {t.device} and "
                               f"{tensors[0].dtype} on {tensors[0].device}")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.shape[0] for t in flat]
    out = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[i] = shape[i]
        out.append(t.reshape(*view).expand(*shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of ``input`` in ascending order (for ``sorted=False`` too, which
    allows any order); with ``return_inverse``, where each element's value is in them
    (``input``'s shape); with ``return_counts``, how often each occurs."""
    if dim is not None:
        raise NotImplementedError(f"torch.unique(dim={dim}): TinyTorch has unique over all "
                                  "elements only (dim=None)")
    flat = input.reshape(-1)
    n = flat.shape[0]
    if n == 0:
        values, inverse = flat, _C.zeros(*input.shape, dtype=_C.int64, device=input.device)
        counts = _C.zeros(0, dtype=_C.int64, device=input.device)
    else:
        values, order = flat.sort()
        first = _C.ones(1, dtype=_C.bool, device=input.device)
        is_new = _C.cat([first, values[1:] != values[:-1]])
        starts = is_new.nonzero().reshape(-1)
        values = values.index_select(0, starts)
        group = is_new.long().cumsum(0) - 1  # the group of each sorted element
        inverse = group.scatter(0, order, group).reshape(*input.shape)
        ends = _C.cat([starts[1:], _C.tensor([n], device=input.device)])
        counts = ends - starts
    out = (values,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out[0] if len(out) == 1 else out


_Median = namedtuple("median", ["values", "indices"])


def median(input, dim=None, keepdim=False):
    """The lower median (the ``(n - 1) // 2``-th smallest value): of all elements (0-D), or
    along ``dim`` as ``(values, indices)``."""
    if dim is None:
        flat = input.reshape(-1)
        return flat.sort().values[(flat.shape[0] - 1) // 2]
    values, indices = input.sort(dim)
    k = (input.shape[dim] - 1) // 2
    v, i = values.narrow(dim, k, 1), indices.narrow(dim, k, 1)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return _Median(v, i)
