"""``torch.autograd.grad`` and ``torch.autograd.Function`` from Python."""

import pytest

import tinytorch as torch


class Exp(torch.autograd.Function):
    """PyTorch's documentation example: exp with its result saved for backward."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class ScaledMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b * ctx.scale, grad * a * ctx.scale, None


def test_function_forward_and_backward_run_through_the_engine():
    x = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn is not None and y.grad_fn.name() == "ExpBackward0"
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert torch.allclose(x.grad, x.detach().exp() * torch.tensor([1.0, 2.0, 3.0]))


def test_function_with_a_non_tensor_argument_and_needs_input_grad():
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([5.0, 7.0])
    out = ScaledMul.apply(a, b, 0.5)
    out.sum().backward()
    assert a.grad.tolist() == [2.5, 3.5] and b.grad is None
    assert not ScaledMul.apply(b, b, 2.0).requires_grad


def test_function_backward_errors_become_runtime_errors():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x).sum().backward()


def test_autograd_grad_leaves_dot_grad_alone():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    (gx,) = torch.autograd.grad(y, x, retain_graph=True)
    assert gx.tolist() == [3.0, 12.0] and x.grad is None
    h = x * 2
    z = (h * h).sum()
    gh, gx = torch.autograd.grad(z, [h, x])
    assert gh.tolist() == [4.0, 8.0] and gx.tolist() == [8.0, 16.0]
    w = torch.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        torch.autograd.grad((x * 2).sum(), [x, w])
    assert torch.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)[1] is None


class SumAndProduct(torch.autograd.Function):
    """Two outputs and a non-tensor one: ``(a + b, a * b, "tag")``."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a + b, a * b, "tag"

    @staticmethod
    def backward(ctx, g_sum, g_prod, g_tag):
        assert g_tag is None
        a, b = ctx.saved_tensors
        return g_sum + g_prod * b, g_sum + g_prod * a


def test_function_with_several_outputs():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    s, p, tag = SumAndProduct.apply(a, b)
    assert tag == "tag" and s.shape == (2, 2) and p.shape == (2, 2)
    assert s.tolist() == [[1.5, 1.0], [5.0, 4.25]] and p.tolist() == [[0.5, -2.0], [6.0, 1.0]]
    (s * 3 + p * p).sum().backward()
    # d/da = 3 + 2 p b, d/db = 3 + 2 p a (what the same sum of plain ops gives).
    want_a = (3 + 2 * (a * b) * b).detach()
    want_b = (3 + 2 * (a * b) * a).detach()
    assert torch.allclose(a.grad, want_a) and torch.allclose(b.grad, want_b)
    # An unused output's gradient is zeros, as PyTorch materialises it.
    a.grad = b.grad = None
    _, p, _ = SumAndProduct.apply(a, b)
    p.sum().backward()
    assert torch.allclose(a.grad, b.detach()) and torch.allclose(b.grad, a.detach())
