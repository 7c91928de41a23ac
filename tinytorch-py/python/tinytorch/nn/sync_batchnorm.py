"""``nn.SyncBatchNorm``: batch norm whose batch statistics span every process of the default
group. Outside distributed training (no process group, or one process) it is batch norm, as
in PyTorch. Across several processes the Python package has no synchronised kernel yet (the
Rust library's ``SyncBatchNorm`` is not bound), so training there raises instead of
normalising each process's batch alone."""

from .layers import _BatchNorm


class SyncBatchNorm(_BatchNorm):
    """``SyncBatchNorm(num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True, process_group=None)``; any input rank of at least 2 dims."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        from .. import distributed as dist

        if self.training and dist.is_initialized() and dist.get_world_size() > 1:
            raise NotImplementedError(
                "SyncBatchNorm across processes: TinyTorch's Python package has no "
                "synchronised batch norm yet (the Rust SyncBatchNorm is not bound); use "
                "BatchNorm, or SyncBatchNorm in eval mode")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer replaced by a SyncBatchNorm holding the
        same parameters and running statistics (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            for name in ("weight", "bias"):
                if module.affine:
                    setattr(out, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                if module.track_running_stats:
                    setattr(out, name, getattr(module, name))
            out.train(module.training)
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
