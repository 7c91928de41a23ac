"""optim.LBFGS against PyTorch's (fixtures/py_api.json: the parameters after every step and
the returned losses, with a fixed step and a short history, and with strong Wolfe line
searches), its state counters and argument errors."""

import pytest

import tinytorch as torch
from py_api_fixtures import DATA, assert_list_close, filled


def least_squares(params):
    (w,) = params
    a = filled((6, 3), 0.2, torch.float64)
    b = filled((6,), 1.1, torch.float64)
    return 0.5 * ((a @ w - b) ** 2).sum() + 0.05 * (w ** 2).sum()


def rosenbrock(params):
    (xy,) = params
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def tanh_net(params):
    w1, w2 = params
    x = filled((8, 3), 0.6, torch.float64)
    y = filled((8, 1), 2.2, torch.float64)
    return ((torch.tanh(x @ w1) @ w2 - y) ** 2).mean()


CASES = [
    ("least_squares_fixed_step", least_squares, [((3,), 0.4)],
     {"lr": 0.5, "max_iter": 4, "history_size": 2}, 4),
    ("rosenbrock_strong_wolfe", rosenbrock, [((2,), 3.0)],
     {"lr": 1, "max_iter": 10, "history_size": 5, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_strong_wolfe", tanh_net, [((3, 4), 0.8), ((4, 1), 1.9)],
     {"max_iter": 8, "line_search_fn": "strong_wolfe"}, 3),
    ("tanh_net_defaults", tanh_net, [((3, 4), 0.8), ((4, 1), 1.9)], {}, 2),
]


@pytest.mark.parametrize("name,loss_fn,inits,opts,steps", CASES, ids=[c[0] for c in CASES])
def test_lbfgs_matches_pytorch(name, loss_fn, inits, opts, steps):
    want = DATA["lbfgs"][name]
    params = [filled(shape, phase, torch.float64).requires_grad_(True)
              for shape, phase in inits]
    opt = torch.optim.LBFGS(params, **opts)

    def closure():
        opt.zero_grad()
        loss = loss_fn(params)
        loss.backward()
        return loss

    for k in range(steps):
        loss = opt.step(closure)
        assert isinstance(loss, torch.Tensor)
        assert abs(float(loss) - want["losses"][k]) <= 1e-9 + 1e-7 * abs(want["losses"][k]), \
            f"{name} step {k}: loss {float(loss)} vs {want['losses'][k]}"
        for p, w in zip(params, want["params"][k]):
            assert_list_close(p, w, atol=1e-9, rtol=1e-7, what=f"{name} step {k}")
    state = opt.state[params[0]]
    assert (state["func_evals"], state["n_iter"]) == (want["func_evals"], want["n_iter"])


def test_lbfgs_converges_on_a_float32_model():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    assert float(torch.nn.functional.mse_loss(model(x), y)) < 1e-6


def test_lbfgs_errors():
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="strong_wolfe"):
        torch.optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="per-parameter options"):
        torch.optim.LBFGS([{"params": [p]}, {"params": [torch.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        torch.optim.LBFGS([p], lr=-1)
    with pytest.raises(RuntimeError, match="closure"):
        torch.optim.LBFGS([p]).step(None)
