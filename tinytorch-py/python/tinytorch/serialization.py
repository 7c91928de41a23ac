"""``torch.serialization``: ``save``/``load`` and the allow-list of ``weights_only`` loads
(``add_safe_globals``, ``get_safe_globals``, ``clear_safe_globals``, ``safe_globals``)."""

from ._serialization import save, load  # noqa: F401
from ._pt_load import SAFE_GLOBALS as _SAFE, global_name as _global_name

DEFAULT_PROTOCOL = 2


def add_safe_globals(safe_globals):
    """Allows the given classes and functions in ``torch.load(weights_only=True)``; an entry
    may be ``(obj, "module.name")`` to allow ``obj`` under that name."""
    for g in safe_globals:
        name, obj = _global_name(g)
        _SAFE[name] = obj


def get_safe_globals():
    """The globals that ``add_safe_globals`` allowed, in order."""
    return list(_SAFE.values())


def clear_safe_globals():
    """Forgets every global ``add_safe_globals`` allowed."""
    _SAFE.clear()


class safe_globals:
    """Context manager: ``safe_globals`` allowed inside the ``with`` block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = dict(_SAFE)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE.clear()
        _SAFE.update(self._saved)
        return False
