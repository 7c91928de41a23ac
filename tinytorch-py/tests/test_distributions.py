"""torch.distributions: Normal, Uniform, Bernoulli, Categorical, MultivariateNormal against
their closed forms (written out here from the definitions) and, for full covariances,
PyTorch's values (fixtures/py_api.json); shapes, sampling frequencies, gradients through
rsample and log_prob, kl_divergence, and the argument errors."""

import math

import pytest

import tinytorch as torch
from py_api_fixtures import DATA, assert_list_close, filled
from tinytorch.distributions import (
    Bernoulli, Categorical, MultivariateNormal, Normal, Uniform, kl_divergence, register_kl,
)

LOG_2PI = math.log(2 * math.pi)


def close(a, b, tol=1e-5):
    return abs(a - b) <= tol * (1 + abs(b))


# ---- Normal ----------------------------------------------------------------------------

def test_normal_closed_forms_and_shapes():
    mu, s = [0.5, -1.0], [2.0, 0.3]
    d = Normal(torch.tensor(mu), torch.tensor(s))
    assert d.batch_shape == (2,) and d.event_shape == ()
    x = torch.tensor([1.5, -0.7])
    want = [-(xi - m) ** 2 / (2 * si ** 2) - math.log(si) - 0.5 * LOG_2PI
            for xi, m, si in zip([1.5, -0.7], mu, s)]
    assert_list_close(d.log_prob(x), want)
    assert_list_close(d.entropy(), [0.5 + 0.5 * LOG_2PI + math.log(si) for si in s])
    assert_list_close(d.mean, mu)
    assert_list_close(d.variance, [si ** 2 for si in s])
    assert_list_close(d.stddev, s)
    assert_list_close(d.cdf(torch.tensor(mu)), [0.5, 0.5])
    assert tuple(d.sample().shape) == (2,)
    assert tuple(d.sample((4, 3)).shape) == (4, 3, 2)
    assert tuple(Normal(0.0, 1.0).sample((5,)).shape) == (5,)


def test_normal_sampling_moments():
    torch.manual_seed(0)
    x = Normal(torch.tensor([3.0]), torch.tensor([0.5])).sample((20000,))
    assert abs(float(x.mean()) - 3.0) < 4 * 0.5 / math.sqrt(20000)
    assert abs(float(x.std()) - 0.5) < 0.02


def test_normal_gradients_through_rsample_and_log_prob():
    loc = torch.tensor([0.5, -1.0], requires_grad=True)
    scale = torch.tensor([2.0, 0.3], requires_grad=True)
    d = Normal(loc, scale)
    x = d.rsample((100,))
    assert x.requires_grad and not d.sample((3,)).requires_grad
    x.sum().backward()
    eps = (x.detach() - loc.detach()) / scale.detach()
    assert_list_close(loc.grad, [100.0, 100.0])
    assert_list_close(scale.grad, eps.sum(0))
    loc.grad, scale.grad = None, None
    v = torch.tensor([1.5, -0.7])
    Normal(loc, scale).log_prob(v).sum().backward()
    assert_list_close(loc.grad, [(1.5 - 0.5) / 4.0, (-0.7 + 1.0) / 0.09])
    assert_list_close(scale.grad, [(1.0 ** 2) / 8.0 - 0.5, (0.3 ** 2) / 0.027 - 1 / 0.3])


def test_normal_errors():
    with pytest.raises(ValueError, match="scale.*GreaterThan"):
        Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="must be a Tensor"):
        Normal(0.0, 1.0).log_prob(0.5)
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0


# ---- Uniform ---------------------------------------------------------------------------

def test_uniform_closed_forms_and_rsample_gradient():
    low = torch.tensor([0.0, -1.0], requires_grad=True)
    high = torch.tensor([2.0, 3.0], requires_grad=True)
    d = Uniform(low, high)
    assert_list_close(d.log_prob(torch.tensor([1.0, 0.0])), [-math.log(2), -math.log(4)])
    assert_list_close(d.entropy(), [math.log(2), math.log(4)])
    assert_list_close(d.mean, [1.0, 1.0])
    assert_list_close(d.variance, [4 / 12, 16 / 12])
    x = d.rsample((1000,))
    assert bool((x >= low.detach()).all()) and bool((x < high.detach()).all())
    x.sum().backward()
    u = (x.detach() - low.detach()) / (high.detach() - low.detach())
    assert_list_close(low.grad, (1 - u).sum(0), rtol=1e-4)
    assert_list_close(high.grad, u.sum(0), rtol=1e-4)
    outside = Uniform(0.0, 1.0, validate_args=False).log_prob(torch.tensor([1.0, -0.5]))
    assert outside.tolist() == [float("-inf"), float("-inf")]


def test_uniform_errors():
    with pytest.raises(ValueError, match="low >= high"):
        Uniform(torch.tensor([1.0]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="support"):
        Uniform(0.0, 1.0).log_prob(torch.tensor([2.0]))


# ---- Bernoulli -------------------------------------------------------------------------

def test_bernoulli_closed_forms_frequencies_and_gradient():
    p = [0.2, 0.7]
    probs = torch.tensor(p, requires_grad=True)
    d = Bernoulli(probs)
    assert_list_close(d.log_prob(torch.tensor([1.0, 0.0])), [math.log(0.2), math.log(0.3)])
    assert_list_close(d.entropy(), [-(q * math.log(q) + (1 - q) * math.log(1 - q)) for q in p])
    assert_list_close(d.mean, p)
    assert_list_close(d.variance, [q * (1 - q) for q in p])
    assert_list_close(d.mode, [0.0, 1.0])
    d.log_prob(torch.tensor([1.0, 1.0])).sum().backward()
    assert_list_close(probs.grad, [1 / 0.2, 1 / 0.7], rtol=1e-4)
    torch.manual_seed(1)
    s = Bernoulli(torch.tensor(p)).sample((20000,))
    assert tuple(s.shape) == (20000, 2) and bool(((s == 0) | (s == 1)).all())
    freq = s.mean(0).tolist()
    assert all(abs(f - q) < 0.02 for f, q in zip(freq, p))
    by_logits = Bernoulli(logits=torch.tensor([0.0, math.log(3)]))
    assert_list_close(by_logits.probs, [0.5, 0.75])


def test_bernoulli_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Bernoulli()
    with pytest.raises(ValueError, match="probs"):
        Bernoulli(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="support"):
        Bernoulli(torch.tensor([0.5])).log_prob(torch.tensor([0.5]))


# ---- Categorical -----------------------------------------------------------------------

def test_categorical_probs_and_logits():
    raw = [[2.0, 3.0, 5.0], [1.0, 1.0, 8.0]]
    p = [[v / sum(r) for v in r] for r in raw]
    d = Categorical(torch.tensor(raw))
    assert d.batch_shape == (2,) and d.event_shape == ()
    assert_list_close(d.probs, sum(p, []))
    assert_list_close(d.log_prob(torch.tensor([2, 0])), [math.log(p[0][2]), math.log(p[1][0])])
    assert_list_close(d.entropy(), [-sum(q * math.log(q) for q in r) for r in p])
    assert d.mode.tolist() == [2, 2]
    assert all(math.isnan(v) for v in d.mean.tolist())
    logits = torch.tensor([[0.0, 1.0, 2.0]])
    by_logits = Categorical(logits=logits)
    e = [math.exp(v) for v in (0.0, 1.0, 2.0)]
    assert_list_close(by_logits.probs, [v / sum(e) for v in e])
    # log_prob broadcasts values against the batch
    assert tuple(d.log_prob(torch.tensor([[0], [1], [2]])).shape) == (3, 2)


def test_categorical_sampling_frequencies_and_zero_probability():
    torch.manual_seed(2)
    d = Categorical(torch.tensor([0.1, 0.2, 0.7]))
    s = d.sample((30000,))
    assert s.dtype == torch.int64 and tuple(s.shape) == (30000,)
    freq = [float((s == k).float().mean()) for k in range(3)]
    assert all(abs(f - q) < 0.015 for f, q in zip(freq, [0.1, 0.2, 0.7]))
    assert Categorical(torch.tensor([[0.0, 1.0]])).sample((50,)).eq(1).all()
    assert tuple(Categorical(torch.ones(4, 3)).sample((5, 2)).shape) == (5, 2, 4)


def test_categorical_logits_gradient():
    logits = torch.tensor([0.3, -0.2, 1.1], requires_grad=True)
    Categorical(logits=logits).log_prob(torch.tensor(2)).backward()
    e = [math.exp(v) for v in (0.3, -0.2, 1.1)]
    p = [v / sum(e) for v in e]
    assert_list_close(logits.grad, [-p[0], -p[1], 1 - p[2]])


def test_categorical_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Categorical(torch.ones(3), torch.ones(3))
    with pytest.raises(ValueError, match="probs"):
        Categorical(torch.tensor([-1.0, 2.0]))
    with pytest.raises(ValueError, match="support"):
        Categorical(torch.ones(3)).log_prob(torch.tensor([3]))


# ---- MultivariateNormal ----------------------------------------------------------------

def spd(n, phase, batch=()):
    a = filled(batch + (n, n), phase, torch.float64)
    return a @ a.transpose(-1, -2) + 0.5 * torch.eye(n, dtype=torch.float64)


def test_mvn_with_diagonal_scale_is_a_product_of_normals():
    loc = torch.tensor([0.5, -1.0, 2.0])
    s = torch.tensor([2.0, 0.3, 1.0])
    mvn = MultivariateNormal(loc, scale_tril=s.unsqueeze(-1) * torch.eye(3))
    ind = Normal(loc, s)
    x = torch.tensor([[1.5, -0.7, 0.0], [0.0, 0.0, 0.0]])
    assert mvn.batch_shape == () and mvn.event_shape == (3,)
    assert_list_close(mvn.log_prob(x), ind.log_prob(x).sum(-1))
    assert_list_close(mvn.entropy(), [float(ind.entropy().sum())])
    assert_list_close(mvn.variance, s ** 2)
    assert tuple(mvn.sample((4,)).shape) == (4, 3)


def test_mvn_full_covariance_matches_pytorch():
    want = DATA["mvn"]
    loc = filled((3,), 0.5, torch.float64)
    cov = spd(3, 1.3)
    value = filled((2, 3), 2.1, torch.float64)
    p = MultivariateNormal(loc, covariance_matrix=cov)
    q = MultivariateNormal(filled((2, 3), 0.9, torch.float64),
                           covariance_matrix=spd(3, 2.4, (2,)))
    prec = MultivariateNormal(loc, precision_matrix=cov)
    assert q.batch_shape == (2,)
    for got, key in [(p.log_prob(value), "log_prob"), (p.entropy(), "entropy"),
                     (p.variance, "variance"), (p.scale_tril, "scale_tril"),
                     (kl_divergence(p, q), "kl_pq"), (kl_divergence(q, p), "kl_qp"),
                     (q.log_prob(value), "q_log_prob"),
                     (prec.scale_tril, "precision_scale_tril"),
                     (prec.log_prob(value), "precision_log_prob")]:
        assert_list_close(got, want[key], atol=1e-10, rtol=1e-9, what=key)
    assert torch.allclose(p.covariance_matrix, cov)
    assert torch.allclose(p.precision_matrix @ cov, torch.eye(3, dtype=torch.float64))
    assert abs(float(kl_divergence(p, p))) < 1e-12


def test_mvn_sampling_and_rsample_gradient():
    torch.manual_seed(3)
    cov = spd(2, 0.7)
    loc = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    d = MultivariateNormal(loc, covariance_matrix=cov)
    x = d.rsample((20000,))
    x.sum().backward()
    assert loc.grad.tolist() == [20000.0, 20000.0]
    centred = x.detach() - x.detach().mean(0)
    emp = centred.t() @ centred / 20000
    assert float((emp - cov).abs().max()) < 0.05 * float(cov.abs().max())
    tril = torch.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    MultivariateNormal(torch.zeros(2), scale_tril=tril).log_prob(torch.ones(2)).backward()
    assert tril.grad is not None and float(tril.grad.abs().sum()) > 0


def test_mvn_errors():
    with pytest.raises(ValueError, match="Exactly one"):
        MultivariateNormal(torch.zeros(2))
    with pytest.raises(ValueError, match="Exactly one"):
        MultivariateNormal(torch.zeros(2), torch.eye(2), scale_tril=torch.eye(2))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        MultivariateNormal(torch.tensor(0.0), torch.eye(1))
    with pytest.raises(RuntimeError, match="not positive-definite"):
        MultivariateNormal(torch.zeros(2), covariance_matrix=torch.tensor([[1.0, 2.0],
                                                                           [2.0, 1.0]]))
    with pytest.raises(ValueError, match="LowerCholesky"):
        MultivariateNormal(torch.zeros(2), scale_tril=torch.tensor([[1.0, 1.0], [0.0, 1.0]]))


# ---- kl_divergence ---------------------------------------------------------------------

def test_kl_closed_forms():
    p, q = Normal(torch.tensor([0.0]), torch.tensor([1.0])), Normal(torch.tensor([1.0]),
                                                                   torch.tensor([2.0]))
    assert_list_close(kl_divergence(p, q), [math.log(2) + (1 + 1) / 8 - 0.5])
    a, b = [0.2, 0.3, 0.5], [0.4, 0.4, 0.2]
    assert_list_close(kl_divergence(Categorical(torch.tensor(a)), Categorical(torch.tensor(b))),
                      [sum(x * math.log(x / y) for x, y in zip(a, b))])
    kl_b = kl_divergence(Bernoulli(torch.tensor([0.3])), Bernoulli(torch.tensor([0.6])))
    assert_list_close(kl_b, [0.3 * math.log(0.3 / 0.6) + 0.7 * math.log(0.7 / 0.4)])
    kl_u = kl_divergence(Uniform(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])),
                         Uniform(torch.tensor([-1.0, 0.5]), torch.tensor([3.0, 2.0])))
    assert kl_u.tolist()[0] == pytest.approx(math.log(4)) and kl_u.tolist()[1] == float("inf")
    assert kl_divergence(Categorical(torch.tensor([0.5, 0.5])),
                         Categorical(torch.tensor([1.0, 0.0]))).item() == float("inf")


def test_kl_gradient_and_registry():
    loc = torch.tensor([0.3], requires_grad=True)
    kl_divergence(Normal(loc, torch.tensor([1.0])), Normal(0.0, 1.0)).sum().backward()
    assert_list_close(loc.grad, [0.3])
    with pytest.raises(NotImplementedError, match="Normal.*Uniform"):
        kl_divergence(Normal(0.0, 1.0), Uniform(0.0, 1.0))

    class MyNormal(Normal):
        pass

    assert_list_close(kl_divergence(MyNormal(0.0, 1.0), Normal(0.0, 1.0)), [0.0])

    @register_kl(MyNormal, Uniform)
    def _kl(p, q):
        return torch.tensor(7.0)

    assert kl_divergence(MyNormal(0.0, 1.0), Uniform(0.0, 1.0)).item() == 7.0
    assert torch.distributions.kl.kl_divergence is kl_divergence
