"""``torch.backends``: the flags programs set for the GPU libraries (``cudnn.benchmark``,
``cuda.matmul.allow_tf32``) and the availability checks of other backends."""

from . import cuda, cudnn, mps  # noqa: F401
