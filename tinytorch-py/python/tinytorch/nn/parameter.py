"""``nn.Parameter``: a tensor that a Module registers as a parameter."""

from .._tinytorch import Tensor


class Parameter(Tensor):
    """``nn.Parameter(data, requires_grad=True)``: shares ``data``'s memory."""

    def __new__(cls, data=None, requires_grad=True):
        return super().__new__(cls, data, requires_grad)

    @classmethod
    def _of_handle(cls, tensor):
        """The Parameter standing for ``tensor``'s very handle (gradient slot included): a
        Rust layer's parameter exposed to Python."""
        return Tensor.__new__(cls, tensor, True, True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.data.clone(), self.requires_grad)
        return memo[id(self)]


class Buffer(Tensor):
    """``nn.Buffer(data)``: a tensor that ``Module.__setattr__`` registers as a buffer."""

    def __new__(cls, data=None, persistent=True):
        obj = super().__new__(cls, data, False)
        obj.persistent = persistent
        return obj
