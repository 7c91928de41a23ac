"""``torch.nn``: Module, Parameter, the layers, the losses, ``functional`` and ``init``."""

from . import attention, functional, init, parallel, utils  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterList, Sequential  # noqa: F401
from .layers import *  # noqa: F401,F403
from .layers import (  # noqa: F401
    AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d,
    BCELoss,
    BCEWithLogitsLoss, Conv1d, Conv2d, ConvTranspose2d, CrossEntropyLoss, Dropout, ELU, Embedding,
    Flatten, GELU, GroupNorm, HuberLoss, Identity, KLDivLoss, L1Loss, LayerNorm, LeakyReLU, Linear,
    LogSoftmax, MaxPool1d, MaxPool2d, MSELoss, NLLLoss, PixelShuffle, PixelUnshuffle, ReLU, RMSNorm,
    Sigmoid, SiLU, SmoothL1Loss, Softmax, Softplus, Tanh, Unflatten, Upsample,
)
from .module import Module  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .rnn import GRU, LSTM, RNN  # noqa: F401
from .rnn_cell import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: F401
from .composed import (  # noqa: F401
    GLU, SELU, ConstantPad1d, ConstantPad2d, ConstantPad3d, Conv3d, ConvTranspose1d, Dropout2d,
    Fold, Hardswish, Hardtanh, InstanceNorm1d, InstanceNorm2d, PReLU, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReLU6, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, Unfold, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .parallel import DataParallel  # noqa: F401
from .sync_batchnorm import SyncBatchNorm  # noqa: F401
from . import modules  # noqa: F401,E402 (after the classes it re-exports)
from .transformer import (  # noqa: F401
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)
