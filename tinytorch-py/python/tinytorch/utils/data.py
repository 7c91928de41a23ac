"""``torch.utils.data``: datasets, samplers' worth of shuffling, and ``DataLoader``.
Iteration is Python's job (this file); collating stacks tensors with TinyTorch's ``stack``."""

import itertools
import math

from .. import _tinytorch as _C


class Dataset:
    """Map-style dataset: ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of each tensor."""

    def __init__(self, *tensors):
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        for i, end in enumerate(self.cumulative_sizes):
            if idx < end:
                start = self.cumulative_sizes[i - 1] if i else 0
                return self.datasets[i][idx - start]
        raise IndexError("index out of range")


def _randperm(n, generator=None):
    """A permutation of ``range(n)`` from TinyTorch's generator (argsort of uniforms)."""
    if n == 0:
        return []
    return _C.rand(n, generator=generator, dtype=_C.float64).argsort().tolist()


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping subsets of the given lengths (or fractions)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _randperm(n, generator)
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


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
        from .. import from_numpy
        return _C.stack([from_numpy(b) for b in batch], 0)
    return batch


class DistributedSampler:
    """Rank ``rank``'s share of ``dataset``'s indices (``DistributedSampler``): disjoint across
    ranks, reshuffled every epoch from ``seed + epoch`` (call ``set_epoch``), padded to equal
    length by repeating the start (or cut, with ``drop_last``). ``num_replicas`` and ``rank``
    default to the default process group's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from .. import distributed as dist
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self._sampler = _C._DistributedSampler(num_replicas, rank, shuffle, seed, drop_last)

    def set_epoch(self, epoch):
        self._sampler.set_epoch(epoch)

    def __iter__(self):
        return iter(self._sampler.indices(len(self.dataset)))

    def __len__(self):
        return self._sampler.num_samples(len(self.dataset))


class DataLoader:
    """Batches of a dataset: ``batch_size``, ``shuffle`` (from ``generator``), ``drop_last``,
    ``collate_fn``. ``num_workers`` is accepted and batches are made in this process (the
    Rust ops that build them run on all cores). A ``TensorDataset`` without a custom collate
    is batched by indexing its tensors once per batch instead of once per sample."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, generator=None, prefetch_factor=None,
                 persistent_workers=False):
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.drop_last, self.generator = num_workers, drop_last, generator
        self.collate_fn = collate_fn or default_collate
        self._fast = collate_fn is None and isinstance(dataset, TensorDataset)

    def _indices(self):
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        return _randperm(n, self.generator) if self.shuffle else list(range(n))

    def _batches(self):
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        idx = self._indices()
        for start in range(0, len(idx), self.batch_size):
            chunk = idx[start:start + self.batch_size]
            if len(chunk) < self.batch_size and self.drop_last:
                return
            yield chunk

    def __iter__(self):
        for chunk in self._batches():
            if self._fast:
                index = _C.tensor(chunk, dtype=_C.int64)
                yield [t.index_select(0, index) for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in chunk])

    def __len__(self):
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
