"""The cases of fixtures/py_api.json that the tests (test_rnn_cells.py, test_lbfgs.py) and
their generator (scripts/fixtures/gen_py_api_fixtures.py, run with PyTorch) share, so the two
sides cannot drift apart. Nothing here imports a tensor library: the LBFGS problems are built
on the ``torch`` module that the caller passes."""

HIDDEN = 5

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

LBFGS_CASES = [
    # name, loss function (a key of lbfgs_losses), initial parameter shapes and phases,
    # options, steps
    ("least_squares_fixed_step", "least_squares", [((3,), 0.4)],
     {"lr": 0.5, "max_iter": 4, "history_size": 2}, 4),
    ("rosenbrock_strong_wolfe", "rosenbrock", [((2,), 3.0)],
     {"lr": 1, "max_iter": 10, "history_size": 5, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_strong_wolfe", "tanh_net", [((3, 4), 0.8), ((4, 1), 1.9)],
     {"max_iter": 8, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_defaults", "tanh_net", [((3, 4), 0.8), ((4, 1), 1.9)], {}, 2),
]


def lbfgs_losses(torch, filled):
    """The loss functions of LBFGS_CASES by name, each of a list of parameters, built on
    ``torch`` (PyTorch or TinyTorch) and its ``filled(shape, phase, dtype)``."""

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

    return {"least_squares": least_squares, "rosenbrock": rosenbrock, "tanh_net": tanh_net}
