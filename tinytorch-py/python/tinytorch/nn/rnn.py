"""``nn.RNN``, ``nn.LSTM``, ``nn.GRU``: the Rust layers (``tinytorch._tinytorch._Recurrent``)
with their parameters registered as this Module's ``Parameter``s under PyTorch's names
(``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), sharing the layer's own tensors."""

from .. import _tinytorch as _C
from .module import Module
from .parameter import Parameter


class _RNNBase(Module):
    _kind = None

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, nonlinearity="tanh", device=None,
                 dtype=None, proj_size=0):
        super().__init__()
        if proj_size:
            raise ValueError("proj_size is not supported")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional, self.nonlinearity = bidirectional, nonlinearity
        object.__setattr__(self, "_engine", self._new_engine(dtype))
        for name, t in self._engine.named_parameters():
            self.register_parameter(name, Parameter._of_handle(t))
        if device is not None:
            self.to(device)

    def _new_engine(self, dtype):
        """The Rust layer for this module's configuration attributes."""
        return _C._Recurrent(
            self._kind, self.input_size, self.hidden_size, self.num_layers,
            getattr(self, "nonlinearity", "tanh"), self.bias, self.batch_first, self.dropout,
            self.bidirectional, dtype)

    def __getstate__(self):
        # The Rust layer does not pickle: it is rebuilt from the configuration and the
        # Parameters when the module is loaded (`__setstate__`).
        state = self.__dict__.copy()
        state.pop("_engine", None)
        return state

    def __setstate__(self, state):
        # TinyTorch's pickles and PyTorch's (`torch.save(lstm)`) carry the same configuration
        # attributes and parameter names; PyTorch's RNN names its nonlinearity, LSTM and GRU
        # have none.
        super().__setstate__(state)
        if getattr(self, "proj_size", 0):
            raise ValueError("proj_size is not supported")
        first = next(iter(self._parameters.values()), None)
        engine = self._new_engine(first.dtype if first is not None else None)
        object.__setattr__(self, "_engine", engine)
        engine.adopt_parameters([self._parameters[name] for name, _ in engine.named_parameters()])
        engine.set_training(self.training)

    def flatten_parameters(self):
        """Compact the weights into one buffer for cuDNN: TinyTorch's layers need no such
        buffer, so, as PyTorch on the CPU, this does nothing."""

    def train(self, mode=True):
        super().train(mode)
        self._engine.set_training(mode)
        return self

    def _apply(self, fn):
        # The Parameters get their new tensors (Module._apply), then the Rust layer computes
        # with exactly those, so gradients keep landing on the same Parameter objects.
        super()._apply(fn)
        self._engine.adopt_parameters([p for _, p in self.named_parameters()])
        return self

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    _kind = "RNN"

    def forward(self, input, hx=None):
        out, h, _ = self._engine.forward(input, hx)
        return out, h


class GRU(_RNNBase):
    _kind = "GRU"

    def forward(self, input, hx=None):
        out, h, _ = self._engine.forward(input, hx)
        return out, h


class LSTM(_RNNBase):
    _kind = "LSTM"

    def forward(self, input, hx=None):
        h0, c0 = hx if hx is not None else (None, None)
        out, h, c = self._engine.forward(input, h0, c0)
        return out, (h, c)
