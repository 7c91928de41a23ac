"""The speed-up column of the comparison scripts (bench_cpu_torch.py, bench_layers_torch.py,
bench_vs_torch.py, bench_py_torch.py): PyTorch time / TinyTorch time over the repeated runs,
with a 95% confidence interval from ``tinytorch.utils.benchmark.speedup`` (TinyTorch's Rust
statistics: the ratio of the two sides' mean times, its interval from the log-ratio's standard
error with Welch's degrees of freedom). The interval needs the Python package
(``pip install ./tinytorch-py``) and at least two runs (``--repeats``); without them the
column shows the ratio of medians alone.
"""
import statistics

try:
    from tinytorch.utils.benchmark import speedup
except ImportError:  # the package is not installed: ratios without intervals
    speedup = None


def compare(pt_times, tt_times):
    """(ratio, interval text) of one row from each side's per-run times."""
    pt_times, tt_times = list(pt_times), list(tt_times)
    if speedup is None or len(pt_times) < 2:
        return statistics.median(pt_times) / statistics.median(tt_times), "-"
    s = speedup(pt_times, tt_times)
    return s.ratio, f"{s.ci95[0]:.2f}-{s.ci95[1]:.2f}"
