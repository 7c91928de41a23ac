"""The typed stubs (issue 48, item 7): the committed ``.pyi`` files are what
scripts/dev/gen_stubs.py writes from the package as built (so every public name has one), the
package ships ``py.typed``, and ``mypy --strict`` accepts typical user scripts
(tests/typing/) written against them. The scripts also run, so they stay real programs."""

import ast
import importlib
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import tinytorch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PACKAGE = REPO / "tinytorch-py" / "python" / "tinytorch"
GENERATOR = REPO / "scripts" / "dev" / "gen_stubs.py"
SCRIPTS = sorted((HERE / "typing").glob("*.py"))


def test_the_committed_stubs_are_up_to_date():
    out = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True,
                         text=True, cwd=REPO)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").exists()
    # The installed copy too (pip install puts it in site-packages; maturin develop links
    # the source folder).
    assert (Path(tinytorch.__file__).parent / "py.typed").exists()


def _stub_names(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def _ours(obj):
    if isinstance(obj, type(os)):
        return obj.__name__.startswith("tinytorch")
    if isinstance(obj, type) or callable(obj):
        mod = getattr(obj, "__module__", None) or ""
        return mod.startswith(("tinytorch", "_functional")) or mod == "builtins"
    return True  # a value: dtypes, constants


@pytest.mark.parametrize("module", ["tinytorch", "tinytorch.nn", "tinytorch.nn.functional",
                                    "tinytorch.optim", "tinytorch.optim.lr_scheduler",
                                    "tinytorch.utils.data"])
def test_every_public_name_has_a_stub(module):
    mod = importlib.import_module(module)
    rel = Path(*module.split(".")[1:])
    path = PACKAGE / rel / "__init__.pyi"
    if not path.exists():
        path = (PACKAGE / rel).with_suffix(".pyi")
    names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
    stubbed = _stub_names(path)
    # Every public name but what the module merely imported from outside the package
    # (`math`, a typing helper), which the generator leaves to its own stubs.
    missing = [n for n in names if n not in stubbed and _ours(getattr(mod, n))]
    assert not missing, f"{module}: no stub for {missing}"


def test_tensor_methods_have_real_signatures():
    # Types from the Rust signatures: `other: Operand`, `*size`, `-> PyResult<PyTensor>`.
    tensor = (PACKAGE / "__init__.pyi").read_text()
    assert "def add(self, other: _Tensor | builtins.int | builtins.float | builtins.bool" in tensor
    assert "def exp(self) -> _Tensor: ..." in tensor  # stamped out by a macro in ops.rs
    native = (PACKAGE / "_tinytorch.pyi").read_text()
    assert "def zeros(*size: builtins.int | _Sequence[builtins.int], dtype: _dtype | None" in native
    functional = (PACKAGE / "nn" / "functional.pyi").read_text()
    assert "def linear(input: _Tensor, weight: _Tensor, bias: _Tensor | None = ...) -> _Tensor" \
        in functional


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_the_example_scripts_run(script):
    runpy.run_path(str(script), run_name="__main__")


def test_mypy_strict_accepts_typical_user_scripts(tmp_path):
    pytest.importorskip("mypy")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), *map(str, SCRIPTS)],
        capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
