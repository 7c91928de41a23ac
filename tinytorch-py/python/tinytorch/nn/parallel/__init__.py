"""``torch.nn.parallel``: ``DistributedDataParallel`` (distributed.py) and ``DataParallel``
(data_parallel.py)."""

from . import data_parallel, distributed  # noqa: F401
from .data_parallel import DataParallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
