"""``torch.optim.Optimizer``: the base class, as PyTorch's, so that a Python subclass (a
paper's optimizer, ``optim.LBFGS``) works unchanged: ``defaults``, ``param_groups`` (dicts
whose missing options come from ``defaults``), ``state`` (a ``defaultdict(dict)`` keyed by
parameter), ``zero_grad``, ``add_param_group``, and ``state_dict``/``load_state_dict`` in
PyTorch's layout (parameters numbered in group order)."""

from collections import defaultdict
from copy import deepcopy

from .. import _tinytorch as _C


class _RequiredParameter:
    """The default of an option that every param group must give (``required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """``Optimizer(params, defaults)``: ``params`` an iterable of tensors or of dicts (param
    groups); subclasses implement ``step(closure=None)``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group: its ``params`` (a tensor or an iterable of them) and options, the
        missing ones taken from ``defaults``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient (set it to None, or zero it in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad.zero_()

    def step(self, closure=None):
        """One update; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__}.step() is not implemented")

    def state_dict(self):
        """``{"state": {index: state}, "param_groups": [{..., "params": [indices]}]}``, the
        parameters numbered in the order of the groups."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict``: its groups must match this optimizer's in number and
        sizes; tensors in the state take their parameter's device (and, but for ``step``,
        its floating dtype)."""
        state_dict = deepcopy(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        by_index = {}
        for mine, saved in zip(self.param_groups, saved_groups):
            for i, p in zip(saved["params"], mine["params"]):
                by_index[i] = p
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index.get(i if not isinstance(i, str) else int(i))
            if p is None:
                continue
            self.state[p] = {k: _cast_like(p, k, v) for k, v in s.items()}
        for mine, saved in zip(self.param_groups, saved_groups):
            for k, v in saved.items():
                if k != "params":
                    mine[k] = v

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _cast_like(param, key, value):
    if not isinstance(value, _C.Tensor):
        return value
    if key != "step" and value.is_floating_point() and param.is_floating_point():
        value = value.to(param.dtype)
    return value.to(param.device)
