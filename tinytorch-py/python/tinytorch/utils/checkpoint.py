"""``torch.utils.checkpoint``: activation checkpointing through the Rust engine
(``tinytorch::autograd::checkpoint``). The forward runs ``function`` without recording its
graph; backward restores the random-number state, runs it again with grad enabled and
backpropagates through it, so the gradients equal the plain ones (dropout included)."""

from .. import _tinytorch as _C


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` (one Tensor out) without keeping its intermediate
    tensors for backward. Non-tensor arguments and keyword arguments are passed through
    unchanged. Only ``preserve_rng_state=True`` is supported; ``use_reentrant`` is accepted
    and ignored (the semantics are the non-reentrant ones, except that parameters captured by
    ``function`` receive their ``.grad`` during backward even under ``autograd.grad``)."""
    if not preserve_rng_state:
        raise NotImplementedError("checkpoint: only preserve_rng_state=True is supported")
    positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]

    def run(*tensors):
        full = list(args)
        for i, t in zip(positions, tensors):
            full[i] = t
        out = function(*full, **kwargs)
        if not isinstance(out, _C.Tensor):
            raise TypeError("checkpoint: the function must return one Tensor, got "
                            f"{type(out).__name__}")
        return out

    return _C._checkpoint(run, [args[i] for i in positions])


def get_device_states(*args):
    """The devices of the accelerator tensors among ``args`` (nested lists, tuples and dicts
    included) and, for each, its random-number state, so that ``set_device_states`` can
    replay a recomputation with the same dropout masks (PyTorch's helper for hand-written
    checkpointing and reversible layers).

    CPU tensors contribute nothing, as in PyTorch. TinyTorch draws the random numbers of
    every device from its one default generator, so a device has no state of its own: its
    entry is ``None``, and the default generator's state covers it."""
    devices = []

    def visit(arg):
        if isinstance(arg, _C.Tensor):
            if arg.device.type not in ("cpu", "meta"):
                index = arg.device.index or 0
                if index not in devices:
                    devices.append(index)
        elif isinstance(arg, (list, tuple)):
            for a in arg:
                visit(a)
        elif isinstance(arg, dict):
            for a in arg.values():
                visit(a)

    visit(args)
    return devices, [None] * len(devices)


def set_device_states(devices, states, *, device_type=None):
    """Restore the states that ``get_device_states`` returned for ``devices``. With one
    generator for all devices (see ``get_device_states``) there is nothing per device to
    restore; the lists must still pair up, as PyTorch's ``zip`` expects."""
    if len(devices) != len(states):
        raise ValueError(f"set_device_states: {len(devices)} devices but {len(states)} states")
