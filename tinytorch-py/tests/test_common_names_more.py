"""More of the names that three or more of the usage table's repositories use and that no
other test exercised (`python scripts/dev/api_coverage.py`), each checked against its
definition as PyTorch documents it."""

import math

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F


def close(a, b, tol=1e-5):
    """Elementwise |a - b| <= tol * (1 + |b|) over nested lists or numbers."""
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, tol)
    else:
        assert abs(a - b) <= tol * (1 + abs(b)), (a, b)


X = [[0.5, -1.25, 2.0, 3.5], [-0.75, 1.5, -2.5, 0.25], [1.0, -0.5, 0.75, -3.0]]


def test_triu_function_and_method():
    x = torch.tensor(X)
    for k in (-1, 0, 1):
        want = [[v if j - i >= k else 0.0 for j, v in enumerate(row)] for i, row in enumerate(X)]
        assert torch.triu(x, diagonal=k).tolist() == want
        assert x.triu(k).tolist() == want


def test_like_constructors():
    x = torch.tensor(X, dtype=torch.float64)
    full = torch.full_like(x, 3.5)
    assert full.dtype == torch.float64 and full.tolist() == [[3.5] * 4] * 3
    empty = torch.empty_like(x)
    assert empty.shape == x.shape and empty.dtype == torch.float64
    r = torch.rand_like(torch.zeros(1000))
    values = r.tolist()
    assert min(values) >= 0.0 and max(values) < 1.0
    assert abs(sum(values) / len(values) - 0.5) < 0.05


def test_rounding_sign_and_clip():
    x = torch.tensor(X)
    flat = [v for row in X for v in row]
    assert torch.floor(x).flatten().tolist() == [math.floor(v) for v in flat]
    assert x.floor().flatten().tolist() == [math.floor(v) for v in flat]
    assert torch.ceil(x).flatten().tolist() == [math.ceil(v) for v in flat]
    assert x.ceil().flatten().tolist() == [math.ceil(v) for v in flat]
    signs = [(v > 0) - (v < 0) for v in flat]
    assert torch.sign(x).flatten().tolist() == signs
    assert x.sign().flatten().tolist() == signs
    clipped = [min(max(v, -1.0), 1.0) for v in flat]
    assert torch.clip(x, -1.0, 1.0).flatten().tolist() == clipped
    assert x.clip(min=-1.0, max=1.0).flatten().tolist() == clipped


def test_log2_and_expm1():
    x = torch.tensor([0.25, 1.0, 3.0], dtype=torch.float64)
    close(torch.log2(x).tolist(), [math.log2(v) for v in (0.25, 1.0, 3.0)], 1e-12)
    small = torch.tensor([1e-10, -0.5, 2.0], dtype=torch.float64)
    close(torch.expm1(small).tolist(), [math.expm1(v) for v in (1e-10, -0.5, 2.0)], 1e-12)


def test_tensor_layout_queries_and_views():
    x = torch.tensor(X)
    assert x.is_contiguous() and not x.t().is_contiguous()
    assert x.element_size() == 4
    assert torch.zeros(2, dtype=torch.float64).element_size() == 8
    assert torch.zeros(2, dtype=torch.int64).element_size() == 8
    assert x.reshape_as(torch.zeros(4, 3)).tolist() == torch.tensor(X).reshape(4, 3).tolist()
    batch = torch.arange(24.0).reshape(2, 3, 4)
    assert batch.mT.shape == (2, 4, 3)
    assert batch.mT[1].tolist() == batch[1].t().tolist()
    assert torch.get_default_dtype() == torch.float32
    assert x.size() == torch.Size([3, 4]) and torch.Size([3, 4]) == (3, 4)


def test_amin_scatter_and_sub_():
    x = torch.tensor(X)
    assert x.amin(dim=1).tolist() == [min(row) for row in X]
    assert x.amin(dim=0, keepdim=True).tolist() == [[min(col) for col in zip(*X)]]
    index = torch.tensor([[2, 0, 1, 2]])
    src = torch.tensor([[10.0, 20.0, 30.0, 40.0]])
    out = torch.zeros(3, 4).scatter(0, index, src)
    assert out.tolist() == [[0, 20, 0, 0], [0, 0, 30, 0], [10, 0, 0, 40]]
    y = torch.tensor([1.0, 2.0, 3.0])
    y.sub_(torch.tensor([0.5, 0.5, 0.5]), alpha=2)
    assert y.tolist() == [0.0, 1.0, 2.0]


def test_losses_against_their_definitions():
    a = torch.tensor([[0.2, -1.5, 3.0], [0.5, 0.0, -2.25]], dtype=torch.float64)
    b = torch.tensor([[1.0, -1.0, 0.5], [0.25, 2.0, -2.0]], dtype=torch.float64)
    d = [x - y for ra, rb in zip(a.tolist(), b.tolist()) for x, y in zip(ra, rb)]
    l1 = sum(abs(v) for v in d) / len(d)
    close(F.l1_loss(a, b).item(), l1, 1e-12)
    close(nn.L1Loss()(a, b).item(), l1, 1e-12)
    smooth = sum(0.5 * v * v if abs(v) < 1 else abs(v) - 0.5 for v in d) / len(d)
    close(F.smooth_l1_loss(a, b).item(), smooth, 1e-12)

    z = torch.tensor([[0.3, -2.0], [4.0, -0.1]], dtype=torch.float64)
    t = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    pairs = list(zip(z.flatten().tolist(), t.flatten().tolist()))
    bce_logits = sum(max(v, 0) - v * y + math.log1p(math.exp(-abs(v))) for v, y in pairs) / 4
    close(F.binary_cross_entropy_with_logits(z, t).item(), bce_logits, 1e-12)
    p = torch.sigmoid(z)
    probs = [1 / (1 + math.exp(-v)) for v, _ in pairs]
    bce = -sum(y * math.log(q) + (1 - y) * math.log(1 - q) for q, (_, y) in zip(probs, pairs)) / 4
    close(F.binary_cross_entropy(p, t).item(), bce, 1e-10)
    close(nn.BCELoss()(p, t).item(), bce, 1e-10)

    logp = torch.log_softmax(a, dim=1)
    target = torch.tensor([2, 0])
    rows = logp.tolist()
    nll = -(rows[0][2] + rows[1][0]) / 2
    close(F.nll_loss(logp, target).item(), nll, 1e-12)
    close(nn.NLLLoss()(logp, target).item(), nll, 1e-12)


def test_pooling_against_block_means_and_maxima():
    x = torch.arange(32.0).reshape(1, 2, 4, 4)
    v = x.tolist()[0]
    means = [[[sum(v[c][2 * i + a][2 * j + b] for a in (0, 1) for b in (0, 1)) / 4
               for j in range(2)] for i in range(2)] for c in range(2)]
    maxima = [[[max(v[c][2 * i + a][2 * j + b] for a in (0, 1) for b in (0, 1))
                for j in range(2)] for i in range(2)] for c in range(2)]
    assert F.avg_pool2d(x, 2).tolist() == [means]
    assert F.max_pool2d(x, 2).tolist() == [maxima]
    whole = [[[sum(sum(r) for r in v[c]) / 16]] for c in range(2)]
    assert F.adaptive_avg_pool2d(x, 1).tolist() == [whole]


def test_elu_and_rms_norm():
    x = torch.tensor([-2.0, -0.5, 0.0, 1.5], dtype=torch.float64)
    want = [v if v > 0 else math.exp(v) - 1 for v in x.tolist()]
    close(F.elu(x).tolist(), want, 1e-12)
    close(nn.ELU()(x).tolist(), want, 1e-12)
    want = [v if v > 0 else 0.5 * (math.exp(v) - 1) for v in x.tolist()]
    close(F.elu(x, alpha=0.5).tolist(), want, 1e-12)

    y = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.5, -1.0]], dtype=torch.float64)
    w = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    eps = 1e-6
    want = []
    for row in y.tolist():
        scale = 1 / math.sqrt(sum(v * v for v in row) / 3 + eps)
        want.append([v * scale * g for v, g in zip(row, w.tolist())])
    close(F.rms_norm(y, [3], w, eps).tolist(), want, 1e-10)
    layer = nn.RMSNorm(3, eps=eps).double()
    with torch.no_grad():
        layer.weight.copy_(w)
    close(layer(y).tolist(), want, 1e-10)


def test_conv_transpose2d_places_the_kernel_at_each_input():
    x = torch.zeros(1, 1, 2, 2)
    x[0, 0, 1, 0] = 2.0
    w = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    y = F.conv_transpose2d(x, w)
    want = [[0.0, 0.0, 0.0], [2.0, 4.0, 0.0], [6.0, 8.0, 0.0]]
    assert y.tolist() == [[want]]


def test_init_functions_and_gain():
    assert nn.init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    w = torch.empty(400, 500)
    nn.init.ones_(w)
    assert set(w.flatten().tolist()) == {1.0}
    torch.manual_seed(0)
    nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu")
    assert w.std().item() == pytest.approx(math.sqrt(2 / 500), rel=0.03)
    assert abs(w.mean().item()) < 0.003
    nn.init.xavier_normal_(w)
    assert w.std().item() == pytest.approx(math.sqrt(2 / 900), rel=0.03)


def test_register_parameter_and_rmsprop_step():
    m = nn.Module()
    m.register_parameter("scale", nn.Parameter(torch.tensor([1.0, -2.0, 0.5])))
    assert [name for name, _ in m.named_parameters()] == ["scale"]
    opt = torch.optim.RMSprop(m.parameters(), lr=0.1)
    g = [0.5, -1.0, 2.0]
    (m.scale * torch.tensor(g)).sum().backward()
    opt.step()
    # v = (1 - alpha) g^2 with alpha 0.99; p -= lr g / (sqrt(v) + eps).
    want = [p - 0.1 * gi / (math.sqrt(0.01 * gi * gi) + 1e-8)
            for p, gi in zip([1.0, -2.0, 0.5], g)]
    close(m.scale.tolist(), want, 1e-6)


def test_legacy_types_backend_enums_and_nccl_query():
    assert torch.ByteTensor([1, 2]).dtype == torch.uint8
    assert torch.cuda.HalfTensor is not None
    assert torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION is not None
    assert torch.distributed.is_nccl_available() in (True, False)
