"""nn.RNNCell, nn.LSTMCell, nn.GRUCell (the Rust cells): PyTorch's parameter names, shapes
and default initialisation, outputs and every gradient equal to PyTorch's for given weights
(fixtures/py_api.json), bad input, and LSTM.flatten_parameters."""

import math

import pytest

import tinytorch as torch
from py_api_cases import CELL_CASES as CASES, HIDDEN
from py_api_fixtures import DATA, assert_list_close, filled, upstream


@pytest.mark.parametrize("name,kind,kwargs,xshape,with_state", CASES, ids=[c[0] for c in CASES])
def test_cell_matches_pytorch(name, kind, kwargs, xshape, with_state):
    want = DATA["cells"][name]
    cell = getattr(torch.nn, kind)(4, HIDDEN, **kwargs)
    with torch.no_grad():
        for k, (_, p) in enumerate(cell.named_parameters()):
            p.copy_(filled(tuple(p.shape), 0.3 + k))
    x = filled(xshape, 0.1).requires_grad_(True)
    sshape = tuple(xshape[:-1]) + (HIDDEN,)
    h = filled(sshape, 1.7).requires_grad_(True)
    c = filled(sshape, 2.9).requires_grad_(True)
    if kind == "LSTMCell":
        h1, c1 = cell(x, (h, c) if with_state else None)
        outs = [h1, c1]
        loss = (h1 * upstream(h1)).sum() + (c1 * upstream(c1)).sum() * 2
    else:
        out = cell(x, h if with_state else None)
        outs = [out]
        loss = (out * upstream(out)).sum()
    for got, w in zip(outs, want["outputs"]):
        assert tuple(got.shape) == sshape
        assert_list_close(got, w, what=f"{name} output")
    loss.backward()
    grads = {"x": x.grad, "h": h.grad, "c": c.grad}
    grads.update(dict(cell.named_parameters()))
    for key, w in want["grads"].items():
        g = grads[key] if key in ("x", "h", "c") else grads[key].grad
        assert_list_close(g, w, what=f"{name} grad {key}")


@pytest.mark.parametrize("kind,gates", [("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
def test_parameters_names_shapes_and_default_init(kind, gates):
    cell = getattr(torch.nn, kind)(6, 10)
    shapes = {n: tuple(p.shape) for n, p in cell.named_parameters()}
    assert shapes == {"weight_ih": (gates * 10, 6), "weight_hh": (gates * 10, 10),
                      "bias_ih": (gates * 10,), "bias_hh": (gates * 10,)}
    bound = 1 / math.sqrt(10)
    for p in cell.parameters():
        assert isinstance(p, torch.nn.Parameter) and p.requires_grad
        assert float(p.abs().max()) <= bound
    # U(-b, b) has standard deviation b / sqrt(3): the weights are spread, not constant.
    assert float(cell.weight_ih.std()) > 0.4 * bound
    assert set(cell.state_dict()) == set(shapes)
    no_bias = getattr(torch.nn, kind)(6, 10, bias=False)
    assert [n for n, _ in no_bias.named_parameters()] == ["weight_ih", "weight_hh"]
    assert no_bias.bias_ih is None


def test_cells_train_and_move_dtype():
    cell = torch.nn.LSTMCell(3, 4).double()
    assert cell.weight_ih.dtype == torch.float64
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    x = torch.ones(2, 3, dtype=torch.float64)
    h, c = cell(x)
    (h.sum() + c.sum()).backward()
    before, grad = cell.weight_ih.detach().clone(), cell.weight_ih.grad.clone()
    assert float(grad.abs().sum()) > 0
    opt.step()
    assert torch.allclose(cell.weight_ih.detach(), before - 0.1 * grad)
    assert repr(torch.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == \
        "RNNCell(3, 4, bias=False, nonlinearity=relu)"


def test_cell_bad_input():
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        torch.nn.RNNCell(3, 4, nonlinearity="sigmoid")
    cell = torch.nn.GRUCell(3, 4)
    with pytest.raises(RuntimeError):
        cell(torch.ones(2, 5))
    with pytest.raises(RuntimeError):
        cell(torch.ones(2, 3), torch.ones(3, 4))


def test_flatten_parameters_is_a_no_op():
    lstm = torch.nn.LSTM(3, 4)
    before = {n: p.clone() for n, p in lstm.named_parameters()}
    assert lstm.flatten_parameters() is None
    out, _ = lstm(torch.ones(2, 1, 3))
    assert tuple(out.shape) == (2, 1, 4)
    assert all(torch.equal(before[n], p) for n, p in lstm.named_parameters())
