"""``torch.utils``."""

from . import data  # noqa: F401
from . import benchmark  # noqa: F401
from . import checkpoint  # noqa: F401
from . import _pytree  # noqa: F401
