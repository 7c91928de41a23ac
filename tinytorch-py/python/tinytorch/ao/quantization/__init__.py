"""``torch.ao.quantization``: ``quantize_dynamic``."""

import copy

from ...nn.layers import Linear as _FloatLinear
from ..nn.quantized.dynamic import Linear as _DynamicLinear

#: ``torch.qint8``: the only dtype ``quantize_dynamic`` takes here.
qint8 = "qint8"


def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, mapping=None, inplace=False):
    """Replace every ``nn.Linear`` in ``model`` (the model itself included) by its
    dynamically quantized int8 form (``torch.ao.quantization.quantize_dynamic``). Only
    ``{nn.Linear}`` as ``qconfig_spec`` and int8 are supported. Returns the new model; the
    original is left as it was unless ``inplace``."""
    spec = {_FloatLinear} if qconfig_spec is None else set(qconfig_spec)
    if spec != {_FloatLinear} or mapping is not None:
        raise NotImplementedError("quantize_dynamic: only {nn.Linear} is supported")
    if dtype != qint8:
        raise NotImplementedError(f"quantize_dynamic: dtype {dtype} (only torch.qint8)")
    if not inplace:
        model = copy.deepcopy(model)
    if type(model) is _FloatLinear:
        return _DynamicLinear.from_float(model)
    _swap(model)
    return model


def _swap(module):
    for name, child in list(module._modules.items()):
        if child is None:
            continue
        if type(child) is _FloatLinear:
            module._modules[name] = _DynamicLinear.from_float(child)
        else:
            _swap(child)
