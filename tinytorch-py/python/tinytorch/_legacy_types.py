"""The legacy tensor types ``torch.FloatTensor``, ``torch.LongTensor``, ...,
``torch.cuda.FloatTensor``: each constructs a tensor of its dtype (and device) and answers
``isinstance`` for tensors of that dtype and device, as in PyTorch, where they predate
``dtype=``."""

from . import _tinytorch as _C
from ._tensor import _TYPE_STEMS, type_name


class _LegacyTensorType(type):
    """Metaclass: ``isinstance(x, torch.FloatTensor)`` checks the dtype and device."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype
                and (obj.device.type == "cuda") == cls.is_cuda)

    def __repr__(cls):
        return f"<class '{cls._legacy_name}'>"


def _construct(cls, *args, device=None):
    device = "cuda" if cls.is_cuda else (device or "cpu")
    if not args:
        return _C.empty(0, dtype=cls.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], _C.Tensor):
        t = args[0]
        if t.dtype != cls.dtype:
            raise TypeError(f"{cls._legacy_name}(): expected {cls.dtype} (got {t.dtype})")
        return t
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return _C.zeros(*args, dtype=cls.dtype, device=device)
    if len(args) == 1:
        return _C.tensor(args[0], dtype=cls.dtype, device=device)
    raise TypeError(f"{cls._legacy_name}(): expected sizes (ints), a sequence of numbers or a "
                    f"tensor, got {args!r}")


def _make(key, cuda):
    dtype = getattr(_C, key)
    name = type_name(dtype, "cuda" if cuda else "cpu")
    cls = _LegacyTensorType(name.rsplit(".", 1)[-1], (), {
        "__new__": _construct,
        "__doc__": f"``{name}(*sizes)`` (zero-filled), ``{name}(data)`` or ``{name}(tensor)``"
                   f": a tensor of dtype {dtype}{' on the GPU' if cuda else ''}.",
        "dtype": dtype, "is_cuda": cuda, "_legacy_name": name,
    })
    return cls


CPU_TYPES = {type_name(getattr(_C, k)).rsplit(".", 1)[-1]: _make(k, False) for k in _TYPE_STEMS}
CUDA_TYPES = {type_name(getattr(_C, k), "cuda").rsplit(".", 1)[-1]: _make(k, True)
              for k in _TYPE_STEMS}
