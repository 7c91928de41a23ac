"""``nn.Module``: parameters, buffers and submodules registered by attribute assignment, as
in PyTorch, with PyTorch's state-dict keys (``layers.0.weight``)."""

from collections import OrderedDict, namedtuple

from .. import _tinytorch as _C
from .._grad_mode import no_grad
from .parameter import Buffer, Parameter

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _RemovableHandle:
    """What ``register_forward_pre_hook`` returns: ``remove()`` takes the hook away."""

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)


def _backward_hook_state(module, hooks):
    from ._backward_hook import BackwardHook

    return BackwardHook(module, hooks)


class Module:
    """Base class of every layer and model (``torch.nn.Module``)."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())

    def __setstate__(self, state):
        # A pickled module (torch.save(model)), PyTorch's or TinyTorch's: PyTorch names the
        # non-persistent buffer set differently and has hook tables TinyTorch lacks, which
        # stay as plain attributes; the tables TinyTorch needs are made if missing.
        state = dict(state)
        if "_non_persistent_buffers_set" in state:
            state.setdefault("_non_persistent", set(state.pop("_non_persistent_buffers_set")))
        self.__dict__.update(state)
        for name, make in (("training", lambda: True), ("_parameters", OrderedDict),
                           ("_buffers", OrderedDict), ("_non_persistent", set),
                           ("_modules", OrderedDict), ("_forward_pre_hooks", OrderedDict),
                           ("_forward_hooks", OrderedDict), ("_backward_hooks", OrderedDict)):
            if name not in self.__dict__:
                object.__setattr__(self, name, make())

    # ---- registration ------------------------------------------------------------------

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        for store in (self._parameters, self._buffers, self._modules):
            if name in store and not (store is self._buffers and isinstance(value, _C.Tensor)):
                del store[name]
        if isinstance(value, (Parameter, Module, Buffer)):
            # A plain attribute of that name (``self.to_emb = None`` before the module is
            # built) would shadow the registered one, which ``__getattr__`` only finds when
            # ordinary lookup fails: PyTorch removes it too.
            self.__dict__.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, Buffer):
            self.register_buffer(name, value, getattr(value, "persistent", True))
        elif name in self._buffers or (value is None and name in self._parameters):
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        else:
            self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    # ---- running -----------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hooks = self.__dict__.get("_backward_hooks")
        state = None
        if backward_hooks and _C.is_grad_enabled():
            state = _backward_hook_state(self, list(backward_hooks.values()))
            args = state.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        forward_hooks = self.__dict__.get("_forward_hooks")
        if forward_hooks:
            for hook in list(forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        if state is not None:
            out = state.wrap_outputs(out)
        return out

    def register_forward_pre_hook(self, hook):
        """Call ``hook(module, args)`` before every forward; a non-None result replaces the
        positional arguments. Returns a handle whose ``remove()`` unregisters it."""
        key = object()
        self._forward_pre_hooks[key] = hook
        return _RemovableHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook):
        """Call ``hook(module, args, output)`` after every forward; a non-None result
        replaces the output. Returns a handle whose ``remove()`` unregisters it."""
        key = object()
        self._forward_hooks[key] = hook
        return _RemovableHandle(self._forward_hooks, key)

    def register_full_backward_hook(self, hook):
        """Call ``hook(module, grad_input, grad_output)`` (tuples, one entry per tensor
        argument and output; None for an input that needs no gradient) when backward has
        computed the gradients of the module's inputs; a non-None result (a tuple) replaces
        grad_input. Returns a handle whose ``remove()`` unregisters it."""
        key = object()
        self._backward_hooks[key] = hook
        return _RemovableHandle(self._backward_hooks, key)

    # ---- traversal ---------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``"layers.0.attn"``; ``""`` is this
        module); AttributeError naming the missing part."""
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in modules:
            for name, t in getattr(m, store).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state -------------------------------------------------------------------------

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by PyTorch's dotted names."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=out, prefix=prefix + name + ".", keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values into the existing parameters and buffers (cast to their dtypes);
        with ``strict``, missing or unexpected keys raise before anything is written."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, v in state_dict.items():
            if k in own and tuple(own[k].shape) != tuple(v.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{tuple(v.shape)} from checkpoint, the shape in current model "
                              f"is {tuple(own[k].shape)}.")
        if strict and (missing or unexpected):
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for k, v in state_dict.items():
                if k in own:
                    own[k].copy_(v)
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and moves ---------------------------------------------------------------

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def _apply(self, fn):
        # Children first, through their own _apply (as PyTorch does), so that a child that
        # overrides it (the recurrent layers) sees the move.
        for child in self.children():
            child._apply(fn)
        for store in (self._parameters, self._buffers):
            for name, t in store.items():
                if t is not None:
                    t.data = fn(t)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers in place (floats only for a dtype)."""
        def move(t):
            dtype = kwargs.get("dtype")
            device = kwargs.get("device")
            for a in args:
                if isinstance(a, _C.dtype):
                    dtype = a
                else:
                    device = a
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            if device is not None:
                t = t.to(device)
            return t

        return self._apply(move)

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type`` (a dtype or legacy type name)."""
        return self._apply(lambda t: t.type(dst_type))

    def cuda(self, device=None):
        return self.to(f"cuda:{device or 0}")

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def half(self):
        return self.to(_C.float16)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- printing ----------------------------------------------------------------------

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                return main + lines[0] + ")"
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))
