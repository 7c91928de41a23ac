"""``torch.utils.data``: datasets (``dataset``), samplers (``sampler``), ``DataLoader``
(``dataloader``) and ``DistributedSampler`` (``distributed``), each a submodule as in
PyTorch. Iteration is Python's job; collating stacks tensors with TinyTorch's ``stack``."""

from . import dataloader, dataset, distributed, sampler  # noqa: F401
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info  # noqa
from .dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from .distributed import DistributedSampler  # noqa: F401
from .sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)
