"""``torch.cuda.amp``: the older spellings of ``torch.amp`` for the GPU."""

from .. import _tinytorch as _C
from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``: ``torch.amp.GradScaler("cuda",
    ...)`` (disabled, with a warning, where there is no GPU)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(_autocast):
    """``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``:
    ``torch.autocast("cuda", ...)``."""

    def __init__(self, enabled=True, dtype=_C.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
