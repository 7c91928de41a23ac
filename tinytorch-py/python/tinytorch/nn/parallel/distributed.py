"""``torch.nn.parallel.DistributedDataParallel``: one replica of a module per process,
gradients averaged over the default process group during backward (by the Rust gradient
reducer: buckets of ``bucket_cap_mb``, started from post-accumulate-grad hooks as backward
produces them)."""

import contextlib

from ... import _tinytorch as _C
from ..module import Module


class DistributedDataParallel(Module):
    """Wrap ``module``: broadcast rank 0's parameters and buffers, then average gradients in
    every backward. State-dict names gain the ``module.`` prefix, as in PyTorch."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, bucket_cap_mb=25, find_unused_parameters=False,
                 **kwargs):
        super().__init__()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        params = list(module.named_parameters())
        self._reducer = _C._GradientReducer(params, float(bucket_cap_mb))
        _C._dist_broadcast_from_rank_0(params + list(module.named_buffers()))

    def forward(self, *args, **kwargs):
        self._reducer.check_finished()
        if self.training and self.broadcast_buffers:
            _C._dist_broadcast_from_rank_0(list(self.module.named_buffers()))
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: backward accumulates gradients locally; the first backward after it
        averages the accumulated gradients."""
        self._reducer.set_sync(False)
        try:
            yield
        finally:
            self._reducer.set_sync(True)

