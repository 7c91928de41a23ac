"""``nn.RNNCell``, ``nn.LSTMCell``, ``nn.GRUCell``: one time step of the Rust cells. The
Module owns its ``Parameter``s (``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``,
initialised by the Rust cells as PyTorch initialises them) and hands them to the Rust step
at every call (``tinytorch._tinytorch._cell_forward``)."""

from .. import _tinytorch as _C
from .module import Module
from .parameter import Parameter


class RNNCellBase(Module):
    """The parameters and checks that the three cells share."""

    _kind = None

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self._nonlinearity = nonlinearity
        for name, t in _C._cell_init(self._kind, input_size, hidden_size, bias, nonlinearity,
                                     dtype):
            self.register_parameter(name, Parameter(t))
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        if device is not None:
            self.to(device)

    def _step(self, input, hx, cx):
        return _C._cell_forward(self._kind, input, hx, cx, self.weight_ih, self.weight_hh,
                                self.bias_ih, self.bias_hh, self._nonlinearity)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if self._nonlinearity != "tanh":
            s += f", nonlinearity={self._nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``:
    ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; ``cell(input, hx=None)`` returns h'."""

    _kind = "RNN"

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, nonlinearity, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step(input, hx, None)[0]


class LSTMCell(RNNCellBase):
    """``LSTMCell(input_size, hidden_size, bias=True)``: one LSTM step with PyTorch's gate
    order (i, f, g, o); ``cell(input, (h, c)=None)`` returns ``(h', c')``."""

    _kind = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, "tanh", device, dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        return self._step(input, h, c)


class GRUCell(RNNCellBase):
    """``GRUCell(input_size, hidden_size, bias=True)``: one GRU step with PyTorch's gate
    order (r, z, n); ``cell(input, hx=None)`` returns h'."""

    _kind = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, "tanh", device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx, None)[0]
