"""The ``torch.<op>(input, ...)`` forms of the tensor methods (``torch.exp(x)``,
``torch.sum(x, dim=1)``, ``torch.max(x, 1)``): each calls the method of the same name, so
the two forms cannot disagree."""


from ._tinytorch import Tensor as _Tensor


def _method(name):
    def op(input, *args, **kwargs):
        if not isinstance(input, _Tensor):
            if name == "pow" and args and isinstance(args[0], _Tensor):
                return args[0].__rpow__(input)  # torch.pow(2.0, x): a number's powers
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``."
    return op


__all__ = [
    # arithmetic and elementwise functions
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "abs", "sign", "exp", "log",
    "log2", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "floor",
    "ceil", "round", "clamp", "clip", "clamp_min",
    "clamp_max", "maximum", "minimum", "softmax", "log_softmax", "remainder",
    # comparisons and logic
    "eq", "ne", "lt", "le", "gt", "ge", "equal", "allclose", "logical_and", "logical_or",
    "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
    # reductions
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "logsumexp", "norm", "all", "any", "cumsum", "cumprod",
    # linear algebra
    "matmul", "mm", "bmm", "dot", "outer",
    # shapes
    "reshape", "permute", "transpose", "swapaxes", "t", "squeeze", "unsqueeze", "flatten",
    "unflatten", "broadcast_to", "narrow", "select", "diagonal", "chunk", "split", "unbind", "flip",
    "roll", "tril", "triu", "repeat_interleave",
    # indexing
    "index_select", "gather", "scatter", "scatter_add", "index_add", "masked_fill",
    "masked_select", "nonzero", "topk", "sort", "argsort",
    # conversions
    "clone", "detach",
]

for _name in __all__:
    globals()[_name] = _method(_name)
del _name
