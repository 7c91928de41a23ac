"""In-place ops on autograd-graph tensors, written once for PyTorch
(scripts/fixtures/gen_inplace_fixtures.py) and TinyTorch (test_inplace_autograd.py), so the two sides
cannot drift. Each case is ``fn(torch) -> dict`` of named tensors (outputs and gradients);
``torch`` is either module. Inputs are deterministic (``values``)."""

import math


def values(n, phase):
    """n deterministic numbers in (-0.5, 0.5): 0.5 * sin(0.37 * i + phase)."""
    return [0.5 * math.sin(0.37 * i + phase) for i in range(n)]


def leaf(torch, shape, phase, dtype=None):
    """A leaf that requires grad, of ``shape``, holding ``values(numel, phase)``."""
    dtype = dtype or torch.float32
    n = math.prod(shape)
    return torch.tensor(values(n, phase), dtype=dtype).reshape(*shape).requires_grad_(True)


def weights(n):
    """0.1, 0.2, ... as a loss weighting, so each output element counts differently."""
    return [0.1 * (i + 1) for i in range(n)]


def weighted_sum(torch, t):
    w = torch.tensor(weights(t.numel()), dtype=t.dtype).reshape(*t.shape)
    return (t * w).sum()


def grads(named, loss):
    """``loss.backward()``, then the outputs plus each input's gradient."""
    loss.backward()
    out = {"loss": loss.detach()}
    for name, t in named.items():
        out[f"grad_{name}"] = t.grad
    return out


def mlp_relu_inplace(torch):
    """nn.Sequential(Linear, ReLU(inplace=True), Linear, LeakyReLU(inplace=True)), weights
    copied in under no_grad (optimizer-style in-place writes on parameters)."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(inplace=True), nn.Linear(5, 3),
                          nn.LeakyReLU(0.1, inplace=True))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(values(p.numel(), 0.3 + i)).reshape(*p.shape))
    x = leaf(torch, (6, 4), 1.0)
    out = model(x)
    res = grads({"x": x}, weighted_sum(torch, out))
    for name, p in model.named_parameters():
        res[f"grad_{name}"] = p.grad
    res["out"] = out.detach()
    return res


def functional_inplace_activations(torch):
    """F.relu / elu / hardtanh / relu6 / silu / leaky_relu with inplace=True in a chain."""
    F = torch.nn.functional
    x = leaf(torch, (3, 4), 0.5)
    w = leaf(torch, (4, 4), 2.0)
    h = x @ w * 4
    F.elu(h, 0.7, inplace=True)
    h = h @ w
    F.silu(h, inplace=True)
    h = h * 3
    F.hardtanh(h, -0.4, 0.4, inplace=True)
    h = h @ w * 5
    F.relu6(h, inplace=True)
    h = h - 0.5
    F.relu(h, inplace=True)
    return grads({"x": x, "w": w}, weighted_sum(torch, h))


def residual_iadd(torch):
    """``y += f(y)`` and the other augmented assignments on graph tensors."""
    x = leaf(torch, (3, 4), 0.1)
    w = leaf(torch, (4, 4), 1.3)
    y = x @ w
    y += torch.relu(y) * 0.5   # relu saves its output, mul by a number nothing: allowed
    y *= 2
    y -= 0.25
    y /= 3
    y += x                     # a second path to x
    y.add_(x, alpha=-0.5)
    y.sub_(w[0], alpha=2)      # broadcast operand that requires grad
    y.mul_(w[1])               # mul_ by a tensor that requires grad keeps y's old value
    y.div_(w[2].abs() + 1)
    res = grads({"x": x, "w": w}, weighted_sum(torch, y))
    res["y"] = y.detach()
    return res


def attention_masked_fill(torch):
    """Causal attention with ``scores.masked_fill_(mask, -inf)`` in the forward."""
    q = leaf(torch, (2, 4, 3), 0.2)
    k = leaf(torch, (2, 4, 3), 1.1)
    v = leaf(torch, (2, 4, 3), 2.4)
    scores = q @ k.transpose(-2, -1) / math.sqrt(3)
    mask = torch.ones(4, 4).triu(1).bool()
    scores.masked_fill_(mask, float("-inf"))
    p = scores.softmax(-1)
    out = p @ v
    res = grads({"q": q, "k": k, "v": v}, weighted_sum(torch, out))
    res["out"] = out.detach()
    return res


def chain(torch, dtype=None):
    """A chain of in-place ops on one graph tensor, operands requiring grad included."""
    x = leaf(torch, (2, 5), 0.7, dtype)
    w = leaf(torch, (2, 5), 1.9, dtype)
    # sigmoid_, tanh_, exp_ and relu_ save their result (PyTorch errors when it is then
    # modified), so an out-of-place op follows each.
    y = x * 1.5
    y.add_(w, alpha=0.5).mul_(w).clamp_(-0.1, 0.1).mul_(4).sigmoid_()
    y = y - 0.5
    y.tanh_()
    y = y * 3
    y.exp_()
    y = y * 1
    y.neg_().clamp_min_(-1.2).clamp_max_(-0.9)
    z = y * w
    z.relu_()
    return grads({"x": x, "w": w}, weighted_sum(torch, z + y))


def chain_f64(torch):
    return chain(torch, torch.float64)


def setitem_on_graph_tensor(torch):
    """``y[:, 0] = 0``, ``y[1] = w * 3``, ``y[y > 0.5] = 0``, ``y[[0, 2], [1, 3]] = 5`` on a
    non-leaf (PyTorch's CopySlices)."""
    x = leaf(torch, (3, 4), 0.9)
    w = leaf(torch, (4,), 2.2)
    y = x * 2
    y[:, 0] = 0
    y[1] = w * 3
    y[y > 0.5] = 0
    y[[0, 2], [1, 3]] = 5.0
    y[2, 1:3] *= 4
    out = y * x
    res = grads({"x": x, "w": w}, weighted_sum(torch, out))
    res["y"] = y.detach()
    return res


def fill_zero_copy(torch):
    """zero_/fill_ on views of a graph tensor, copy_ from a tensor that requires grad, and
    writes into a constant buffer through views with values that require grad."""
    x = leaf(torch, (3, 4), 0.4)
    w = leaf(torch, (3, 4), 1.6)
    y = x * 2
    y[0].zero_()
    y[1].fill_(2.0)
    z = x * 1
    z.copy_(w * w)
    buf = torch.zeros(3, 4)
    buf[:, 1].copy_(w[:, 2] * x[:, 0])
    buf.narrow(1, 2, 2).add_(w[:, :2])
    out = y * z + buf * x
    return grads({"x": x, "w": w}, weighted_sum(torch, out))


def detach_data_aliasing(torch):
    """``.data`` writes are not tracked (exp's saved output is then zero, so is the
    gradient); the values written through ``detach()`` show in the tensor."""
    x = leaf(torch, (4,), 0.3)
    y = x.exp()
    y.data.mul_(0.5)
    d = (x * 3).detach()
    d.add_(1)
    res = grads({"x": x}, weighted_sum(torch, y))
    res["y"] = y.detach()
    res["d"] = d
    return res


CASES = {
    "mlp_relu_inplace": mlp_relu_inplace,
    "functional_inplace_activations": functional_inplace_activations,
    "residual_iadd": residual_iadd,
    "attention_masked_fill": attention_masked_fill,
    "chain": chain,
    "chain_f64": chain_f64,
    "setitem_on_graph_tensor": setitem_on_graph_tensor,
    "fill_zero_copy": fill_zero_copy,
    "detach_data_aliasing": detach_data_aliasing,
}


def version_error(torch):
    """The message of modifying a tensor saved for backward (MulBackward0 saved y)."""
    x = leaf(torch, (3,), 0.0)
    y = x * 2
    z = y * y
    y.add_(1)
    try:
        z.sum().backward()
    except RuntimeError as e:
        return str(e)
    return None


def leaf_error(torch):
    """The message of an in-place op on a leaf that requires grad."""
    x = leaf(torch, (3,), 0.0)
    try:
        x.add_(1)
    except RuntimeError as e:
        return str(e)
    return None


def versions(torch):
    """``_version`` after in-place writes through the tensor, a view and ``detach()``."""
    x = leaf(torch, (2, 3), 0.0)
    y = x * 2
    seen = [y._version]
    y.add_(1)
    seen.append(y._version)
    y[0].mul_(2)
    seen.append(y._version)
    y.detach().zero_()
    seen.append(y._version)
    y.data.zero_()
    seen.append(y._version)
    return seen


MESSAGES = {"version_error": version_error, "leaf_error": leaf_error, "versions": versions}
