# Regenerate with: python scripts/gen_py_api_fixtures.py  (needs torch; CI does not)
"""PyTorch reference values for tinytorch-py/tests/test_rnn_cells.py, test_lbfgs.py,
test_distributions.py and test_layers_extra.py, written as JSON to tinytorch-py/tests/fixtures/py_api.json:

- cells: outputs of nn.RNNCell/LSTMCell/GRUCell for weights and inputs given by
  ``values(n, phase)`` (below; the tests compute the same numbers), and the gradients of
  ``(out * 0.1 * (1, 2, ...)).sum()`` with respect to the input, the state and every
  parameter;
- lbfgs: the parameters after each ``step`` and the losses ``step`` returned, for three
  problems and settings (a fixed step with a short history, strong Wolfe line searches on
  Rosenbrock's function and on a small tanh network), float64;
- mvn: MultivariateNormal's log_prob, entropy, variance, precision-derived scale_tril and
  the KL divergence of two of them, for matrices given by ``values``;
- grid: F.grid_sample's outputs and gradients (input and grid) for each mode, padding and
  align_corners setting, F.affine_grid's grids, and F.unfold/F.fold of one setting.
"""

import json
import math
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch-py", "tests", "fixtures", "py_api.json")


def values(n, phase):
    """n deterministic numbers in (-0.5, 0.5): 0.5 * sin(0.37 * i + phase)."""
    return [0.5 * math.sin(0.37 * i + phase) for i in range(n)]


def filled(shape, phase, dtype=torch.float32):
    """A tensor of ``shape`` holding ``values(numel, phase)``."""
    n = math.prod(shape)
    return torch.tensor(values(n, phase), dtype=dtype).reshape(shape)


def upstream(t):
    """0.1, 0.2, ... in ``t``'s shape and dtype."""
    return (torch.arange(1, t.numel() + 1, dtype=torch.float64) * 0.1).reshape(t.shape).to(t.dtype)


def tolist(t):
    """The values of ``t`` as a flat list of floats."""
    return t.detach().double().reshape(-1).tolist()


CELL_CASES = [
    # name, kind, kwargs, input shape, with state
    ("rnn_tanh", "RNNCell", {}, (3, 4), True),
    ("rnn_relu", "RNNCell", {"nonlinearity": "relu"}, (3, 4), True),
    ("rnn_no_state", "RNNCell", {}, (3, 4), False),
    ("lstm", "LSTMCell", {}, (3, 4), True),
    ("lstm_unbatched", "LSTMCell", {}, (4,), True),
    ("gru", "GRUCell", {}, (3, 4), True),
    ("gru_no_bias", "GRUCell", {"bias": False}, (2, 4), True),
]
HIDDEN = 5


def cells():
    """Outputs and gradients of the recurrent cells of CELL_CASES."""
    out = {}
    for name, kind, kwargs, xshape, with_state in CELL_CASES:
        cell = getattr(torch.nn, kind)(4, HIDDEN, **kwargs)
        with torch.no_grad():
            for k, (pname, p) in enumerate(cell.named_parameters()):
                p.copy_(filled(tuple(p.shape), 0.3 + k))
        x = filled(xshape, 0.1).requires_grad_(True)
        sshape = xshape[:-1] + (HIDDEN,)
        h = filled(sshape, 1.7).requires_grad_(True)
        c = filled(sshape, 2.9).requires_grad_(True)
        if kind == "LSTMCell":
            res = cell(x, (h, c) if with_state else None)
            loss = (res[0] * upstream(res[0])).sum() + (res[1] * upstream(res[1])).sum() * 2
            outs = [tolist(res[0]), tolist(res[1])]
        else:
            res = cell(x, h if with_state else None)
            loss = (res * upstream(res)).sum()
            outs = [tolist(res)]
        loss.backward()
        grads = {"x": tolist(x.grad)}
        if with_state:
            grads["h"] = tolist(h.grad)
            if kind == "LSTMCell":
                grads["c"] = tolist(c.grad)
        for pname, p in cell.named_parameters():
            grads[pname] = tolist(p.grad)
        out[name] = {"outputs": outs, "grads": grads}
    return out


def least_squares(params):
    """A ridge least-squares loss of one parameter vector."""
    (w,) = params
    a = filled((6, 3), 0.2, torch.float64)
    b = filled((6,), 1.1, torch.float64)
    return 0.5 * ((a @ w - b) ** 2).sum() + 0.05 * (w ** 2).sum()


def rosenbrock(params):
    """Rosenbrock's function of a 2-vector."""
    (xy,) = params
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def tanh_net(params):
    """The mean squared error of a small tanh network."""
    w1, w2 = params
    x = filled((8, 3), 0.6, torch.float64)
    y = filled((8, 1), 2.2, torch.float64)
    return ((torch.tanh(x @ w1) @ w2 - y) ** 2).mean()


LBFGS_CASES = [
    # name, loss function, initial parameter shapes and phases, options, steps
    ("least_squares_fixed_step", "least_squares", [((3,), 0.4)],
     {"lr": 0.5, "max_iter": 4, "history_size": 2}, 4),
    ("rosenbrock_strong_wolfe", "rosenbrock", [((2,), 3.0)],
     {"lr": 1, "max_iter": 10, "history_size": 5, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_strong_wolfe", "tanh_net", [((3, 4), 0.8), ((4, 1), 1.9)],
     {"max_iter": 8, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_defaults", "tanh_net", [((3, 4), 0.8), ((4, 1), 1.9)], {}, 2),
]


def lbfgs():
    """Parameters and losses after each LBFGS step for LBFGS_CASES."""
    out = {}
    for name, fn, inits, opts, steps in LBFGS_CASES:
        params = [filled(shape, phase, torch.float64).requires_grad_(True)
                  for shape, phase in inits]
        opt = torch.optim.LBFGS(params, **opts)
        loss_fn = globals()[fn]

        def closure():
            opt.zero_grad()
            loss = loss_fn(params)
            loss.backward()
            return loss

        record = {"losses": [], "params": []}
        for _ in range(steps):
            record["losses"].append(float(opt.step(closure)))
            record["params"].append([tolist(p) for p in params])
        state = opt.state[params[0]]
        record["func_evals"], record["n_iter"] = state["func_evals"], state["n_iter"]
        out[name] = record
    return out


def spd(n, phase, batch=()):
    """A symmetric positive definite matrix (or batch) built from ``values``."""
    a = filled(batch + (n, n), phase, torch.float64)
    return a @ a.transpose(-1, -2) + 0.5 * torch.eye(n, dtype=torch.float64)


def mvn():
    """MultivariateNormal values for full covariance and precision matrices."""
    d = torch.distributions
    loc = filled((3,), 0.5, torch.float64)
    cov = spd(3, 1.3)
    value = filled((2, 3), 2.1, torch.float64)
    p = d.MultivariateNormal(loc, covariance_matrix=cov)
    q_loc = filled((2, 3), 0.9, torch.float64)
    q = d.MultivariateNormal(q_loc, covariance_matrix=spd(3, 2.4, (2,)))
    prec = d.MultivariateNormal(loc, precision_matrix=cov)
    return {
        "log_prob": tolist(p.log_prob(value)),
        "entropy": tolist(p.entropy()),
        "variance": tolist(p.variance),
        "scale_tril": tolist(p.scale_tril),
        "kl_pq": tolist(d.kl_divergence(p, q)),
        "kl_qp": tolist(d.kl_divergence(q, p)),
        "q_log_prob": tolist(q.log_prob(value)),
        "precision_scale_tril": tolist(prec.scale_tril),
        "precision_log_prob": tolist(prec.log_prob(value)),
    }


GRID_CASES = [
    # mode, padding_mode, align_corners
    ("bilinear", "zeros", False), ("bilinear", "zeros", True), ("bilinear", "border", False),
    ("nearest", "zeros", False), ("nearest", "border", True),
]


def grids():
    """grid_sample outputs and (bilinear) gradients for GRID_CASES, and affine_grid."""
    out = {}
    x = filled((2, 3, 4, 5), 0.3, torch.float64)
    # positions inside, on and beyond the border; 1.37 * values keeps clear of pixel centres
    g = (filled((2, 3, 4, 2), 1.1, torch.float64) * 2.6)
    for mode, padding, align in GRID_CASES:
        xi = x.clone().requires_grad_(True)
        gi = g.clone().requires_grad_(True)
        y = torch.nn.functional.grid_sample(xi, gi, mode=mode, padding_mode=padding,
                                            align_corners=align)
        (y * upstream(y)).sum().backward()
        out[f"{mode}_{padding}_{align}"] = {"out": tolist(y), "grad_input": tolist(xi.grad),
                                            "grad_grid": tolist(gi.grad)}
    xi = x.clone().requires_grad_(True)
    cols = torch.nn.functional.unfold(xi, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    (cols * upstream(cols)).sum().backward()
    out["unfold"] = {"out": tolist(cols), "grad_input": tolist(xi.grad),
                     "fold": tolist(torch.nn.functional.fold(cols, (4, 5), (2, 3), dilation=(1, 2),
                                                             padding=1, stride=(2, 1)))}
    theta = filled((2, 2, 3), 2.0, torch.float64)
    for align in (False, True):
        out[f"affine_{align}"] = tolist(torch.nn.functional.affine_grid(theta, (2, 3, 4, 5),
                                                                       align_corners=align))
    return out


def main():
    """Write the fixtures."""
    torch.manual_seed(0)
    data = {"torch_version": torch.__version__, "cells": cells(), "lbfgs": lbfgs(),
            "mvn": mvn(), "grid": grids()}
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
