"""What every program shares: NumPy-drawn initial weights, loaded with ``load_state_dict``."""

import functools
import zlib

import numpy as np
import torch


def normal_init(name, shape, rng):
    """The default draw: normal with standard deviation 0.1 (biases too)."""
    return rng.standard_normal(shape) * 0.1


def numpy_state_dict(model, seed, draw=normal_init):
    """``model.state_dict()`` with every parameter replaced by NumPy numbers.

    Each entry gets its own generator, seeded from ``seed`` and the entry's name, so the
    values do not depend on the order in which a library lists its state. Buffers
    (BatchNorm's running statistics, a causal mask, a positional encoding) keep the values
    the model built. A parameter that two names share (tied weights) gets the values drawn
    for the name ``named_parameters()`` lists, under both names."""
    drawn = {}
    for name, p in model.named_parameters():
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        drawn[id(p)] = draw(name, tuple(p.shape), rng)
    state = model.state_dict()
    for key, value in state.items():
        # The object behind the name: getattr through the modules (ModuleList items too).
        obj = functools.reduce(getattr, key.split("."), model)
        if id(obj) in drawn:
            state[key] = torch.from_numpy(np.asarray(drawn[id(obj)])).to(value.dtype)
    return state


def abs_sums(model):
    """The sum of absolute values of every parameter, by name: a few numbers that change
    when any weight does (plain sums could cancel to near zero)."""
    return {name: p.detach().abs().sum().item() for name, p in model.named_parameters()}
