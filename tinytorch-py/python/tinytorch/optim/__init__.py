"""``torch.optim``: PyTorch's optimizer classes over TinyTorch's Rust optimizers, the
``Optimizer`` base class for Python optimizers (optimizer.py) and ``LBFGS`` (lbfgs.py).

``param_groups`` is a list of dicts, as in PyTorch (schedulers and user code change their
``lr``); ``step`` hands each group's hyperparameters to the Rust engine, which updates every
parameter in place with the GIL released."""

from .. import _tinytorch as _C
from . import lr_scheduler, optimizer  # noqa: F401
from .optimizer import Optimizer, required  # noqa: F401


class _EngineOptimizer(Optimizer):
    """An optimizer whose update is the Rust engine's (``_kind``): ``step`` hands each
    group's hyperparameters to the engine, whose state (momentum buffers, moments) is also
    what ``state_dict`` saves."""

    _kind = None

    def __init__(self, params, defaults):
        self._engine = None
        super().__init__(params, defaults)
        self._engine = self._make_engine()
        self.state = {}

    def _make_engine(self):
        # PyTorch's constructors raise ValueError for bad hyperparameters ("Invalid learning
        # rate: -1"); the engine's checks say the same, as RuntimeError.
        try:
            return _C._Optimizer(self._kind, self.param_groups)
        except RuntimeError as e:
            raise ValueError(str(e)) from None

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if self.__dict__.get("_engine") is not None:
            self._engine = self._make_engine()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from .._grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        self._engine.step(self.param_groups)
        return loss

    def state_dict(self):
        sd = self._engine.state_dict()
        for saved, group in zip(sd["param_groups"], self.param_groups):
            for k, v in group.items():
                if k != "params":
                    saved[k] = v
        return sd

    def load_state_dict(self, state_dict):
        self._engine.load_state_dict(state_dict)
        for saved, group in zip(state_dict["param_groups"], self.param_groups):
            for k, v in saved.items():
                if k != "params" and k in group:
                    group[k] = v


# PyTorch's implementation switches: which kernels run (a loop over tensors, a "foreach"
# batch, a fused kernel) or whether CUDA graphs may capture the step. The Rust engine is one
# fused update whichever is asked for, so they are accepted and kept in the param groups, as
# PyTorch keeps them; differentiable=True (autograd through the step) is refused.
_IMPLEMENTATION_FLAGS = {"foreach": None, "fused": None, "capturable": False,
                         "differentiable": False}


def _optimizer(name, defaults, check=None):
    def __init__(self, params, lr=None, **kwargs):
        opts = dict(defaults, **_IMPLEMENTATION_FLAGS)
        if lr is not None:
            opts["lr"] = lr
        unknown = set(kwargs) - set(opts)
        if unknown:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(unknown)}")
        opts.update(kwargs)
        if opts["lr"] < 0:
            raise ValueError(f"Invalid learning rate: {opts['lr']}")
        if opts["fused"] and opts["foreach"]:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        if opts["differentiable"]:
            raise RuntimeError(f"{name}(differentiable=True): TinyTorch's optimizer steps are "
                               "not recorded by autograd")
        _EngineOptimizer.__init__(self, params, opts)

    return type(name, (_EngineOptimizer,), {"__init__": __init__, "_kind": name,
                                            "__doc__": f"``torch.optim.{name}``; defaults "
                                                       f"{defaults}, and PyTorch's "
                                                       "foreach/fused/capturable switches."})


SGD = _optimizer("SGD", {"lr": 1e-3, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
                         "nesterov": False, "maximize": False})
Adam = _optimizer("Adam", {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                           "amsgrad": False, "maximize": False})
AdamW = _optimizer("AdamW", {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                             "weight_decay": 1e-2, "amsgrad": False, "maximize": False})
RMSprop = _optimizer("RMSprop", {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                                 "momentum": 0.0, "centered": False, "maximize": False})
Adagrad = _optimizer("Adagrad", {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0,
                                 "initial_accumulator_value": 0.0, "eps": 1e-10,
                                 "maximize": False})
Adadelta = _optimizer("Adadelta", {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.0,
                                   "maximize": False})

from .lbfgs import LBFGS  # noqa: E402,F401
