"""torch.utils.data samplers and DataLoader options: SequentialSampler, RandomSampler
(replacement, num_samples, generator), SubsetRandomSampler, WeightedRandomSampler,
BatchSampler, each iterated lazily; DataLoader's sampler=, batch_sampler=, batch_size=None,
IterableDataset, worker options and PyTorch's errors for conflicting options; the data
submodules."""

import itertools

import pytest

import tinytorch as torch
from tinytorch.utils.data import (
    BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler, Sampler,
    SequentialSampler, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
)


class Huge:
    """A data source that says it has 10**10 samples (never listed)."""

    def __len__(self):
        return 10 ** 10


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    perm = list(RandomSampler(range(10), generator=gen(0)))
    assert sorted(perm) == list(range(10))
    assert perm == list(RandomSampler(range(10), generator=gen(0)))
    assert perm != list(RandomSampler(range(10), generator=gen(1)))
    # without replacement and more samples than data: whole permutations, the last cut
    many = list(RandomSampler(range(4), num_samples=10, generator=gen(0)))
    assert len(many) == 10 and sorted(many[:4]) == sorted(many[4:8]) == [0, 1, 2, 3]
    assert len(set(many[8:])) == 2
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=100, generator=gen(0)))
    assert len(drawn) == 100 and set(drawn) == {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=7)) == 7
    torch.manual_seed(5)
    a = list(RandomSampler(range(20)))
    torch.manual_seed(5)
    assert a == list(RandomSampler(range(20)))


def test_samplers_are_lazy():
    first = list(itertools.islice(RandomSampler(Huge(), generator=gen(0), replacement=True), 3))
    assert len(first) == 3 and all(0 <= i < 10 ** 10 for i in first)
    batches = BatchSampler(SequentialSampler(Huge()), batch_size=4, drop_last=False)
    assert next(iter(batches)) == [0, 1, 2, 3]
    assert len(batches) == 10 ** 10 // 4
    loader = DataLoader(Squares(10 ** 10), batch_size=3)
    assert next(iter(loader)).tolist() == [0, 1, 4]
    assert len(loader) == -(-10 ** 10 // 3)


def test_subset_and_weighted_samplers():
    sub = list(SubsetRandomSampler([10, 20, 30, 40], generator=gen(0)))
    assert sorted(sub) == [10, 20, 30, 40]
    w = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000, generator=gen(0))
    drawn = list(w)
    assert len(drawn) == 4000 and 0 not in drawn
    assert abs(drawn.count(2) / 4000 - 0.75) < 0.04
    once = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=gen(2)))
    assert sorted(once) == [0, 1, 2]


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3


def test_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
        list(WeightedRandomSampler([1.0, 1.0], 3, replacement=False))
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_dataloader_sampler_and_batch_sampler():
    ds = TensorDataset(torch.arange(10))
    order = [(b[0].tolist()) for b in DataLoader(ds, batch_size=4,
                                                 sampler=[9, 8, 7, 6, 5, 4, 3, 2, 1, 0])]
    assert order == [[9, 8, 7, 6], [5, 4, 3, 2], [1, 0]]
    bs = BatchSampler(SequentialSampler(ds), 3, drop_last=True)
    loader = DataLoader(ds, batch_sampler=bs)
    assert [b[0].tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(loader) == 3 and loader.batch_size is None
    shuffled = [v for (b,) in DataLoader(ds, batch_size=3, shuffle=True, generator=gen(4))
                for v in b.tolist()]
    assert sorted(shuffled) == list(range(10))
    assert isinstance(DataLoader(ds, shuffle=True).sampler, RandomSampler)
    unbatched = list(DataLoader(Squares(3), batch_size=None))
    assert unbatched == [0, 1, 4]


def test_dataloader_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                        [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == [
        [0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_dataloader_worker_options():
    calls = []

    def init(worker_id):
        info = torch.utils.data.get_worker_info()
        calls.append((worker_id, info.num_workers, info.id))

    ds = Squares(6)
    loader = DataLoader(ds, batch_size=2, num_workers=2, worker_init_fn=init, pin_memory=True,
                        prefetch_factor=4, persistent_workers=True)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16, 25]]
    list(loader)
    assert calls == [(0, 1, 0)]  # persistent: one worker start for both epochs
    transient = DataLoader(ds, batch_size=2, num_workers=1, worker_init_fn=init)
    list(transient)
    list(transient)
    assert len(calls) == 3
    assert torch.utils.data.get_worker_info() is None
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2


def test_dataloader_conflicting_options():
    ds = Squares(4)
    bs = BatchSampler(range(4), 2, False)
    msg = "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler"
    for kwargs in ({"batch_size": 2}, {"shuffle": True}, {"sampler": [0, 1]},
                   {"drop_last": True}):
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, batch_sampler=bs, **kwargs)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)


def test_data_submodules():
    from tinytorch.utils.data.dataloader import DataLoader as DL
    from tinytorch.utils.data.dataset import Dataset as DS
    from tinytorch.utils.data.distributed import DistributedSampler
    from tinytorch.utils.data.sampler import RandomSampler as RS
    import tinytorch.utils.data.sampler as sampler_module

    assert DL is DataLoader and DS is Dataset and RS is RandomSampler
    assert sampler_module.BatchSampler is BatchSampler
    assert DistributedSampler is torch.utils.data.DistributedSampler
    assert torch.utils.data.RandomSampler is RandomSampler
