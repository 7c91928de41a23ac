"""``torch.utils.benchmark``: time a statement and compare two variants with confidence.

``Timer(stmt, setup="", globals=None)`` as in PyTorch (``stmt`` may also be a callable);
``timeit(number)`` and ``blocked_autorange(min_run_time)`` return a :class:`Measurement`
with PyTorch's ``mean``/``median``/``times`` plus ``std`` and ``ci95``, a 95% confidence
interval of the mean from Student's t. ``speedup(baseline, candidate)`` gives the ratio of
mean times with its own 95% interval ("3.40x faster (95% CI 3.21-3.60)"). The statistics
are TinyTorch's Rust ones (``tinytorch::benchmark``), the same the ``tinytorch bench``
suites print.
"""

import time

from .. import _tinytorch as _C

__all__ = ["Timer", "Measurement", "Speedup", "speedup"]


class Measurement:
    """Timings of one statement, in seconds per run."""

    def __init__(self, times, label=""):
        self.times = [float(t) for t in times]
        self.label = label
        n, mean, std, median, low, high = _C._timing_summary(self.times)
        self.number_of_runs = n
        self.mean, self.std, self.median = mean, std, median
        self.ci95 = (low, high)

    def __repr__(self):
        label = f"{self.label}: " if self.label else ""
        return (f"<Measurement {label}{self.mean * 1e6:.2f} us ± {self.std * 1e6:.2f} "
                f"(median {self.median * 1e6:.2f} us, 95% CI {self.ci95[0] * 1e6:.2f}-"
                f"{self.ci95[1] * 1e6:.2f}, {self.number_of_runs} runs)>")


class Speedup:
    """``baseline mean / candidate mean`` (above 1: the candidate is faster) and its 95% CI."""

    def __init__(self, ratio, low, high):
        self.ratio = ratio
        self.ci95 = (low, high)

    def __repr__(self):
        word = "faster" if self.ratio >= 1 else "slower"
        return f"{self.ratio:.2f}x {word} (95% CI {self.ci95[0]:.2f}-{self.ci95[1]:.2f})"


def speedup(baseline, candidate):
    """How much faster ``candidate`` is than ``baseline``: two Measurements or two lists of
    times."""
    times = lambda m: m.times if isinstance(m, Measurement) else list(m)  # noqa: E731
    return Speedup(*_C._timing_speedup(times(baseline), times(candidate)))


class Timer:
    """Time ``stmt`` (a string run with ``globals``, after ``setup``; or a callable)."""

    def __init__(self, stmt="pass", setup="pass", globals=None, label=""):
        self.label = label
        if callable(stmt):
            if setup not in ("pass", ""):
                raise ValueError("setup applies to a string stmt only")
            self._run = stmt
        else:
            env = dict(globals or {})
            exec(compile(setup, "<setup>", "exec"), env)
            code = compile(stmt, "<stmt>", "exec")
            self._run = lambda: exec(code, env)

    def timeit(self, number=1000):
        """``number`` runs after one warm-up run, each timed on its own."""
        self._run()
        times = []
        for _ in range(max(1, number)):
            start = time.perf_counter()
            self._run()
            times.append(time.perf_counter() - start)
        return Measurement(times, self.label)

    def blocked_autorange(self, min_run_time=0.2):
        """Blocks of runs, each block long enough to time well (at least 1 ms), until
        ``min_run_time`` seconds are spent; one time per block, divided by its runs."""
        self._run()
        per_block = 1
        while True:
            start = time.perf_counter()
            for _ in range(per_block):
                self._run()
            if time.perf_counter() - start >= 1e-3 or per_block >= 1 << 20:
                break
            per_block *= 2
        times, spent = [], 0.0
        while spent < min_run_time or len(times) < 3:
            start = time.perf_counter()
            for _ in range(per_block):
                self._run()
            took = time.perf_counter() - start
            spent += took
            times.append(took / per_block)
        return Measurement(times, self.label)
