"""``torch.utils.data.distributed.DistributedSampler`` over the Rust sampler."""

from ... import _tinytorch as _C
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Rank ``rank``'s share of ``dataset``'s indices (``DistributedSampler``): disjoint across
    ranks, reshuffled every epoch from ``seed + epoch`` (call ``set_epoch``), padded to equal
    length by repeating the start (or cut, with ``drop_last``). ``num_replicas`` and ``rank``
    default to the default process group's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from ... import distributed as dist
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self._sampler = _C._DistributedSampler(num_replicas, rank, shuffle, seed, drop_last)

    def set_epoch(self, epoch):
        """Reshuffle from ``seed + epoch`` (the same on every rank)."""
        self._sampler.set_epoch(epoch)

    def __iter__(self):
        return iter(self._sampler.indices(len(self.dataset)))

    def __len__(self):
        return self._sampler.num_samples(len(self.dataset))
