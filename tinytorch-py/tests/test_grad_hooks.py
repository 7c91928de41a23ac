"""Module hooks, tensor hooks, ``autograd.grad(create_graph=True)`` and
``utils.checkpoint`` from Python, against PyTorch's values (fixtures/hooks.safetensors and
tinytorch/tests/fixtures/higher_order.safetensors, both from
scripts/fixtures/gen_higher_order_fixtures.py)."""

import os

import pytest
from conftest import assert_close, fixture

import tinytorch as torch
import tinytorch.nn.functional as F
from tinytorch.utils.checkpoint import checkpoint

HIGHER = os.path.join(os.path.dirname(__file__), "..", "..", "tinytorch", "tests", "fixtures",
                      "higher_order.safetensors")


def test_module_hooks_match_pytorch():
    f = fixture("hooks.safetensors")
    nn = torch.nn
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    net.load_state_dict({k[len("net."):]: v for k, v in f.items() if k.startswith("net.")})
    x = f["x"].clone().requires_grad_(True)
    handles = [
        net[0].register_forward_pre_hook(lambda m, args: (args[0] * 2,)),
        net[1].register_forward_hook(lambda m, args, out: out + 1),
    ]
    seen = {}

    def tanh_hook(m, gi, go):
        assert m is net[1]
        seen["tanh_gi"], seen["tanh_go"] = gi[0], go[0]
        return (gi[0] * 2,)

    def last_hook(m, gi, go):
        seen["last_gi"], seen["last_go"] = gi[0], go[0]

    handles.append(net[1].register_full_backward_hook(tanh_hook))
    handles.append(net[2].register_full_backward_hook(last_hook))
    y = net(x)
    assert_close(y, f["y"], 1e-12, 1e-12, "y")
    (y * torch.tensor([1.0, -2.0], dtype=torch.float64)).sum().backward()
    for k in ("tanh_gi", "tanh_go", "last_gi", "last_go"):
        assert_close(seen[k], f[k], 1e-12, 1e-12, k)
    assert_close(x.grad, f["grad_x"], 1e-12, 1e-12, "grad_x")
    for k, p in net.named_parameters():
        assert_close(p.grad, f[f"grad.{k}"], 1e-12, 1e-12, k)
    # Removed, the hooks no longer run.
    for h in handles:
        h.remove()
    seen.clear()
    plain = net(f["x"])
    assert not seen
    assert not torch.allclose(plain, f["y"])


def test_backward_hook_without_input_gradient_gets_none():
    lin = torch.nn.Linear(2, 1)
    calls = []
    lin.register_full_backward_hook(lambda m, gi, go: calls.append((gi, go[0].tolist())))
    (lin(torch.ones(3, 2)) * 2).sum().backward()
    assert calls == [((None,), [[2.0], [2.0], [2.0]])]


def test_tensor_register_hook_and_retain_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    seen = []
    h = y.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    assert y.grad.tolist() == [12.0, 24.0]
    assert x.grad.tolist() == [36.0, 72.0]
    h.remove()
    x.grad = None
    x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="register_hook"):
        torch.ones(2).register_hook(lambda g: g)


def test_hessian_vector_product_and_gradient_penalty_match_pytorch():
    f = torch.load(HIGHER)
    w = f["tanh_sq.w"].clone().requires_grad_(True)
    loss = torch.tanh(w @ f["tanh_sq.x"]).sum() ** 2
    (g,) = torch.autograd.grad(loss, w, create_graph=True)
    assert g.requires_grad
    (hv,) = torch.autograd.grad((g * f["tanh_sq.v"]).sum(), w)
    assert_close(g.detach(), f["tanh_sq.grad"], 1e-10, 1e-10, "grad")
    assert_close(hv, f["tanh_sq.hvp"], 1e-10, 1e-10, "hvp")

    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    p = [f[f"gp.{n}"].clone().requires_grad_(True) for n in names]
    x = f["gp.x"].clone().requires_grad_(True)
    h = F.gelu(F.linear(x, p[0], p[1]))
    h = F.leaky_relu(F.linear(h, p[2], p[3]), 0.2)
    d = F.linear(h, p[4], p[5])
    (gx,) = torch.autograd.grad(d.sum(), x, create_graph=True)
    gp = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    gp.backward()
    assert_close(gp.detach(), f["gp.penalty"], 1e-12, 1e-12, "penalty")
    for n, t in zip(names, p):
        want = f[f"gp.grad_{n}"]
        got = t.grad if t.grad is not None else torch.zeros_like(want)
        assert_close(got, want, 1e-10, 1e-10, n)


def test_backward_create_graph():
    x = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [9.0, -12.0]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 12)
        self.fc2 = torch.nn.Linear(12, 6)
        self.drop = torch.nn.Dropout(0.3)

    def forward(self, x, scale):
        return self.drop(self.fc2(F.gelu(self.fc1(x)))) * scale + x


def test_checkpoint_gives_the_same_gradients_with_dropout():
    torch.manual_seed(0)
    block = Block()
    x0 = torch.randn(4, 6)

    def step(use_checkpoint):
        block.zero_grad()
        x = x0.clone().requires_grad_(True)
        torch.manual_seed(5)
        y = checkpoint(block, x, 0.5, use_reentrant=False) if use_checkpoint else block(x, 0.5)
        (y ** 2).sum().backward()
        return y.tolist(), x.grad.tolist(), [p.grad.tolist() for p in block.parameters()]

    assert step(False) == step(True)


def test_checkpoint_errors():
    x = torch.ones(2, requires_grad=True)
    # The Python error comes back through the Rust engine as a RuntimeError naming it.
    with pytest.raises(RuntimeError, match="TypeError: checkpoint: .* one Tensor"):
        checkpoint(lambda t: (t, t), x)
    with pytest.raises(NotImplementedError):
        checkpoint(lambda t: t, x, preserve_rng_state=False)


def test_children_modules_and_apply():
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sequential(torch.nn.ReLU(),
                                                                        torch.nn.Linear(3, 1)))
    assert [n for n, _ in net.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    assert len(list(net.children())) == 2
    order = []
    net.apply(lambda m: order.append(type(m).__name__))
    assert order == ["Linear", "ReLU", "Linear", "Sequential", "Sequential"]
