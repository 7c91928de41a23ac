"""``torch.save`` / ``torch.load``: PyTorch's zip format (``_pt_save`` writes it, ``_pt_load``
reads it, PyTorch's own files included), dispatched by the file's first bytes; ``load`` also
reads the safetensors files that earlier TinyTorch versions wrote for ``torch.save`` (the
tensors as entries, the structure as JSON in the metadata ``tinytorch.structure``) and plain
``.safetensors`` files (a dict of tensors). Both take a path or a binary file object."""

import json
import os
import pickle
import secrets

from . import _tinytorch as _C
from . import _pt_load, _pt_save
_STRUCTURE = "tinytorch.structure"
# Nesting deeper than this is not a state dict: refused before Python's recursion limit.
_MAX_DEPTH = 100


def _encode(obj, tensors):
    """JSON-able form of ``obj`` in the former ``save``'s structure metadata; tensors go into
    ``tensors`` and are referenced by key. ``save`` no longer writes it: kept so that the
    fuzz harness can seed files of the format ``load`` still reads."""
    if isinstance(obj, _C.Tensor):
        key = f"t{len(tensors)}"
        tensors[key] = obj.detach().cpu()
        return {"__tensor__": key}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, float) and obj != obj:
            return {"__float__": "nan"}
        if isinstance(obj, float) and obj in (float("inf"), float("-inf")):
            return {"__float__": "inf" if obj > 0 else "-inf"}
        return obj
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, tensors) for v in obj]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        return {"__dict__": [[_encode(k, tensors), _encode(v, tensors)] for k, v in obj.items()]}
    if isinstance(obj, (_C.dtype, _C.device)):
        return {"__str__": str(obj)}
    raise TypeError(f"torch.save: cannot store a {type(obj).__name__} (tensors, numbers, "
                    "strings, None, lists, tuples and dicts only; no pickle)")


class _Corrupt(Exception):
    """A structure entry that ``save`` cannot have written."""


def _decode(obj, tensors, depth=0):
    if depth > _MAX_DEPTH:
        raise _Corrupt(f"nesting deeper than {_MAX_DEPTH} levels")
    if isinstance(obj, list):
        return [_decode(v, tensors, depth + 1) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if len(obj) != 1:
        raise _Corrupt(f"an object with keys {sorted(obj)[:4]} (expected one tag)")
    (tag, value), = obj.items()
    if tag == "__tensor__":
        if not isinstance(value, str) or value not in tensors:
            raise _Corrupt(f"a reference to tensor {value!r}, which the file does not hold")
        return tensors[value]
    if tag == "__tuple__" and isinstance(value, list):
        return tuple(_decode(v, tensors, depth + 1) for v in value)
    if tag == "__dict__" and isinstance(value, list):
        out = {}
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise _Corrupt(f"a dict entry {str(pair)[:40]} that is not a [key, value] pair")
            key = _key(_decode(pair[0], tensors, depth + 1))
            out[key] = _decode(pair[1], tensors, depth + 1)
        return out
    if tag == "__float__" and value in ("nan", "inf", "-inf"):
        return float(value)
    if tag == "__str__" and isinstance(value, str):
        return value
    raise _Corrupt(f"an entry tagged {tag!r} holding {str(value)[:40]}")


def _key(k):
    """A dict key as ``save`` wrote it: lists back to tuples (JSON has no tuples)."""
    if isinstance(k, list):
        k = tuple(_key(v) for v in k)
    try:
        hash(k)
    except TypeError:
        raise _Corrupt(f"a dict key of type {type(k).__name__}, which cannot be a key") from None
    return k


def _name(f):
    return repr(os.fspath(f)) if isinstance(f, (str, bytes, os.PathLike)) else type(f).__name__


_ZIP_MAGIC = b"PK\x03\x04"
# PyTorch's legacy (before 1.6) format: a pickled magic number first.
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves ``obj`` to ``f`` (a path or a binary file object) in PyTorch's zip format, which
    PyTorch's ``torch.load`` reads. Tensors are stored by storage (views of one storage share
    one entry); other objects are pickled, classes by reference (``tinytorch.*`` names).
    A path is written through a temporary file in its directory and renamed over it, so a
    crash while saving leaves any previous file whole."""
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("torch.save: TinyTorch writes only the zip format "
                                  "(_use_new_zipfile_serialization=True)")
    if hasattr(f, "write"):
        # Built in memory: the file object need not be seekable.
        f.write(_pt_save.serialize(obj, byteorder=not _disable_byteorder_record))
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    # Not mkstemp: its mode 0600 would outlive the rename; 0666 less the umask, as open() gives.
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            _pt_save.serialize(obj, out, byteorder=not _disable_byteorder_record)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Loads an object that ``torch.save`` wrote (PyTorch's or TinyTorch's; also the
    safetensors files of older TinyTorch and plain ``.safetensors``) from a path or a binary
    file object.

    ``weights_only`` (default ``True``, as in PyTorch 2.6+) unpickles with an allow-list:
    tensors, storages, dtypes, ``torch.Size``/``device``, containers and what
    ``torch.serialization.add_safe_globals`` allows; any other global raises
    ``pickle.UnpicklingError`` without being imported. ``weights_only=False`` unpickles
    anything (only for trusted files), reading ``torch.*`` names as ``tinytorch.*``.
    ``map_location`` (a device, a string, a dict of locations or PyTorch's callable
    ``(storage, location) -> storage``) moves the tensors.
    ``mmap`` gives the same tensors, read in full. A corrupt file raises ``RuntimeError``
    (or ``pickle.UnpicklingError``) naming the problem."""
    if weights_only is None:
        weights_only = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0") in ("0", "")
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("torch.load: the file object must be opened in binary mode")
        head = bytes(data[:16])
    else:
        with open(os.fspath(f), "rb") as fh:
            head = fh.read(16)
            data = None
            if head.startswith(_ZIP_MAGIC):
                data = head + fh.read()
    if head.startswith(_ZIP_MAGIC):
        return _pt_load.load_zip(bytes(data), map_location, weights_only)
    if head.startswith(_LEGACY_MAGIC):
        raise RuntimeError(f"torch.load: {_name(f)} is in PyTorch's legacy (before 1.6) format, "
                           "which TinyTorch does not read; re-save it with PyTorch >= 1.6")
    if data is not None:
        tensors, metadata = _C._deserialize_safetensors(bytes(data))
    else:
        tensors, metadata = _C._load_safetensors(os.fspath(f))
    if map_location is not None and not isinstance(map_location, dict) and not callable(map_location):
        tensors = {k: v.to(map_location) for k, v in tensors.items()}
    if _STRUCTURE not in metadata:
        return dict(tensors)
    try:
        return _decode(json.loads(metadata[_STRUCTURE]), tensors)
    except (ValueError, RecursionError, _Corrupt) as e:
        raise RuntimeError(f"torch.load: {_name(f)}: corrupt structure metadata: {e}") from None
