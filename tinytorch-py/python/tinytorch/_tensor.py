"""Tensor methods written in Python (as PyTorch's own ``torch/_tensor.py`` holds its Python
methods): the legacy type names (``x.type()``), the ``new_*`` constructors that take their
dtype and device from the tensor, ``__format__``, ``multinomial``, and the device flags of
backends TinyTorch does not have. Each composes bound ops; ``install`` adds them to
``Tensor``."""

from . import _composite, functional
from . import _tinytorch as _C
from ._multinomial import multinomial

# dtype -> the legacy tensor type name's stem ("torch.FloatTensor").
_TYPE_STEMS = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "uint8": "Byte", "bool": "Bool",
}


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def type_name(dtype, device_type="cpu"):
    """``'torch.FloatTensor'`` for float32 on the CPU, ``'torch.cuda.LongTensor'`` for int64
    on a GPU."""
    stem = _TYPE_STEMS[_dtype_name(dtype)]
    return f"torch.{'cuda.' if device_type == 'cuda' else ''}{stem}Tensor"


def _parse_type_name(name):
    """(dtype, is_cuda) of a legacy type name such as ``'torch.cuda.HalfTensor'``."""
    for key, stem in _TYPE_STEMS.items():
        for cuda in (False, True):
            if name == type_name(getattr(_C, key), "cuda" if cuda else "cpu"):
                return getattr(_C, key), cuda
    raise ValueError(f"invalid type: '{name}'")


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()``: the legacy type name (``'torch.FloatTensor'``); ``x.type(torch.int64)``,
    ``x.type('torch.LongTensor')`` or ``x.type(torch.LongTensor)``: the tensor cast to that
    type (itself when it already is)."""
    if dtype is None:
        return type_name(self.dtype, self.device.type)
    if isinstance(dtype, _C.dtype):
        return self if dtype == self.dtype else self.to(dtype)
    name = dtype if isinstance(dtype, str) else getattr(dtype, "_legacy_name", None)
    if name is None:
        raise TypeError(f"type(): dtype must be a torch.dtype, a type name or a tensor type, "
                        f"got {dtype!r}")
    target, cuda = _parse_type_name(name)
    out = self if target == self.dtype else self.to(target)
    if cuda and self.device.type != "cuda":
        out = out.to("cuda")
    elif not cuda and self.device.type == "cuda":
        out = out.to("cpu")
    return out


def _new_args(self, dtype, device):
    return (self.dtype if dtype is None else dtype, self.device if device is None else device)


def _size(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Zeros of ``size`` with this tensor's dtype and device unless given."""
    dtype, device = _new_args(self, dtype, device)
    return _C.zeros(*_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Ones of ``size`` with this tensor's dtype and device unless given."""
    dtype, device = _new_args(self, dtype, device)
    return _C.ones(*_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """An uninitialised tensor of ``size`` with this tensor's dtype and device unless
    given."""
    dtype, device = _new_args(self, dtype, device)
    return _C.empty(*_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             **kwargs):
    """``size`` filled with ``fill_value``, with this tensor's dtype and device unless
    given."""
    dtype, device = _new_args(self, dtype, device)
    return _C.full(tuple(size), fill_value, dtype=dtype, device=device,
                   requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **kwargs):
    """A copy of ``data`` (nested lists, numbers or a tensor) with this tensor's dtype and
    device unless given."""
    dtype, device = _new_args(self, dtype, device)
    if isinstance(data, _C.Tensor):
        out = data.detach().clone().to(dtype).to(device)
        return out.requires_grad_(True) if requires_grad else out
    return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _format(self, format_spec):
    """``f"{loss:.4f}"``: a 0-d tensor formats as its Python number; other tensors only
    with an empty format (their ``str``), as in PyTorch."""
    if self.dim() == 0:
        return self.item().__format__(format_spec)
    if format_spec:
        raise TypeError("unsupported format string passed to Tensor.__format__")
    return str(self)


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    """``torch.multinomial(self, ...)``."""
    return multinomial(self, num_samples, replacement, generator=generator)


def _addcdiv(self, tensor1, tensor2, *, value=1):
    """``self + value * tensor1 / tensor2``."""
    return self + value * (tensor1 / tensor2)


def _addcdiv_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 / tensor2``, in place."""
    return self.add_(tensor1 / tensor2, alpha=value)


def _addcmul(self, tensor1, tensor2, *, value=1):
    """``self + value * tensor1 * tensor2``."""
    return self + value * (tensor1 * tensor2)


def _addcmul_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 * tensor2``, in place."""
    return self.add_(tensor1 * tensor2, alpha=value)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 draws that are 1 with probability ``p`` (a number, or a tensor that
    broadcasts to this one)."""
    if isinstance(p, _C.Tensor):
        draws = _composite.bernoulli(p.expand(*self.shape).contiguous(), generator=generator)
    else:
        draws = _composite.bernoulli(self, float(p), generator=generator)
    return self.copy_(draws)


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with draws from the exponential distribution of rate ``lambd``
    (``-log(U) / lambd``)."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambd > 0.0, but found lambd={lambd}")
    u = _C.rand(*self.shape, generator=generator, dtype=_C.float64)
    # 1 - U lies in (0, 1]: its log is finite
    return self.copy_(-(1.0 - u).log() / lambd)


def _new(self, *args, **kwargs):
    """The legacy ``x.new(...)``: ``x.new(2, 3)`` an uninitialised tensor of that size,
    ``x.new(data)`` a copy of ``data``, ``x.new()`` an empty one; this tensor's dtype and
    device."""
    if not args:
        return self.new_empty(0, **kwargs)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], tuple)
            and all(isinstance(a, int) for a in args[0])):
        return self.new_empty(*args, **kwargs)
    if len(args) == 1:
        return self.new_tensor(args[0], **kwargs)
    raise TypeError(f"new(): expected sizes or data, got {args!r}")


def _index_copy_(self, dim, index, source):
    """Copy the slices of ``source`` into this tensor at positions ``index`` along ``dim``
    (``index`` without repeats, as PyTorch requires): the old slices are subtracted and the
    new ones added with ``index_add``."""
    old = self.index_select(dim, index)
    return self.copy_(self.index_add(dim, index, source - old))


def _pin_memory(self, device=None):
    """The tensor itself: TinyTorch does not page-lock host memory (copies to the GPU are
    synchronous), and the values are what a pinned copy would hold."""
    return self


def _property(fn, doc):
    prop = property(fn)
    prop.__doc__ = doc
    return prop


def _false(doc):
    prop = property(lambda self: False)
    prop.__doc__ = doc
    return prop


def _reduce_ex(self, protocol):
    """Plain pickling (``pickle.dumps(t)``, ``copy.copy``, ``multiprocessing``): the values in
    safetensors bytes (every dtype, bfloat16 included), the device and ``requires_grad``, as a
    leaf; a ``Parameter`` stays one. As PyTorch's, views pickle as copies (``torch.save``
    keeps storage sharing)."""
    from .nn.parameter import Parameter
    values = self.detach().cpu().contiguous()
    blob = bytes(_C._serialize_safetensors({"t": values}, {}))
    return (_rebuild_pickled, (blob, str(self.device), bool(self.requires_grad),
                               isinstance(self, Parameter)))


def _rebuild_pickled(blob, device, requires_grad, parameter):
    """The tensor of :func:`_reduce_ex`'s pickle."""
    t = _C._deserialize_safetensors(blob)[0]["t"].to(device)
    if parameter:
        from .nn.parameter import Parameter
        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad)


def _unfold(self, dimension, size, step):
    """``Tensor.unfold(dimension, size, step)``: every window of ``size`` elements along
    ``dimension``, ``step`` apart, in a new last dim; ``dimension`` becomes the window count
    ``(L - size) // step + 1``. One ``index_select`` (so gradients of overlapping windows
    add up): the values and gradients are PyTorch's, but the result is a copy where
    PyTorch's is a view of the input's memory."""
    if self.dim() == 0:
        # As PyTorch: a 0-d tensor unfolds as its 1-element 1-d view (the same dim range,
        # sizes and errors), giving one window of `size` elements, flattened.
        return _unfold(self.reshape(1), dimension, size, step).reshape(size)
    nd = self.dim()
    if not -nd <= dimension < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dimension})")
    d = dimension % nd
    length = self.shape[d]
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (length - size) // step + 1
    # (n, size) positions: window i starts at i * step.
    starts = _C.arange(0, n * step, step, device=self.device).unsqueeze(1)
    index = (starts + _C.arange(size, device=self.device)).reshape(-1)
    shape = list(self.shape)
    out = self.index_select(d, index).reshape(*shape[:d], n, size, *shape[d + 1:])
    order = list(range(d + 1)) + list(range(d + 2, nd + 1)) + [d + 1]
    return out.permute(*order)


def install(tensor_class):
    """Add the methods above to ``tensor_class`` (``Tensor``)."""
    methods = {
        "type": _type, "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty,
        "new_full": new_full, "new_tensor": new_tensor, "__format__": _format,
        "multinomial": _multinomial,
        "ravel": lambda self: self.reshape(-1),
        "addcdiv": _addcdiv, "addcdiv_": _addcdiv_, "addcmul": _addcmul, "addcmul_": _addcmul_,
        "bernoulli": lambda self, p=None, *, generator=None: _composite.bernoulli(
            self, p, generator=generator),
        "bernoulli_": _bernoulli_,
        "unique": functional.unique, "median": functional.median, "diag": _composite.diag,
        "erfinv_": lambda self: self.copy_(self.erfinv()),
        "sqrt_": lambda self: self.copy_(self.sqrt()),
        "exponential_": _exponential_,
        "new": _new,
        "index_copy_": _index_copy_,
        "index_copy": lambda self, dim, index, source: _index_copy_(self.clone(), dim, index,
                                                                    source),
        "is_complex": lambda self: False,
        "pin_memory": _pin_memory,
        "is_pinned": lambda self, device=None: False,
        "nbytes": _property(lambda self: self.numel() * self.element_size(),
                            "The bytes of the tensor's elements (numel * element_size)."),
        "itemsize": _property(lambda self: self.element_size(),
                              "The bytes of one element."),
        "is_xpu": _false("Whether the tensor is on an Intel XPU: never, in TinyTorch."),
        "is_mps": _false("Whether the tensor is on Apple's MPS device: never, in TinyTorch."),
        "is_meta": _false("Whether the tensor is a meta tensor (no data): never, in TinyTorch."),
        "is_sparse": _false("Whether the tensor is sparse: never, in TinyTorch."),
        "is_quantized": _false("Whether the tensor is quantized: never, in TinyTorch."),
        "__reduce_ex__": _reduce_ex,
        "unfold": _unfold,
    }
    for name, fn in methods.items():
        if name not in tensor_class.__dict__:
            setattr(tensor_class, name, fn)
