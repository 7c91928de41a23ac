"""A Python subclass of torch.optim.Optimizer (as papers' optimizers are written): defaults
and param groups, per-parameter state, zero_grad, step with a closure, state_dict and
load_state_dict in PyTorch's layout, and the base class's errors."""

import pytest

import tinytorch as torch
from tinytorch.optim.optimizer import Optimizer, required


class MomentumSGD(Optimizer):
    """Heavy-ball SGD written as a paper would: buffers in self.state."""

    def __init__(self, params, lr=required, momentum=0.9):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = p.grad.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(p.grad)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])
        return loss


def quadratic_setup():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    b = torch.tensor([0.5], requires_grad=True)
    return w, b


def test_subclass_steps_like_its_definition():
    w, b = quadratic_setup()
    opt = MomentumSGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.01
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.defaults["momentum"] == 0.9
    buf_w, ref_w, ref_b, buf_b = None, [1.0, -2.0], 0.5, None
    for _ in range(3):
        def closure():
            opt.zero_grad()
            loss = (w ** 2).sum() + (b ** 2).sum()
            loss.backward()
            return loss

        loss = opt.step(closure)
        assert isinstance(loss, torch.Tensor)
        g_w = [2 * v for v in ref_w]
        buf_w = g_w if buf_w is None else [0.9 * m + g for m, g in zip(buf_w, g_w)]
        ref_w = [v - 0.1 * m for v, m in zip(ref_w, buf_w)]
        g_b = 2 * ref_b
        buf_b = g_b if buf_b is None else 0.9 * buf_b + g_b
        ref_b = ref_b - 0.01 * buf_b
    assert torch.allclose(w.detach(), torch.tensor(ref_w))
    assert abs(float(b) - ref_b) < 1e-6
    assert len(opt.state) == 2 and all(p in opt.state for p in (w, b))


def test_state_dict_round_trip_and_zero_grad():
    w, b = quadratic_setup()
    opt = MomentumSGD([w, b], lr=0.1)
    ((w ** 2).sum() + b.sum()).backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    assert sd["param_groups"] == [{"lr": 0.1, "momentum": 0.9, "params": [0, 1]}]
    w2, b2 = quadratic_setup()
    opt2 = MomentumSGD([w2, b2], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1
    assert torch.equal(opt2.state[w2]["momentum_buffer"], opt.state[w]["momentum_buffer"])
    opt.zero_grad()
    assert w.grad is None and b.grad is None
    ((w ** 2).sum()).backward()
    opt.zero_grad(set_to_none=False)
    assert torch.equal(w.grad, torch.zeros(2))
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt2.load_state_dict({"state": {}, "param_groups": [{"lr": 1, "params": [0]}]})


def test_base_class_errors():
    w, _ = quadratic_setup()
    with pytest.raises(ValueError, match="empty parameter list"):
        MomentumSGD([], lr=0.1)
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        MomentumSGD([w])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        MomentumSGD(w, lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        MomentumSGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        MomentumSGD([w * 2], lr=0.1)
    with pytest.raises(NotImplementedError):
        Optimizer([w], {}).step()
    assert isinstance(torch.optim.SGD([w], lr=0.1), torch.optim.Optimizer)
