"""``torch.nn.parallel.data_parallel.DataParallel`` (one device in TinyTorch)."""

from ... import _tinytorch as _C
from ..module import Module


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: PyTorch splits
    each batch over several GPUs of one process. TinyTorch computes on one device, where
    PyTorch's DataParallel also runs the module as it is (no GPU, or one): ``forward``
    calls ``module``. State-dict names gain the ``module.`` prefix, as in PyTorch."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        if _C._cuda_is_available():
            self.device_ids = [0] if device_ids is None else [
                d if isinstance(d, int) else (_C.device(d).index or 0) for d in device_ids]
            if any(d != 0 for d in self.device_ids):
                raise ValueError(f"DataParallel: TinyTorch uses one GPU (cuda:0); got "
                                 f"device_ids={device_ids}")
            self.output_device = self.device_ids[0] if self.device_ids else None
        else:
            self.device_ids, self.output_device = [], None

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
