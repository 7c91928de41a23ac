"""``torch.save`` / ``torch.load`` without pickle: objects made of tensors, numbers, strings,
None, lists, tuples and dicts (state dicts, optimizer state, checkpoints) are stored as one
safetensors file — the tensors as its entries, the structure as JSON in its metadata — so
loading a file never runs code. ``load`` also reads plain ``.safetensors`` files (those of
``safetensors.torch.save_file``), giving a dict of tensors. Both take a path or a binary file
object (``io.BytesIO``, an open file)."""

import json
import os

from . import _tinytorch as _C

_STRUCTURE = "tinytorch.structure"
# Nesting deeper than this is not a state dict: refused before Python's recursion limit.
_MAX_DEPTH = 100


def _encode(obj, tensors):
    """JSON-able form of ``obj``; tensors go into ``tensors`` and are referenced by key."""
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


def save(obj, f):
    """Write ``obj`` to the path or binary file object ``f`` (to a path atomically: a crash
    leaves any previous file whole)."""
    tensors = {}
    structure = _encode(obj, tensors)
    metadata = {_STRUCTURE: json.dumps(structure)}
    if hasattr(f, "write"):
        f.write(_C._serialize_safetensors(tensors, metadata))
    else:
        _C._save_safetensors(os.fspath(f), tensors, metadata)


def load(f, map_location=None, weights_only=True, mmap=None):
    """Read what ``save`` wrote (or any safetensors file: a dict of tensors) from a path or a
    binary file object. A corrupt file raises ``RuntimeError`` naming it and the problem.
    ``mmap`` (map the file instead of reading it) gives the same tensors, read in full."""
    if hasattr(f, "read"):
        tensors, metadata = _C._deserialize_safetensors(f.read())
    else:
        tensors, metadata = _C._load_safetensors(os.fspath(f))
    if map_location is not None:
        tensors = {k: v.to(map_location) for k, v in tensors.items()}
    if _STRUCTURE not in metadata:
        return dict(tensors)
    try:
        return _decode(json.loads(metadata[_STRUCTURE]), tensors)
    except (ValueError, RecursionError, _Corrupt) as e:
        raise RuntimeError(f"torch.load: {_name(f)}: corrupt structure metadata: {e}") from None
