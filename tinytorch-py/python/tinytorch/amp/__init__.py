"""``torch.amp``: mixed precision. ``autocast`` runs matrix products, linear layers and
convolutions in float16/bfloat16 (the Rust library's autocast); ``GradScaler`` scales the
loss so that small half-precision gradients do not flush to zero."""

from .autocast_mode import autocast  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401
