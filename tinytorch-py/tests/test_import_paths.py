"""PyTorch's longer import paths: the torch.nn.modules tree (each submodule re-exporting the
classes TinyTorch has), torch.utils.data's submodules, torch.optim.optimizer."""

import importlib

import pytest

import tinytorch as torch

TREE = {
    "linear": ["Linear", "Identity"], "conv": ["Conv1d", "Conv2d", "ConvTranspose2d", "_ConvNd"],
    "activation": ["ReLU", "GELU", "MultiheadAttention"], "batchnorm": ["BatchNorm2d",
                                                                        "_BatchNorm"],
    "container": ["Sequential", "ModuleList"], "dropout": ["Dropout"],
    "loss": ["CrossEntropyLoss", "MSELoss"], "module": ["Module"],
    "normalization": ["LayerNorm", "GroupNorm"], "pooling": ["MaxPool2d", "AdaptiveAvgPool2d"],
    "rnn": ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"], "sparse": ["Embedding"],
    "transformer": ["TransformerEncoderLayer", "TransformerEncoder"],
}


@pytest.mark.parametrize("name", sorted(TREE))
def test_nn_modules_tree(name):
    mod = importlib.import_module(f"tinytorch.nn.modules.{name}")
    for cls in TREE[name]:
        assert getattr(mod, cls) is getattr(torch.nn, cls, None) or cls.startswith("_")
    assert getattr(torch.nn.modules, name) is mod


def test_nn_modules_from_imports():
    from tinytorch.nn.modules.linear import Linear
    from tinytorch.nn.modules.utils import _pair

    assert Linear is torch.nn.Linear and torch.nn.modules.Linear is torch.nn.Linear
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)
    assert isinstance(Linear(2, 3), torch.nn.modules.module.Module)


def test_optim_and_data_paths():
    from tinytorch.optim.optimizer import Optimizer
    from tinytorch.utils.data.dataloader import DataLoader

    assert Optimizer is torch.optim.Optimizer
    assert DataLoader is torch.utils.data.DataLoader
    assert torch.optim.LBFGS.__mro__[1] is Optimizer
