"""``torch.amp.GradScaler``: dynamic loss scaling, PyTorch's algorithm.

It lives in Python, not as a binding of the Rust ``tinytorch::amp::GradScaler``, because it
must drive any Python optimizer (``optim.LBFGS``, a user's ``Optimizer`` subclass) through
its ``param_groups`` and ``step``; the work per parameter is two tensor ops (``mul_`` and an
``isfinite().all()``)."""

import warnings

from .. import _tinytorch as _C

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``.

    ``scale(loss)`` multiplies the loss by the scale; ``step(optimizer)`` unscales the
    gradients (unless ``unscale_`` already did) and steps unless one of them is inf or NaN;
    ``update()`` halves the scale after such a step (``backoff_factor``) and doubles it
    after ``growth_interval`` clean steps (``growth_factor``). Disabled (``enabled=False``,
    or ``device="cuda"`` without a GPU, as in PyTorch, which warns), every method passes
    through: ``scale`` returns its input, ``step`` calls ``optimizer.step()``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device.startswith("cuda") and not _C._cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError(f"GradScaler: the growth factor must be > 1.0, got "
                                 f"{growth_factor}")
            if backoff_factor >= 1.0:
                raise ValueError(f"GradScaler: the backoff factor must be < 1.0, got "
                                 f"{backoff_factor}")
        self._init_scale = float(init_scale)
        self._scale = None  # a float, set on the first scale()
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}

    # ---- scaling ---------------------------------------------------------------------

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of tensors) times the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = self._init_scale
        if isinstance(outputs, _C.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("GradScaler.scale: outputs must be a Tensor or an iterable of Tensors, "
                         f"got {type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY,
                                                              "found_inf": False})

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is
        inf or NaN (call it before clipping gradients)."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("GradScaler.unscale_: scale() has not been called yet "
                               "(no scale to divide by)")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = 1.0 / self._scale
        found_inf = False
        with _no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    if not found_inf and not bool(p.grad.isfinite().all()):
                        found_inf = True
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and call ``optimizer.step(*args, **kwargs)`` unless a
        gradient is inf or NaN; returns what ``step`` returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Back off after a step that met inf/NaN, grow after ``growth_interval`` clean
        steps; or set the scale to ``new_scale`` (a number or a one-element tensor)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        else:
            if not self._per_optimizer:
                raise RuntimeError("GradScaler.update: no inf checks were recorded prior to "
                                   "update (call step() first).")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    # ---- settings and state ----------------------------------------------------------

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self):
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the factor the scale grows by."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        """The factor the scale shrinks by after inf/NaN."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the factor the scale shrinks by."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        """Clean steps between two growths."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set the clean steps between two growths."""
        self._growth_interval = int(new_interval)

    def is_enabled(self):
        """Whether scaling is on."""
        return self._enabled

    def state_dict(self):
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval,
        _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` saved."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _no_grad():
    from .._grad_mode import no_grad

    return no_grad()
