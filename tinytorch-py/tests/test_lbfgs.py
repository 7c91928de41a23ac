"""optim.LBFGS against PyTorch's (fixtures/py_api.json: the parameters after every step and
the returned losses, with a fixed step and a short history, and with strong Wolfe line
searches), its state counters and argument errors."""

import pytest

import tinytorch as torch
from py_api_cases import LBFGS_CASES as CASES, lbfgs_losses
from py_api_fixtures import DATA, assert_list_close, filled

LOSSES = lbfgs_losses(torch, filled)


@pytest.mark.parametrize("name,loss_name,inits,opts,steps", CASES, ids=[c[0] for c in CASES])
def test_lbfgs_matches_pytorch(name, loss_name, inits, opts, steps):
    want = DATA["lbfgs"][name]
    loss_fn = LOSSES[loss_name]
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
