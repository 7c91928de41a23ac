"""``torch.nn.attention``: ``sdpa_kernel`` chooses which backends scaled-dot-product
attention may use. TinyTorch's attention picks its own kernel (the same results either
way), so the choice is checked and recorded, and the previous one restored on exit."""

import contextlib
import enum


class SDPBackend(enum.IntEnum):
    """The attention backends PyTorch names."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_allowed = list(SDPBackend)[1:]


def _current_backends():
    """The backends the innermost ``sdpa_kernel`` allows (all outside one)."""
    return list(_allowed)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """``with sdpa_kernel(SDPBackend.MATH)`` or a list of backends."""
    global _allowed
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    if not all(isinstance(b, SDPBackend) for b in chosen):
        raise TypeError(f"sdpa_kernel: backends must be SDPBackend values, got {backends!r}")
    saved, _allowed = _allowed, chosen
    try:
        yield
    finally:
        _allowed = saved
