"""The speed-up column of the comparison scripts (bench_cpu_torch.py, bench_layers_torch.py,
bench_vs_torch.py, bench_py_torch.py): PyTorch time / TinyTorch time over the repeated runs,
with a 95% confidence interval from ``tinytorch.utils.benchmark.speedup`` (TinyTorch's Rust
statistics: the ratio of the two sides' mean times, its interval from the log-ratio's standard
error with Welch's degrees of freedom). The interval needs the Python package
(``pip install ./tinytorch-py``) and at least two runs (``--repeats``); without them the
column shows the ratio of medians alone.
"""
import os
import statistics
import time

try:
    from tinytorch.utils.benchmark import speedup
except ImportError:  # the package is not installed: ratios without intervals
    speedup = None

#: The repository root (this file is scripts/bench/bench_stats.py).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def add_run_args(ap, budget_ms):
    """The options of the scripts that run the TinyTorch binary's suites against PyTorch:
    ``--threads``, ``--repeats``, ``--budget-ms`` (default ``budget_ms``), ``--markdown``
    and ``--exe`` (the binary)."""
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--budget-ms", type=int, default=budget_ms)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--exe", default=os.path.join(ROOT, "target", "release", "tinytorch"))


def median_ms(fn, budget_s, min_runs):
    """The median milliseconds of ``fn()``: two warm-up calls, then at least ``min_runs``
    timed calls, and more while ``budget_s`` seconds last (1000 at most)."""
    fn()
    fn()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget_s and len(times) < 1000):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def compare(pt_times, tt_times):
    """(ratio, interval text) of one row from each side's per-run times."""
    pt_times, tt_times = list(pt_times), list(tt_times)
    if speedup is None or len(pt_times) < 2:
        return statistics.median(pt_times) / statistics.median(tt_times), "-"
    s = speedup(pt_times, tt_times)
    return s.ratio, f"{s.ci95[0]:.2f}-{s.ci95[1]:.2f}"
