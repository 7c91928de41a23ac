"""``torch.utils.data.sampler``: the orders in which a DataLoader visits a dataset. Each is
iterated lazily (a sampler of ``10**10`` samples yields its first index at once), with
PyTorch's arguments, checks and errors; random orders come from ``generator`` or, without
one, from a generator seeded from the global stream (so ``torch.manual_seed`` repeats them;
the numbers differ from PyTorch's, whose generator differs)."""

from ... import _tinytorch as _C


def _check_num_samples(num_samples):
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
        raise ValueError(f"num_samples should be a positive integer value, but got "
                         f"num_samples={num_samples}")


def _check_replacement(replacement):
    if not isinstance(replacement, bool):
        raise TypeError(f"replacement should be a boolean value, but got "
                        f"replacement={replacement}")


def _generator_or_seeded(generator):
    """``generator``, or a fresh one seeded from the global stream."""
    if generator is not None:
        return generator
    seed = int(_C.randint(0, 2 ** 63 - 1, ()).item())
    return _C.Generator().manual_seed(seed)



def _batches(items, batch_size, drop_last):
    """``items`` in lists of ``batch_size``, the last one shorter unless ``drop_last``."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch

class Sampler:
    """Base class: ``__iter__`` yields dataset indices (or, for a batch sampler, lists of
    them); ``__len__`` is optional."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices of ``data_source``: without replacement, whole permutations one after
    another (the last cut short) until ``num_samples`` (default ``len(data_source)``); with
    replacement, ``num_samples`` uniform draws, 32 at a time."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        _check_replacement(replacement)
        _check_num_samples(self.num_samples)

    @property
    def num_samples(self):
        """The number of indices one pass yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = _generator_or_seeded(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _C.randint(0, n, (32,), generator=generator).tolist()
            rest = self.num_samples % 32
            if rest:
                yield from _C.randint(0, n, (rest,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _C.randperm(n, generator=generator).tolist()
            yield from _C.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in random order, without replacement."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in _C.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices of ``range(len(weights))`` drawn with probabilities
    proportional to ``weights`` (``torch.multinomial``)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_num_samples(num_samples)
        _check_replacement(replacement)
        weights = weights if isinstance(weights, _C.Tensor) else _C.tensor(weights)
        weights = weights.to(_C.float64)
        if weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights, self.num_samples = weights, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        from ..._multinomial import multinomial

        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter unless
    ``drop_last``), built as the sampler yields."""

    def __init__(self, sampler, batch_size, drop_last):
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        yield from _batches(self.sampler, self.batch_size, self.drop_last)

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
