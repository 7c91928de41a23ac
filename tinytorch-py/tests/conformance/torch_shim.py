"""Make ``import torch`` (and ``torch.nn``, ``torch.nn.functional``, ...) resolve to
``tinytorch``, so that other people's model code runs unmodified.

The conformance suite imports packages from PyPI whose sources say ``import torch``. A
finder on ``sys.meta_path`` answers every ``torch`` / ``torch.<sub>`` import with the
already-importable ``tinytorch`` / ``tinytorch.<sub>`` module, so both names refer to one
module object (``torch.nn is tinytorch.nn``) and ``isinstance`` checks such as einops'
backend detection see the same classes. An import of a ``torch.<sub>`` that tinytorch lacks
fails with the ordinary ``ModuleNotFoundError`` naming ``tinytorch.<sub>``, which is the
missing API a failing test reports.

This module also imports single files of a package without running the package's
``__init__`` (``import_submodule``): several packages import, at package level, training
utilities (torchvision transforms, accelerate, PIL) that have nothing to do with the
model definitions the suite runs.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

_ALIAS = "torch"
_TARGET = "tinytorch"


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an existing module instead of executing a file."""

    def __init__(self, module, real_spec):
        self._module = module
        self._real_spec = real_spec

    def create_module(self, spec):
        """The existing module, instead of a new empty one."""
        return self._module

    def exec_module(self, module):
        """Nothing to execute: the module has been imported under its real name."""
        # The import machinery has just overwritten ``__spec__`` with the alias's spec;
        # put the real one back so that tinytorch's own relative imports keep working.
        module.__spec__ = self._real_spec


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.<sub>`` to ``tinytorch`` and ``tinytorch.<sub>``."""

    def find_spec(self, fullname, path=None, target=None):
        """A spec whose loader hands back the imported ``tinytorch`` module; None for names
        outside ``torch``, which the other finders then resolve as usual."""
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        real_name = _TARGET + fullname[len(_ALIAS):]
        module = importlib.import_module(real_name)
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module, module.__spec__),
                                              is_package=is_package)


def install():
    """Puts the ``torch`` -> ``tinytorch`` finder first on ``sys.meta_path`` (once) and
    returns the module that ``import torch`` now yields.

    A real ``torch`` imported earlier in this process would make the suite silently test
    PyTorch against itself, so that is an error."""
    existing = sys.modules.get(_ALIAS)
    if existing is not None and getattr(existing, "__name__", "") != _TARGET:
        raise RuntimeError("a real `torch` is already imported; the conformance suite "
                           "must run without it")
    if not any(isinstance(f, TorchAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchAliasFinder())
    import torch  # noqa: F401  (resolved by the finder above)

    assert sys.modules[_ALIAS].__name__ == _TARGET
    return sys.modules[_ALIAS]


def import_submodule(package, submodule):
    """Imports ``package.submodule`` without executing ``package/__init__.py``.

    The package is registered as a bare namespace over its installed folder, so the
    submodule's own absolute and relative imports of sibling files still work, while the
    package-level imports of unrelated training utilities are never run. Raises
    ``ModuleNotFoundError`` when the package is not installed."""
    if package not in sys.modules:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)
        bare = types.ModuleType(package)
        bare.__path__ = list(spec.submodule_search_locations)
        bare.__file__ = os.path.join(bare.__path__[0], "__init__.py")
        bare.__package__ = package
        # A spec without a loader: `importlib.util.find_spec(package)` still answers, and
        # nothing can execute the package's __init__ through it.
        bare.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
        bare.__spec__.submodule_search_locations = bare.__path__
        sys.modules[package] = bare
    return importlib.import_module(f"{package}.{submodule}")
