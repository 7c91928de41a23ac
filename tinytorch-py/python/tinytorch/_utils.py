"""``torch._utils``: the helpers of distributed code that flatten several tensors into one
buffer and back."""

from . import _tinytorch as _C


def _flatten_dense_tensors(tensors):
    """One 1-D tensor holding the elements of ``tensors`` one after the other."""
    return _C.cat([t.reshape(-1) for t in tensors], 0)


def _unflatten_dense_tensors(flat, tensors):
    """Views of ``flat`` with the shapes of ``tensors``, in order."""
    out, offset = [], 0
    for t in tensors:
        n = t.numel()
        out.append(flat.narrow(0, offset, n).view_as(t))
        offset += n
    return tuple(out)
