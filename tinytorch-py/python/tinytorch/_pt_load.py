"""``torch.load`` of PyTorch's zip format (see ``_pt_save``), from PyTorch or from TinyTorch.

``weights_only=True`` (PyTorch 2.6's default) unpickles ``data.pkl`` with a ``find_class``
that resolves only PyTorch's allow-list (the tensor rebuild functions, storage classes,
dtypes, ``torch.Size``, ``torch.device``, ``OrderedDict``, ``set``, ...) plus what
``torch.serialization.add_safe_globals`` added: nothing else is imported or called, and any
other global is a ``pickle.UnpicklingError`` naming it. ``weights_only=False`` imports what
the pickle names, with ``torch.*`` read as ``tinytorch.*`` so that whole modules load.

Every size in the file is checked against the bytes the archive holds before anything is
allocated: a corrupt file is a ``RuntimeError`` or ``pickle.UnpicklingError``.
"""

import _codecs
import _compat_pickle
import collections
import io
import pickle
import pickletools
import struct
import zipfile
import zlib
from collections import OrderedDict

from . import _tinytorch as _C
from ._pt_save import STORAGE_NAMES

# PyTorch's storage class name -> tinytorch dtype name
_STORAGE_DTYPES = {v: k for k, v in STORAGE_NAMES.items()}
# PyTorch's storage classes that TinyTorch has no dtype for (named in the error).
_OTHER_STORAGES = {
    "ShortStorage": "int16", "CharStorage": "int8",
    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
    "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
}
_SAFETENSORS_CODES = {"float32": "F32", "float64": "F64", "float16": "F16",
                      "bfloat16": "BF16", "int64": "I64", "int32": "I32", "uint8": "U8", "bool": "BOOL"}
# PyTorch's dtypes (all of them are allowed globals in a weights-only load); those TinyTorch
# lacks resolve to a placeholder that refuses to build a tensor.
_TORCH_DTYPES = [
    "float32", "float64", "float16", "bfloat16", "int64", "uint8", "bool", "int32", "int16",
    "int8", "complex64", "complex128", "complex32", "qint8", "quint8", "qint32", "quint4x2",
    "quint2x4", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "uint16", "uint32", "uint64", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
    "float", "double", "half", "long", "int", "short", "cfloat", "cdouble", "chalf",
] + [f"uint{i}" for i in range(1, 8)] + [f"int{i}" for i in range(1, 8)]


class UnsupportedDtype:
    """A PyTorch dtype TinyTorch does not have: loads as a value, refuses to be a tensor's."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (UnsupportedDtype, (self.name,))


class StorageType:
    """A PyTorch storage class (``torch.FloatStorage``) as named by a persistent id."""

    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES.get(name)

    def __repr__(self):
        return f"StorageType(dtype={self.dtype or _OTHER_STORAGES.get(self.name)})"


class Storage:
    """One ``data/<key>`` entry of the archive: ``numel`` elements of ``dtype``, read as a 1-D
    tensor once and shared by every tensor built over it."""

    def __init__(self, dtype, data, location):
        self.dtype, self.data, self.location = dtype, data, location
        self.itemsize = _C.empty(0, dtype=getattr(_C, dtype)).element_size()
        self.numel = len(data) // self.itemsize
        self._flat = None
        self._array = None

    def cpu(self):
        """For ``map_location`` callables: this storage, loaded on the CPU."""
        self.location = "cpu"
        return self

    def cuda(self, device=None):
        """For ``map_location`` callables: this storage, loaded on ``cuda:device``."""
        self.location = "cuda" if device is None else f"cuda:{int(device)}"
        return self

    def array(self):
        """The storage as a NumPy array whose memory the tensors share, or None (no NumPy, or
        bf16, which NumPy lacks)."""
        if self._array is None and self.dtype != "bfloat16":
            try:
                import numpy as np
            except ImportError:
                return None
            self._array = np.frombuffer(self.data, dtype=np.dtype(self.dtype))
        return self._array

    def flat(self):
        """The storage as a 1-D tensor."""
        if self._flat is None:
            arr = self.array()
            if arr is not None:
                from . import from_numpy
                self._flat = from_numpy(arr)
            if self._flat is None:
                # safetensors is the one reader of raw bytes of every dtype TinyTorch has.
                header = ('{"s":{"dtype":"%s","shape":[%d],"data_offsets":[0,%d]}}'
                          % (_SAFETENSORS_CODES[self.dtype], self.numel, len(self.data)))
                header = header.encode()
                blob = struct.pack("<Q", len(header)) + header + bytes(self.data)
                self._flat = _C._deserialize_safetensors(blob)[0]["s"]
        return self._flat


def _int_tuple(value, what):
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise RuntimeError(f"torch.load: a tensor's {what} is {str(value)[:60]}, not a tuple of ints")
    return tuple(value)


def rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False,
                   backward_hooks=None, metadata=None, dtype=None):
    """``torch._utils._rebuild_tensor_v2``: the view ``(storage_offset, size, stride)`` of
    ``storage``, sharing its memory where it can (NumPy present, not bf16)."""
    if not isinstance(storage, Storage):
        raise RuntimeError(f"torch.load: a tensor over {type(storage).__name__}, not a storage")
    if not isinstance(storage_offset, int) or storage_offset < 0:
        raise RuntimeError(f"torch.load: storage offset {storage_offset!r}")
    size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    if len(size) != len(stride) or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"torch.load: size {size} and stride {stride} do not describe a tensor")
    numel = 1
    for n in size:
        numel *= n
    if numel and storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) >= storage.numel:
        raise RuntimeError(
            f"torch.load: a tensor of size {size}, stride {stride} at offset {storage_offset} "
            f"reaches past its storage of {storage.numel} elements")
    if numel > max(64 * storage.numel, 1 << 24):
        # Only zero strides (an expanded tensor) make a view larger than its storage; one
        # this much larger is a corrupt size, not something to allocate.
        raise RuntimeError(f"torch.load: a tensor of size {size} over a storage of "
                           f"{storage.numel} elements")
    t = _view(storage, storage_offset, size, stride, numel)
    if storage.location != "cpu":
        if not storage.location.startswith("cuda"):
            raise RuntimeError(f"torch.load: storage location {storage.location[:40]!r} is not "
                               "a device TinyTorch has (map_location='cpu' loads it)")
        if storage.location.startswith("cuda") and not _C._cuda_is_available():
            raise RuntimeError(
                f"Attempting to deserialize object on a CUDA device ({storage.location}) but "
                "torch.cuda.is_available() is False. If you are running on a CPU-only machine, "
                "please use torch.load with map_location=torch.device('cpu') to map your "
                "storages to the CPU.")
        t = t.to(storage.location)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


def _view(storage, offset, size, stride, numel):
    contiguous, expect = True, 1
    for n, s in zip(reversed(size), reversed(stride)):
        if n != 1 and s != expect:
            contiguous = False
        expect *= n
    flat = storage.flat()
    if numel == 0:
        return flat.narrow(0, 0, 0).reshape(size)
    if contiguous:
        return flat.narrow(0, offset, numel).view(size) if size else flat.narrow(0, offset, 1).view(())
    arr = storage.array()
    if arr is not None:
        from numpy.lib.stride_tricks import as_strided
        from . import from_numpy
        # The view shares the storage's memory, as PyTorch's does (bounds checked above).
        view = as_strided(arr[offset:], shape=size, strides=[s * storage.itemsize for s in stride])
        return from_numpy(view)
    # Without NumPy (or for bf16) a strided view is gathered into a tensor of its own.
    index = _C.tensor(offset, dtype=_C.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        index = index + (_C.arange(n, dtype=_C.int64) * s).reshape(shape)
    return flat.index_select(0, index.reshape(-1)).reshape(size)


def rebuild_tensor_v1(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor`` (files of older PyTorch)."""
    return rebuild_tensor(storage, storage_offset, size, stride)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      dtype=None, metadata=None):
    """``torch._utils._rebuild_tensor_v3``."""
    return rebuild_tensor(storage, storage_offset, size, stride, requires_grad)


def rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    """``torch._utils._rebuild_parameter`` (and ``_with_state``): an ``nn.Parameter``."""
    from .nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise RuntimeError(f"torch.load: a Parameter of {type(data).__name__}, not a tensor")
    p = Parameter(data, bool(requires_grad))
    if state:
        if not isinstance(state, dict):
            raise RuntimeError("torch.load: a Parameter's state is not a dict")
        for k, v in state.items():
            # Plain attributes only: a dunder (``__class__``) would change what p is.
            if isinstance(k, str) and not k.startswith("__"):
                setattr(p, k, v)
    return p


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: ``func(*args)``, for a plain tensor or
    Parameter (TinyTorch has no other tensor subclasses)."""
    if func not in _REBUILDERS or not isinstance(args, tuple):
        raise pickle.UnpicklingError(f"torch.load: _rebuild_from_type_v2 of {func!r}")
    return func(*args)


def _unsupported(name):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"torch.load: torch._utils.{name} (quantized, sparse, meta or "
                           "device tensors) is not supported by TinyTorch")
    refuse.__name__ = name
    return refuse


def _latin1(text, encoding="utf-8", errors="strict"):
    # Protocol 2 writes bytes as _codecs.encode(str, "latin1"); another codec name would
    # import that codec's module.
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"torch.load: _codecs.encode with {str(encoding)[:20]!r}")
    return _codecs.encode(text, "latin1")


def _bytearray(*args):
    # bytearray(n) would allocate n bytes that the file never held.
    if args and not isinstance(args[0], (bytes, bytearray, str, list, tuple)):
        raise pickle.UnpicklingError(f"torch.load: bytearray of {type(args[0]).__name__}")
    return bytearray(*args)


def _parameter(data=None, requires_grad=True):
    from .nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise pickle.UnpicklingError(f"torch.load: a Parameter of {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


class _TensorType:
    """``torch.Tensor`` in a weights-only load: a name (the type argument of
    ``_rebuild_from_type_v2``), never called: ``torch.Tensor(n)`` would allocate ``n``
    elements the file never held."""

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError("torch.load: torch.Tensor(...) called in a weights-only load")


_REBUILDERS = {rebuild_tensor, rebuild_tensor_v1, rebuild_tensor_v3, rebuild_parameter}


def _allowed():
    """PyTorch's weights-only allow-list, as TinyTorch objects (``module.name`` -> object)."""
    rc = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": _parameter,
        "torch.Size": tuple,             # tinytorch.Size is tuple
        "torch.Tensor": _TensorType(),
        "torch.device": _C.device,
        "_codecs.encode": _latin1,               # bytes, in a protocol-2 pickle
        "builtins.bytearray": _bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._utils._rebuild_tensor": rebuild_tensor_v1,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor,
        "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
    }
    for name in ("_rebuild_qtensor", "_rebuild_sparse_tensor", "_rebuild_meta_tensor_no_storage",
                 "_rebuild_wrapper_subclass", "_rebuild_device_tensor_from_numpy",
                 "_rebuild_device_tensor_from_cpu_tensor"):
        rc[f"torch._utils.{name}"] = _unsupported(name)
    for name in _TORCH_DTYPES:
        rc[f"torch.{name}"] = getattr(_C, name, None) or UnsupportedDtype(name)
    for name in list(_STORAGE_DTYPES) + list(_OTHER_STORAGES):
        rc[f"torch.{name}"] = StorageType(name)
    rc["torch.storage.UntypedStorage"] = StorageType("UntypedStorage")
    rc["torch.storage.TypedStorage"] = StorageType("TypedStorage")
    return rc


_ALLOWED = None
# torch.serialization.add_safe_globals: the user's additions ("module.name" -> object)
SAFE_GLOBALS = {}


def global_name(obj):
    """``module.qualname`` under which ``add_safe_globals`` allows ``obj`` (an ``(obj, name)``
    pair names it explicitly, as in PyTorch)."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        return obj[1], obj[0]
    return f"{obj.__module__}.{obj.__qualname__}", obj


def _torch_to_tinytorch(module):
    return "tinytorch" + module[len("torch"):] if module == "torch" or module.startswith("torch.") else module


class WeightsUnpickler(pickle.Unpickler):
    """The ``weights_only=True`` unpickler: only allow-listed globals."""

    def __init__(self, file, archive):
        super().__init__(file)
        self.archive = archive

    def find_class(self, module, name):
        global _ALLOWED
        # Protocol 2 writes Python 2's names (__builtin__.set): read as Python 3's, as
        # pickle's own find_class and PyTorch's weights-only unpickler do.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        if _ALLOWED is None:
            _ALLOWED = _allowed()
        full = f"{module}.{name}"
        if full in _ALLOWED:
            return _ALLOWED[full]
        if full in SAFE_GLOBALS:
            return SAFE_GLOBALS[full]
        # A user's class allowed by its tinytorch name also answers to PyTorch's spelling.
        mapped = f"{_torch_to_tinytorch(module)}.{name}"
        if mapped in SAFE_GLOBALS:
            return SAFE_GLOBALS[mapped]
        raise pickle.UnpicklingError(
            f"Weights only load failed. Unsupported global: GLOBAL {full} was not an allowed "
            f"global by default. Please use `torch.serialization.add_safe_globals([{name}])` or "
            f"the `torch.serialization.safe_globals([{name}])` context manager to allowlist "
            "this global if you trust this class/function. (Re-running `torch.load` with "
            "`weights_only` set to `False` will likely succeed, but it can result in arbitrary "
            "code execution. Do it only if you got the file from a trusted source.)")

    def persistent_load(self, pid):
        return self.archive.storage(pid)


class FullUnpickler(WeightsUnpickler):
    """The ``weights_only=False`` unpickler: any global, ``torch.*`` read as ``tinytorch.*``
    (PyTorch's own rebuild functions and storage classes as in the weights-only table)."""

    def find_class(self, module, name):
        try:
            return super().find_class(module, name)
        except pickle.UnpicklingError:
            pass
        module = _torch_to_tinytorch(module)
        try:
            return super(WeightsUnpickler, self).find_class(module, name)
        except (ImportError, AttributeError) as e:
            raise RuntimeError(f"torch.load: the file names {module}.{name}, which cannot be "
                               f"imported here: {e}") from None


class Archive:
    """The entries of a PyTorch zip archive, checked as they are read."""

    def __init__(self, data, location_map):
        self.size = len(data)
        self.zip = zipfile.ZipFile(io.BytesIO(data))
        pkls = [n for n in self.zip.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if not pkls:
            raise RuntimeError("torch.load: a zip file without <archive>/data.pkl: not a file "
                               "torch.save wrote")
        self.prefix = pkls[0][: -len("data.pkl")]
        self.location_map = location_map
        self.storages = {}
        order = self.entry(self.prefix + "byteorder", optional=True)
        if order not in (None, b"little"):
            raise RuntimeError(f"torch.load: byte order {order[:16]!r}: only little-endian files load")

    def entry(self, name, optional=False):
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            if optional:
                return None
            raise RuntimeError(f"torch.load: the archive has no entry {name}") from None
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > 64 * max(info.compress_size, 1) + (1 << 20):
            raise RuntimeError(f"torch.load: entry {name} claims {info.file_size} bytes from {info.compress_size}")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size > self.size:
            raise RuntimeError(f"torch.load: entry {name} claims {info.file_size} bytes, more than "
                               f"the file's {self.size}")
        return self.zip.read(info)

    def storage(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"torch.load: unsupported persistent id {str(pid)[:80]}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"torch.load: persistent id with storage type {storage_type!r}")
        if storage_type.dtype is None:
            other = _OTHER_STORAGES.get(storage_type.name, storage_type.name)
            raise RuntimeError(f"torch.load: dtype torch.{other} ({storage_type.name}) is not "
                               "supported by TinyTorch (float32, float64, float16, bfloat16, "
                               "int64, uint8 and bool are)")
        if not isinstance(key, str) or not isinstance(location, str) or \
                not isinstance(numel, int) or numel < 0:
            raise RuntimeError(f"torch.load: malformed storage id {str(pid)[:80]}")
        found = self.storages.get(key)
        if found is not None:
            if found.dtype != storage_type.dtype:
                raise RuntimeError(f"torch.load: storage {key} read as {found.dtype} and "
                                   f"{storage_type.dtype}")
            return found
        name = f"{self.prefix}data/{key}"
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise RuntimeError(f"torch.load: the archive has no entry {name}") from None
        itemsize = _C.empty(0, dtype=getattr(_C, storage_type.dtype)).element_size()
        # Checked before reading: a claimed size is never allocated unless the bytes are there.
        if info.file_size != numel * itemsize:
            raise RuntimeError(f"torch.load: storage {key} holds {info.file_size} bytes, but "
                               f"{numel} elements of {storage_type.dtype} need {numel * itemsize}")
        data = bytearray(self.entry(name))
        if len(data) != numel * itemsize:
            raise RuntimeError(f"torch.load: storage {key} is truncated")
        storage = self._locate(Storage(storage_type.dtype, data, location), location)
        self.storages[key] = storage
        return storage

    def _locate(self, storage, location):
        """Applies ``map_location``: a device or string, a dict of locations, or PyTorch's
        callable ``(storage, location) -> storage`` (``storage.cpu()``/``.cuda(i)`` or the
        storage itself)."""
        m = self.location_map
        if isinstance(m, dict):
            storage.location = str(m.get(location, location))
        elif callable(m) and not isinstance(m, (str, _C.device)):
            got = m(storage, location)
            if not isinstance(got, Storage):
                raise RuntimeError(f"torch.load: map_location returned {type(got).__name__}, "
                                   "not the storage it was given")
            storage = got
        elif m is not None:
            storage.location = str(m)
        return storage


_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}


def _check_opcodes(pkl):
    """Reads the pickle's opcodes before running them: a memo index beyond the pickle's
    length would make the C unpickler allocate a memo table that large."""
    try:
        for op, arg, _ in pickletools.genops(pkl):
            if op.name in _PUTS and (not isinstance(arg, int) or arg > len(pkl)):
                raise pickle.UnpicklingError(f"torch.load: memo index {arg} in a pickle of "
                                             f"{len(pkl)} bytes")
    except (ValueError, TypeError, struct.error, UnicodeDecodeError, OverflowError) as e:
        raise pickle.UnpicklingError(f"torch.load: corrupt data.pkl: {e}") from None


def load_zip(data, map_location, weights_only):
    """Objects of a PyTorch zip archive (``data``: its bytes)."""
    try:
        archive = Archive(data, map_location)
        pkl = archive.entry(archive.prefix + "data.pkl")
        cls = WeightsUnpickler if weights_only else FullUnpickler
        _check_opcodes(pkl)
        try:
            obj = cls(io.BytesIO(pkl), archive).load()
        except EOFError:
            raise pickle.UnpicklingError("torch.load: data.pkl ends before its STOP") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, struct.error, NotImplementedError,
            UnicodeDecodeError, OverflowError, MemoryError) as e:
        raise RuntimeError(f"torch.load: corrupt zip archive: {type(e).__name__}: {e}") from None
    except (pickle.UnpicklingError, RuntimeError):
        raise
    except RecursionError:
        raise RuntimeError("torch.load: the pickle nests too deep") from None
    except Exception as e:
        if weights_only:
            # An allowed callable called with arguments it refuses, a BUILD on an object that
            # takes no state, an opcode the stream cannot run: never reached outside the pickle.
            raise pickle.UnpicklingError(
                f"Weights only load failed. {type(e).__name__}: {e}") from None
        raise
    return obj
