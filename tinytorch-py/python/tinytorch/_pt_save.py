"""``torch.save`` in PyTorch's zip format (what ``torch.save`` writes since PyTorch 1.6).

The archive holds ``archive/data.pkl``, a protocol-2 pickle in which every tensor is the call
``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
OrderedDict())`` and every storage the persistent id ``('storage', torch.FloatStorage, key,
'cpu', numel)``; ``archive/data/<key>`` holds that storage's raw little-endian bytes, each
entry's data 64-byte aligned as PyTorch aligns them (so that PyTorch can ``mmap`` it).
Tensors that are views of one storage get one entry, so tied weights load tied.

Globals are written under PyTorch's names (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``, ``torch.device``) so that PyTorch loads the file
with ``weights_only=True``; anything else (a whole ``nn.Module``) is pickled by reference to
its ``tinytorch`` class, as PyTorch pickles its own classes.
"""

import ctypes
import io
import pickle
import random
import struct
import zipfile
from collections import OrderedDict

from . import _tinytorch as _C

# tinytorch dtype name -> PyTorch's legacy storage class name (what the persistent id names)
STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
}
ALIGNMENT = 64


class _Global:
    """A global written by name (``module`` + ``name``) without importing it: the names are
    PyTorch's, which need not be importable here."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        # Callable only so that the pickler accepts it as a reduce function.
        raise TypeError(f"{self.module}.{self.name} is a name written into a file")


_GLOBALS = {}


def _g(module, name):
    # One object per name, so the pickler's memo writes each GLOBAL once, as PyTorch's does.
    return _GLOBALS.setdefault((module, name), _Global(module, name))


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


class _StorageRef:
    """One storage entry: the CPU memory ``[lo, hi)`` (in elements) around ``base`` that the
    saved views of it reach."""

    def __init__(self, key, dtype, base, itemsize, owner):
        self.key, self.dtype, self.base, self.itemsize = key, dtype, base, itemsize
        self.lo = self.hi = None
        self.owners = [owner]      # keeps the tensors (and so the memory) alive while saving

    def cover(self, lo, hi):
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def data(self):
        if self.hi == self.lo:
            return b""
        return ctypes.string_at(self.base + self.lo * self.itemsize,
                                (self.hi - self.lo) * self.itemsize)


class _Storages:
    """The storages of the tensors being saved, found by their CPU base address."""

    def __init__(self):
        self.by_base = {}
        self.order = []       # storages with memory, numbered in order of first sight
        self.empties = []     # the empty tensors' storages of the current pass

    def new_pass(self):
        self.empties = []

    def all(self):
        return self.order + self.empties

    def of(self, t):
        """``(storage, offset within it)`` for the tensor ``t`` (CPU, plain)."""
        itemsize = t.element_size()
        offset, size, stride = t.storage_offset(), tuple(t.shape), tuple(t.stride())
        if t.numel() == 0:
            # An empty tensor reaches no memory: a storage of its own, of no elements,
            # numbered after the others (all of which the first pass has found).
            ref = _StorageRef(str(len(self.order) + len(self.empties)), t.dtype, 0, itemsize, t)
            ref.cover(0, 0)
            self.empties.append(ref)
            return ref, 0
        base = t.data_ptr() - offset * itemsize
        key = (base, str(t.dtype))
        ref = self.by_base.get(key)
        if ref is None:
            ref = _StorageRef(str(len(self.order)), t.dtype, base, itemsize, t)
            self.by_base[key] = ref
            self.order.append(ref)
        else:
            # Kept alive until the end, so that no other storage takes this address.
            ref.owners.append(t)
        reach = sum((n - 1) * s for n, s in zip(size, stride))
        ref.cover(offset, offset + reach + 1)
        return ref, offset


class _Pickler(pickle._Pickler):
    """The pure-Python pickler (its ``save`` can be extended) writing tensors, storages,
    dtypes and devices under PyTorch's global names."""

    def __init__(self, file, storages, final):
        super().__init__(file, protocol=2)
        self.storages, self.final = storages, final

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, _C.dtype):
            name = _dtype_name(obj)
            obj = _g("torch", name)
        if isinstance(obj, _Global):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
            self.memoize(obj)
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            numel = (obj.hi - obj.lo) if self.final else 0
            storage_type = _g("torch", STORAGE_NAMES[_dtype_name(obj.dtype)])
            return ("storage", storage_type, obj.key, "cpu", numel)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (_g("torch._utils", "_rebuild_parameter"),
                    (obj.detach(), obj.requires_grad, OrderedDict()))
        if isinstance(obj, _C.Tensor):
            return self._tensor(obj)
        if isinstance(obj, _C.device):
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (_g("torch", "device"), args)
        return NotImplemented

    def _tensor(self, t):
        requires_grad = bool(t.requires_grad)
        if _dtype_name(t.dtype) not in STORAGE_NAMES:
            raise pickle.PicklingError(f"torch.save: no storage type for dtype {t.dtype}")
        plain = t.detach()
        if plain.device.type != "cpu":
            # Memory off the CPU cannot be read by address: saved through a CPU copy, under
            # location "cpu" (loads on the CPU; map_location moves it back).
            plain = plain.cpu().contiguous()
        ref, offset = self.storages.of(plain)
        if self.final:
            offset -= ref.lo
        return (_g("torch._utils", "_rebuild_tensor_v2"),
                (ref, offset, tuple(plain.shape), tuple(plain.stride()), requires_grad,
                 OrderedDict()))


def _padding(offset, name):
    """The local-header extra field that puts the entry's data on a 64-byte boundary, as
    PyTorch's writer pads (an extra field of id ``FB`` filled with ``Z``)."""
    header = 30 + len(name.encode()) + 4
    pad = (-(offset + header)) % ALIGNMENT
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


def serialize(obj, out=None, byteorder=True):
    """PyTorch's zip archive of ``obj``, written to the seekable binary file ``out`` (one
    storage in memory at a time), or returned as bytes when ``out`` is None."""
    storages = _Storages()
    # First pass: find every tensor and the extent of each storage that the views reach
    # (the persistent ids, written in the second pass, carry each storage's size).
    _Pickler(io.BytesIO(), storages, final=False).dump(obj)
    pkl = io.BytesIO()
    storages.new_pass()
    _Pickler(pkl, storages, final=True).dump(obj)

    into_memory = out is None
    if into_memory:
        out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        def put(name, data):
            name = "archive/" + name
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.extra = _padding(out.tell(), name)
            z.writestr(info, data)
        put("data.pkl", pkl.getvalue())
        put(".format_version", b"1")
        put(".storage_alignment", b"64")
        if byteorder:
            put("byteorder", b"little")
        for ref in storages.all():
            put(f"data/{ref.key}", ref.data())
        put("version", b"3\n")
        # PyTorch writes a random 40-digit id that tells apart files of one process.
        put(".data/serialization_id", "".join(random.choice("0123456789") for _ in range(40)))
    return out.getvalue() if into_memory else None
