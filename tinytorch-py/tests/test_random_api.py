"""torch.multinomial (with and without replacement, 1-D and 2-D, generator=) and
torch.randperm: what they draw, their frequencies, determinism per generator, and
PyTorch's errors."""

import pytest

import tinytorch as torch


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_multinomial_reported_blocker():
    assert torch.multinomial(torch.tensor([[0.0, 1.0]]), 1).tolist() == [[1]]
    assert torch.multinomial(torch.tensor([[0.0, 1.0]]), 2).tolist() == [[1, 0]]
    assert torch.multinomial(torch.tensor([[0.0, 1.0]]), 3, replacement=True).tolist() == [
        [1, 1, 1]]
    assert torch.multinomial(torch.tensor([0.0, 1.0]), 1).tolist() == [1]


def test_multinomial_shapes_dtype_and_generator():
    probs = torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    out = torch.multinomial(probs, 5, True, generator=gen(0))
    assert out.dtype == torch.int64 and tuple(out.shape) == (2, 5)
    assert out.tolist() == torch.multinomial(probs, 5, True, generator=gen(0)).tolist()
    assert 2 not in out[1].tolist()
    assert tuple(probs[0].multinomial(2).shape) == (2,)
    no_rep = torch.multinomial(torch.ones(3, 6), 6, generator=gen(1))
    assert all(sorted(row) == list(range(6)) for row in no_rep.tolist())


def test_multinomial_frequencies():
    p = [0.1, 0.2, 0.3, 0.4]
    draws = torch.multinomial(torch.tensor(p) * 10, 40000, True, generator=gen(3)).tolist()
    for k, q in enumerate(p):
        assert abs(draws.count(k) / 40000 - q) < 0.01
    # Without replacement, the first draw follows the probabilities too.
    firsts = torch.multinomial(torch.tensor(p).expand(20000, 4).contiguous(), 2,
                               generator=gen(4))[:, 0].tolist()
    for k, q in enumerate(p):
        assert abs(firsts.count(k) / 20000 - q) < 0.015


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="element < 0"):
        torch.multinomial(torch.tensor([-1.0, 1.0]), 1)
    with pytest.raises(RuntimeError, match="element < 0"):
        torch.multinomial(torch.tensor([1.0, float("nan")]), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        torch.multinomial(torch.tensor([0.0, 0.0]), 1)
    with pytest.raises(RuntimeError, match="n_sample > prob_dist.size"):
        torch.multinomial(torch.tensor([1.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="n_sample <= 0"):
        torch.multinomial(torch.tensor([1.0, 1.0]), 0)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        torch.multinomial(torch.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="floating-point dtypes"):
        torch.multinomial(torch.tensor([1, 1]), 1)


def test_randperm():
    p = torch.randperm(5, generator=gen(0))
    assert p.dtype == torch.int64 and sorted(p.tolist()) == [0, 1, 2, 3, 4]
    assert p.tolist() == torch.randperm(5, generator=gen(0)).tolist()
    assert torch.randperm(50, generator=gen(0)).tolist() != torch.randperm(
        50, generator=gen(1)).tolist()
    torch.manual_seed(7)
    a = torch.randperm(20).tolist()
    torch.manual_seed(7)
    assert torch.randperm(20).tolist() == a
    assert torch.randperm(3, dtype=torch.float32).dtype == torch.float32
    assert torch.randperm(0).tolist() == []
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.randperm(-1)


def test_multinomial_many_categories():
    # The search runs per draw: memory is rows x draws, not rows x draws x categories.
    p = torch.zeros(100000)
    p[77777] = 1.0
    assert set(torch.multinomial(p, 50000, True).tolist()) == {77777}
    edges = torch.tensor([0.0, 0.0, 1.0, 0.0, 3.0, 0.0, 0.0])
    drawn = torch.multinomial(edges, 20000, True, generator=gen(9)).tolist()
    assert set(drawn) == {2, 4} and abs(drawn.count(4) / 20000 - 0.75) < 0.015
