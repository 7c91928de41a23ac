"""``torch.utils.data.dataloader``: ``DataLoader`` and the collate functions.

Batches are made in this process (the Rust ops that build them run on all cores), so
``num_workers``, ``prefetch_factor``, ``persistent_workers`` and ``pin_memory`` are checked
as PyTorch checks them and change nothing else; ``worker_init_fn`` is called with worker id
0 when an iteration starts (once, with ``persistent_workers``), and during that iteration
``get_worker_info()`` describes this process as the only worker, so code that seeds or shards
per worker sees what one worker would see."""

import math

from ... import _tinytorch as _C
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _batches


def default_convert(data):
    """NumPy arrays to tensors, recursing into tuples, lists and dicts (the conversion
    ``DataLoader`` applies when ``batch_size=None``)."""
    if type(data).__module__ == "numpy" and hasattr(data, "shape"):
        from ... import as_tensor
        return as_tensor(data)
    if isinstance(data, dict):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return type(data)(default_convert(d) for d in data)
    return data


def default_collate(batch):
    """Stack tensors, turn numbers into a tensor, and recurse into tuples, lists and dicts."""
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _C.stack(batch, 0)
    if isinstance(elem, (bool, int, float)):
        return _C.tensor(batch)
    if isinstance(elem, dict):
        return {k: default_collate([b[k] for b in batch]) for k in elem}
    if isinstance(elem, (tuple, list)):
        # PyTorch gives a list for tuple samples too (a namedtuple keeps its type).
        cols = [default_collate(list(s)) for s in zip(*batch)]
        return type(elem)(*cols) if hasattr(elem, "_fields") else cols
    if type(elem).__module__ == "numpy":
        from ... import as_tensor
        return _C.stack([as_tensor(b) for b in batch], 0)
    return batch


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a loading worker: ``id``, ``num_workers``,
    ``seed`` and ``dataset``."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


_worker_info = None


def get_worker_info():
    """The ``WorkerInfo`` of the iteration running now in a loader with ``num_workers > 0``
    (this process is its one worker), else None, as in PyTorch's main process."""
    return _worker_info


def _check_options(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
                   drop_last, timeout, prefetch_factor, persistent_workers):
    """PyTorch's checks of conflicting DataLoader options, with its messages."""
    if isinstance(dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):
            if value not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"{name} option, but got {name}={value}")
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")


class DataLoader:
    """Batches of a dataset, PyTorch's ``DataLoader``: ``batch_size`` (None: samples one by
    one, unbatched), ``shuffle`` (a ``RandomSampler`` drawing from ``generator``),
    ``sampler``, ``batch_sampler``, ``drop_last``, ``collate_fn``; map-style and iterable
    datasets. Samplers are iterated lazily. A ``TensorDataset`` with the default collate is
    batched by indexing its tensors once per batch instead of once per sample. The worker
    options: see the module's documentation."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_options(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
                       drop_last, timeout, prefetch_factor, persistent_workers)
        iterable = isinstance(dataset, IterableDataset)
        shuffle = bool(shuffle) if not iterable else False
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if iterable and batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else \
            prefetch_factor
        self.multiprocessing_context, self.pin_memory_device = multiprocessing_context, \
            pin_memory_device
        self._auto_collation = batch_sampler is not None or (iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if self._auto_collation
                                         else default_convert)
        self._fast = (collate_fn is None and isinstance(dataset, TensorDataset)
                      and batch_sampler is not None)
        self._workers_started = False

    def _iterable_batches(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            yield from it
            return
        yield from _batches(it, self.batch_size, self.drop_last)

    def _start_worker(self):
        """Call ``worker_init_fn(0)`` for a new (or the first persistent) worker."""
        if self.num_workers == 0:
            return None
        seed = int(_C.randint(0, 2 ** 63 - 1, ()).item())
        info = WorkerInfo(0, 1, seed, self.dataset)
        if self.worker_init_fn is not None and not (self.persistent_workers
                                                    and self._workers_started):
            global _worker_info
            saved, _worker_info = _worker_info, info
            try:
                self.worker_init_fn(0)
            finally:
                _worker_info = saved
        self._workers_started = True
        return info

    def __iter__(self):
        global _worker_info
        info = self._start_worker()
        if isinstance(self.dataset, IterableDataset):
            batches = self._iterable_batches()
            fetch = self.collate_fn
        elif self.batch_sampler is not None:
            batches = iter(self.batch_sampler)
            fetch = self._fetch_batch
        else:
            batches = iter(self.sampler)
            fetch = (lambda i: self.collate_fn(self.dataset[i]))
        for item in batches:
            saved, _worker_info = _worker_info, info
            try:
                out = fetch(item)
            finally:
                _worker_info = saved
            yield out

    def _fetch_batch(self, indices):
        if self._fast:
            index = _C.tensor(list(indices), dtype=_C.int64)
            return [t.index_select(0, index) for t in self.dataset.tensors]
        return self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
