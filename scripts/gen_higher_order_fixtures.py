#!/usr/bin/env python3
"""Reference values for tinytorch/tests/higher_order.rs: gradients of gradients computed by
PyTorch with create_graph=True, all in f64 on the CPU. One safetensors file; tensor names are
`<case>.<name>`.

- `mlp`: an MLP (Linear 4->6, tanh, Linear 6->5, GELU, Linear 5->3) with cross-entropy on
  class targets; the Hessian-vector product of the loss w.r.t. the weights with vectors `v*`.
- `tanh_sq`: f(W) = sum(tanh(W x))^2; the gradient and the Hessian-vector product w.r.t. W.
- `elementwise`: f(x) = sum(exp(x) * log(x + 3) + sigmoid(x) * x^2.5 + softmax(x) * x
  + relu(x) * x + mean(x)^2) on positive x; the gradient and the HVP.
- `gp_conv`: the same penalty on a convolutional critic (Conv2d 1->3, 3x3, padding 1,
  stride 2, tanh, Linear 27->1) on (4, 1, 6, 6) images.
- `gp`: a WGAN-GP style gradient penalty on a critic D (Linear 3->8, GELU, Linear 8->8,
  LeakyReLU(0.2), Linear 8->1): gp = mean((||grad_x D(x)||_2 - 1)^2), then gp.backward()
  into D's weights.

Also tinytorch-py/tests/fixtures/hooks.safetensors for the Python package's module hooks
(`hooks` case): Sequential(Linear 3->4, Tanh, Linear 4->2) with fixed weights; a forward
pre-hook scaling Linear 0's input by 2, a forward hook adding 1 to Tanh's output, a full
backward hook on Tanh doubling its grad_input; the recorded grad_input/grad_output of the
last Linear and of Tanh, the output, and the gradients of x and the weights.

Usage: python scripts/gen_higher_order_fixtures.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "higher_order.safetensors")
T = {}
torch.manual_seed(0)
D = torch.float64


def rand(*shape, scale=1.0):
    return torch.randn(*shape, dtype=D) * scale


def hvp(f, params, vs):
    """grad(<grad f(params), v>, params) with create_graph, as users write it."""
    loss = f(*params)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vs))
    return loss, grads, torch.autograd.grad(dot, params)


def mlp_case():
    x, y = rand(8, 4), torch.randint(0, 3, (8,))
    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    shapes = [(6, 4), (6,), (5, 6), (5,), (3, 5), (3,)]
    params = [rand(*s, scale=0.7).requires_grad_(True) for s in shapes]
    vs = [rand(*s) for s in shapes]

    def f(w1, b1, w2, b2, w3, b3):
        h = torch.tanh(F.linear(x, w1, b1))
        h = F.gelu(F.linear(h, w2, b2))
        return F.cross_entropy(F.linear(h, w3, b3), y)

    loss, grads, hv = hvp(f, params, vs)
    T["mlp.x"], T["mlp.y"], T["mlp.loss"] = x, y, loss.detach()
    for n, p, v, g, h in zip(names, params, vs, grads, hv):
        T[f"mlp.{n}"], T[f"mlp.v_{n}"] = p.detach(), v
        T[f"mlp.grad_{n}"], T[f"mlp.hvp_{n}"] = g.detach(), h


def tanh_sq_case():
    w = rand(5, 4, scale=0.5).requires_grad_(True)
    x, v = rand(4, 3), rand(5, 4)
    loss, (g,), (h,) = hvp(lambda w: torch.tanh(w @ x).sum() ** 2, [w], [v])
    T.update({"tanh_sq.w": w.detach(), "tanh_sq.x": x, "tanh_sq.v": v})
    T.update({"tanh_sq.loss": loss.detach(), "tanh_sq.grad": g.detach(), "tanh_sq.hvp": h})


def elementwise_case():
    x = (torch.rand(3, 4, dtype=D) + 0.2).requires_grad_(True)
    v = rand(3, 4)

    def f(x):
        terms = torch.exp(x) * torch.log(x + 3) + torch.sigmoid(x) * x.pow(2.5)
        terms = terms + torch.softmax(x, -1) * x + torch.relu(x - 0.6) * x
        return terms.sum() + x.mean() ** 2

    loss, (g,), (h,) = hvp(f, [x], [v])
    T.update({"elementwise.x": x.detach(), "elementwise.v": v, "elementwise.loss": loss.detach()})
    T.update({"elementwise.grad": g.detach(), "elementwise.hvp": h})


def gp_case():
    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    shapes = [(8, 3), (8,), (8, 8), (8,), (1, 8), (1,)]
    params = [rand(*s, scale=0.6).requires_grad_(True) for s in shapes]
    x = rand(6, 3).requires_grad_(True)

    def critic(x):
        w1, b1, w2, b2, w3, b3 = params
        h = F.gelu(F.linear(x, w1, b1))
        h = F.leaky_relu(F.linear(h, w2, b2), 0.2)
        return F.linear(h, w3, b3)

    (gx,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
    gp = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    gp.backward()
    T["gp.x"], T["gp.grad_x"], T["gp.penalty"] = x.detach(), gx.detach(), gp.detach()
    for n, p in zip(names, params):
        # b3 does not reach the penalty: no gradient, stored as zeros.
        T[f"gp.{n}"] = p.detach()
        T[f"gp.grad_{n}"] = p.grad if p.grad is not None else torch.zeros_like(p.detach())


def gp_conv_case():
    names = ["cw", "cb", "lw", "lb"]
    shapes = [(3, 1, 3, 3), (3,), (1, 27), (1,)]
    params = [rand(*s, scale=0.5).requires_grad_(True) for s in shapes]
    x = rand(4, 1, 6, 6).requires_grad_(True)
    cw, cb, lw, lb = params
    d = F.linear(torch.tanh(F.conv2d(x, cw, cb, stride=2, padding=1)).flatten(1), lw, lb)
    (gx,) = torch.autograd.grad(d.sum(), x, create_graph=True)
    gp = ((gx.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    gp.backward()
    T["gp_conv.x"], T["gp_conv.penalty"] = x.detach(), gp.detach()
    for n, p in zip(names, params):
        T[f"gp_conv.{n}"] = p.detach()
        T[f"gp_conv.grad_{n}"] = p.grad if p.grad is not None else torch.zeros_like(p.detach())


def hooks_case():
    """The module-hook fixture of the Python package (its own file)."""
    H = {}
    nn = torch.nn
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    for k, v in net.state_dict().items():
        H[f"net.{k}"] = v.clone()
    x = rand(5, 3).requires_grad_(True)
    H["x"] = x.detach().clone()
    net[0].register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    net[1].register_forward_hook(lambda m, args, out: out + 1)
    seen = {}

    def tanh_hook(m, gi, go):
        seen["tanh_gi"], seen["tanh_go"] = gi[0], go[0]
        return (gi[0] * 2,)

    def last_hook(m, gi, go):
        seen["last_gi"], seen["last_go"] = gi[0], go[0]

    net[1].register_full_backward_hook(tanh_hook)
    net[2].register_full_backward_hook(last_hook)
    y = net(x)
    (y * torch.tensor([1.0, -2.0], dtype=D)).sum().backward()
    H["y"] = y.detach()
    H.update({k: v.detach() for k, v in seen.items()})
    H["grad_x"] = x.grad
    for k, p in net.named_parameters():
        H[f"grad.{k}"] = p.grad
    out = os.path.join(ROOT, "tinytorch-py", "tests", "fixtures", "hooks.safetensors")
    save_file({k: v.contiguous().clone() for k, v in H.items()}, out)
    print(f"wrote {len(H)} tensors to {out}")


mlp_case()
tanh_sq_case()
elementwise_case()
gp_case()
gp_conv_case()
save_file({k: v.contiguous() for k, v in T.items()}, OUT)
print(f"wrote {len(T)} tensors to {OUT}")
hooks_case()
