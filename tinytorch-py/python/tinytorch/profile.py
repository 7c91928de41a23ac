"""``tinytorch.profile``: where a model's time and memory go.

``summary(model, input)`` runs one forward and one backward pass (from the sum of the
output) and returns a :class:`Profile`: one row per layer (state-dict name, the ops it ran,
output shape, parameters, multiply-adds and FLOPs as ``torch.utils.flop_counter`` counts
them, forward and backward time, activation bytes, compute- or memory-bound on this
machine's measured roofline) and the peak memory of each phase. ``print(profile)`` shows
the table. Gradients are left as they were.

``memory_allocated``, ``max_memory_allocated`` and ``reset_peak_memory_stats`` count live
tensor bytes on any device, the CPU included (``torch.cuda``'s functions, which
``tinytorch.cuda`` also has, count the GPU's only).
"""

import json

from . import _tinytorch as _C

__all__ = ["Profile", "summary", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats"]


class Profile:
    """The result of :func:`summary`: ``rows`` (dicts), ``total``, ``phases``, ``machine``."""

    def __init__(self, data, table):
        self.rows = data["rows"]
        self.total = data["total"]
        self.phases = data["phases"]
        self.machine = data["machine"]
        self.device = data["device"]
        self._table = table

    def to_dict(self):
        return {"device": self.device, "rows": self.rows, "total": self.total,
                "phases": self.phases, "machine": self.machine}

    def __str__(self):
        return self._table

    def __repr__(self):
        return (f"Profile({len(self.rows)} rows, {self.total['parameters']:,} parameters, "
                f"{self.total['flops']:,} FLOPs)")


def summary(model, input):
    """Profile one forward and backward pass of ``model`` on ``input``."""
    text, table = _C._profile_summary(model, input)
    return Profile(json.loads(text), table)


def memory_allocated(device="cpu"):
    """Bytes of live tensors on ``device``."""
    return _C._memory_allocated(str(device))


def max_memory_allocated(device="cpu"):
    """The most tensor bytes live on ``device`` at once since the last reset."""
    return _C._max_memory_allocated(str(device))


def reset_peak_memory_stats(device="cpu"):
    """Start the peak of ``max_memory_allocated`` over from what is live now."""
    _C._reset_peak_memory_stats(str(device))
