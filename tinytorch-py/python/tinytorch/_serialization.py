"""``torch.save`` / ``torch.load`` without pickle: objects made of tensors, numbers, strings,
None, lists, tuples and dicts (state dicts, optimizer state, checkpoints) are stored as one
safetensors file — the tensors as its entries, the structure as JSON in its metadata — so
loading a file never runs code. ``load`` also reads plain ``.safetensors`` files (those of
``safetensors.torch.save_file``), giving a dict of tensors."""

import json
import os

from . import _tinytorch as _C

_STRUCTURE = "tinytorch.structure"


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


def _decode(obj, tensors):
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__tuple__" in obj:
            return tuple(_decode(v, tensors) for v in obj["__tuple__"])
        if "__dict__" in obj:
            return {_key(_decode(k, tensors)): _decode(v, tensors) for k, v in obj["__dict__"]}
        if "__float__" in obj:
            return float(obj["__float__"])
        if "__str__" in obj:
            return obj["__str__"]
    return obj


def _key(k):
    return tuple(k) if isinstance(k, list) else k


def save(obj, f):
    """Write ``obj`` to the path ``f`` (atomically: a crash leaves any previous file whole)."""
    tensors = {}
    structure = _encode(obj, tensors)
    _C._save_safetensors(os.fspath(f), tensors, {_STRUCTURE: json.dumps(structure)})


def load(f, map_location=None, weights_only=True):
    """Read a file written by ``save`` (or any safetensors file: a dict of tensors)."""
    tensors, metadata = _C._load_safetensors(os.fspath(f))
    if map_location is not None:
        tensors = {k: v.to(map_location) for k, v in tensors.items()}
    if _STRUCTURE not in metadata:
        return dict(tensors)
    return _decode(json.loads(metadata[_STRUCTURE]), tensors)
