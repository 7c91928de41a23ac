"""``torch.utils.tensorboard.SummaryWriter``: scalars and histograms written as TensorBoard
event files (``_event_file.py`` encodes them; neither TensorFlow nor the tensorboard package
is needed to write them, only to view them)."""

import os
import socket
import time
import warnings
from datetime import datetime

from ... import _tinytorch as _C
from . import _event_file


def _number(v):
    if isinstance(v, _C.Tensor):
        return v.item()
    if hasattr(v, "item"):  # NumPy scalars and 0-d arrays
        return v.item()
    return float(v)


class _FileWriter:
    """One event file, opened on the first write."""

    _counter = 0

    def __init__(self, log_dir, flush_secs, filename_suffix):
        self.log_dir, self.flush_secs = log_dir, flush_secs
        os.makedirs(log_dir, exist_ok=True)
        _FileWriter._counter += 1
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{_FileWriter._counter}{filename_suffix}")
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, "ab")
        self._last_flush = time.time()
        self.add_event(_event_file.event(time.time(), file_version="brain.Event:2"))

    def add_event(self, encoded):
        self._file.write(_event_file.record(encoded))
        if time.time() - self._last_flush >= self.flush_secs:
            self.flush()

    def flush(self):
        self._file.flush()
        self._last_flush = time.time()

    def close(self):
        if not self._file.closed:
            self._file.close()


class SummaryWriter:
    """``SummaryWriter(log_dir=None, comment="", purge_step=None, max_queue=10,
    flush_secs=120, filename_suffix="")``: ``add_scalar``, ``add_scalars``,
    ``add_histogram`` (needs NumPy, as PyTorch's does), ``flush``, ``close``; a context
    manager. ``log_dir`` defaults to ``runs/<date>_<host><comment>``."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step, self.max_queue, self.flush_secs = purge_step, max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self._writer = _FileWriter(self.log_dir, flush_secs, filename_suffix)
        self._children = {}

    def get_logdir(self):
        """The folder the event files go to."""
        return self.log_dir

    def _write(self, writer, values, global_step, walltime):
        wall = time.time() if walltime is None else walltime
        writer.add_event(_event_file.event(wall, None if global_step is None else
                                           int(_number(global_step)), values))

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Record ``scalar_value`` (a number or a one-element tensor) under ``tag``."""
        self._write(self._writer, [_event_file.scalar_value(tag, _number(scalar_value))],
                    global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Record several scalars on one chart: each goes to its own run folder,
        ``<log_dir>/<main_tag>_<tag>``, under tag ``main_tag``."""
        for tag, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, f"{main_tag}_{tag}".replace("/", "_"))
            if folder not in self._children:
                self._children[folder] = _FileWriter(folder, self.flush_secs,
                                                     self.filename_suffix)
            self._write(self._children[folder],
                        [_event_file.scalar_value(main_tag, _number(value))], global_step,
                        walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Record the distribution of ``values`` (a tensor or array): PyTorch's buckets
        (exponential for ``bins="tensorflow"``, else NumPy's ``histogram`` bins), the empty
        ones at both ends left out."""
        import numpy as np

        if isinstance(values, _C.Tensor):
            values = values.detach().cpu().double().numpy()
        values = np.asarray(values, dtype=float).reshape(-1)
        if values.size == 0:
            raise ValueError("The histogram is empty, please file a bug report.")
        if isinstance(bins, str) and bins == "tensorflow":
            bins = _tensorflow_bins()
        counts, limits = np.histogram(values, bins=bins)
        if max_bins is not None and len(counts) > max_bins:
            # merge runs of `step` neighbouring buckets (zero-padded to a whole number)
            step = len(counts) // max_bins
            if len(counts) % step:
                counts = np.pad(counts, [[0, step - len(counts) % step]])
            counts = counts.reshape(-1, step).sum(axis=-1)
            limits = np.concatenate([limits[:-1:step], limits[-1:]])
        # only the buckets from the first to the last non-empty one, and one empty bucket
        # before them (TensorBoard stores right limits only)
        cum = np.cumsum(np.greater(counts, 0))
        start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
        start, end = int(start), int(end) + 1
        counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
        limits = limits[start:end + 1]
        value = _event_file.histogram_value(
            tag, float(values.min()), float(values.max()), float(values.size),
            float(values.sum()), float(values.dot(values)), limits.tolist(),
            counts.astype(float).tolist())
        self._write(self._writer, [value], global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """PyTorch traces the model to draw its graph; TinyTorch has no tracer, so this
        warns and writes nothing."""
        warnings.warn("SummaryWriter.add_graph: TinyTorch cannot trace models; no graph was "
                      "written", stacklevel=2)

    def flush(self):
        """Write buffered events to disk."""
        for w in [self._writer] + list(self._children.values()):
            w.flush()

    def close(self):
        """Flush and close the event files."""
        for w in [self._writer] + list(self._children.values()):
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()


_BINS = None


def _tensorflow_bins():
    """PyTorch's default buckets: ±1e-12 growing by 10% up to 1e20, and 0."""
    global _BINS
    if _BINS is None:
        v, pos = 1e-12, []
        while v < 1e20:
            pos.append(v)
            v *= 1.1
        _BINS = [-x for x in reversed(pos)] + [0] + pos
    return _BINS
