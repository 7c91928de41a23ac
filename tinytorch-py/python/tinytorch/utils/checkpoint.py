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
