"""``torch.nn.modules``: PyTorch's tree of layer modules (``torch.nn.modules.linear.Linear``,
``torch.nn.modules.conv._ConvNd``, ...), each submodule re-exporting the classes of that
name that TinyTorch has. The classes live in ``tinytorch.nn`` (layers.py, rnn.py, ...); this
file only gives them PyTorch's longer import paths, registering each submodule so that
``import tinytorch.nn.modules.conv`` works."""

import sys
import types

from .. import composed, container, layers, module, rnn, rnn_cell, sync_batchnorm, transformer

# submodule -> (the file that holds the classes, their names)
_TREE = {
    "module": (module, ["Module"]),
    "linear": (layers, ["Identity", "Linear"]),
    "conv": (layers, ["_ConvNd", "Conv1d", "Conv2d", "ConvTranspose2d"]),
    "instancenorm": (composed, ["_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d"]),
    "padding": (composed, ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d",
                           "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
                           "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
                           "ReplicationPad2d", "ReplicationPad3d"]),
    "fold": (composed, ["Fold", "Unfold"]),
    "activation": (layers, ["ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "LeakyReLU", "ELU",
                            "Softplus", "Softmax", "LogSoftmax"]),
    "batchnorm": (layers, ["_BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]),
    "container": (container, ["Sequential", "ModuleList", "ModuleDict", "ParameterList"]),
    "dropout": (layers, ["Dropout"]),
    "loss": (layers, ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
                      "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss"]),
    "normalization": (layers, ["LayerNorm", "GroupNorm", "RMSNorm"]),
    "pooling": (layers, ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
                         "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"]),
    "rnn": (rnn, ["RNN", "LSTM", "GRU"]),
    "sparse": (layers, ["Embedding"]),
    "transformer": (transformer, ["TransformerEncoderLayer", "TransformerDecoderLayer",
                                  "TransformerEncoder", "TransformerDecoder", "Transformer"]),
    "flatten": (layers, ["Flatten", "Unflatten"]),
    "pixelshuffle": (layers, ["PixelShuffle", "PixelUnshuffle"]),
    "upsampling": (layers, ["Upsample"]),
}
# Classes defined elsewhere that PyTorch also lists in these submodules.
_EXTRA = {
    "activation": [(transformer, ["MultiheadAttention"]),
                   (composed, ["PReLU", "Hardswish", "ReLU6", "Hardtanh", "GLU", "SELU"])],
    "rnn": [(rnn_cell, ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"])],
    "batchnorm": [(sync_batchnorm, ["SyncBatchNorm"])],
    "conv": [(composed, ["Conv3d", "ConvTranspose1d"])],
    "dropout": [(composed, ["Dropout2d"])],
}


def _ntuple(n, name):
    def parse(x):
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return tuple([x] * n)

    parse.__name__ = name
    parse.__doc__ = f"``{name}(x)``: ``x`` as a tuple of {n} (a sequence as it is)."
    return parse


def _build():
    utils = types.ModuleType(f"{__name__}.utils", "``torch.nn.modules.utils``: the argument "
                                                  "helpers _single, _pair, _triple, _quadruple.")
    for n, helper in enumerate(("_single", "_pair", "_triple", "_quadruple"), start=1):
        setattr(utils, helper, _ntuple(n, helper))
    sys.modules[utils.__name__] = utils
    globals()["utils"] = utils

    for name, (source, classes) in _TREE.items():
        full = f"{__name__}.{name}"
        mod = types.ModuleType(full, f"``torch.nn.modules.{name}``: TinyTorch's "
                                     f"{', '.join(classes)}.")
        pairs = [(source, classes)] + _EXTRA.get(name, [])
        for src, names in pairs:
            for cls_name in names:
                if hasattr(src, cls_name):
                    setattr(mod, cls_name, getattr(src, cls_name))
                    globals()[cls_name] = getattr(src, cls_name)
        sys.modules[full] = mod
        globals()[name] = mod


_build()
