"""tinytorch.utils.benchmark: the statistics against hand-computed values and Python's
``statistics``, and the Timer."""

import math
import statistics

import pytest

from tinytorch.utils import benchmark


def test_a_measurement_summarises_like_the_t_tables():
    times = [10.0, 12.0, 11.0, 13.0, 14.0]
    m = benchmark.Measurement(times)
    assert m.mean == statistics.fmean(times) and m.median == statistics.median(times)
    assert math.isclose(m.std, statistics.stdev(times))
    half = 2.7764 * statistics.stdev(times) / math.sqrt(5)  # t(0.975, 4) = 2.7764
    assert m.ci95[0] == pytest.approx(12 - half, abs=2e-4)
    assert m.ci95[1] == pytest.approx(12 + half, abs=2e-4)
    assert "95% CI" in repr(m)


def test_speedup_has_an_interval_around_the_ratio_of_means():
    slow, fast = [2.0, 2.2, 1.8, 2.1, 1.9], [1.0, 1.1, 0.9, 1.05, 0.95]
    s = benchmark.speedup(slow, fast)
    assert s.ratio == pytest.approx(2.0)
    assert s.ci95[0] < 2.0 < s.ci95[1] and s.ci95[1] < 2.5
    back = benchmark.speedup(fast, slow)  # swapping the sides inverts the interval
    assert back.ratio == pytest.approx(0.5)
    assert back.ci95[0] == pytest.approx(1 / s.ci95[1]) and "slower" in repr(back)
    exact = benchmark.speedup([3.0, 3.0], [1.0, 1.0])
    assert exact.ci95 == (3.0, 3.0) and "3.00x faster" in repr(exact)
    with pytest.raises(ValueError, match="no timings"):
        benchmark.speedup([], [1.0])
    with pytest.raises(ValueError, match="positive"):
        benchmark.Measurement([1.0, -2.0])


def test_timer_runs_a_statement_or_a_callable():
    calls = []
    m = benchmark.Timer(lambda: calls.append(1)).timeit(20)
    assert m.number_of_runs == 20 and len(calls) == 21  # one warm-up
    m = benchmark.Timer("x.append(1)", setup="x = []", globals={}).blocked_autorange(0.01)
    assert m.number_of_runs >= 3 and m.mean > 0
    with pytest.raises(ValueError, match="string stmt"):
        benchmark.Timer(lambda: None, setup="x = 1")
