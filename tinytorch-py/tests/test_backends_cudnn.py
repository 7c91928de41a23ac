"""torch.backends.cudnn (issue 49): the flags programs set (``benchmark``,
``deterministic``, ``allow_tf32``, ``enabled``) reach the CUDA backend, however the module
was imported, with PyTorch's defaults and its refusal of non-bools; ``flags()`` restores
them; ``is_available()``/``version()`` report the library the backend would load (none on a
machine without cuDNN, with the loader's reason). The convolutions themselves are tested on
a GPU by tinytorch/tests/cuda_cudnn.rs."""

import pytest

import tinytorch as torch
from tinytorch import _tinytorch as _C

NAMES = ("enabled", "benchmark", "deterministic", "allow_tf32")
DEFAULTS = (True, False, False, True)
CUDA_BUILT = torch.backends.cuda.is_built()


@pytest.fixture(autouse=True)
def restore_defaults():
    yield
    for name, value in zip(NAMES, DEFAULTS):
        setattr(torch.backends.cudnn, name, value)


def backend_flags():
    """The flags as the Rust backend holds them (None without CUDA compiled in)."""
    return _C._cudnn_flags()


def test_defaults_are_pytorchs_in_python_and_in_the_backend():
    cudnn = torch.backends.cudnn
    assert tuple(getattr(cudnn, n) for n in NAMES) == DEFAULTS
    assert cudnn.benchmark_limit == 10
    if CUDA_BUILT:
        assert backend_flags() == DEFAULTS
    else:
        assert backend_flags() is None


@pytest.mark.parametrize("name", NAMES)
def test_each_flag_round_trips_to_the_backend(name):
    import tinytorch.backends.cudnn as by_import
    from tinytorch.backends import cudnn as by_from

    assert by_import is by_from is torch.backends.cudnn
    index = NAMES.index(name)
    for module, value in ((by_import, not DEFAULTS[index]), (by_from, DEFAULTS[index]),
                          (torch.backends.cudnn, not DEFAULTS[index])):
        setattr(module, name, value)
        assert getattr(torch.backends.cudnn, name) is value
        assert getattr(by_import, name) is value
        if CUDA_BUILT:
            want = list(DEFAULTS)
            want[index] = value
            assert backend_flags() == tuple(want)


def test_the_pytorch_idiom_sets_the_backend():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.allow_tf32 = False
    assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
    if CUDA_BUILT:
        assert backend_flags() == (True, True, True, False)


def test_a_non_bool_is_refused_as_pytorch_refuses_it():
    cudnn = torch.backends.cudnn
    with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got int"):
        cudnn.benchmark = 1
    with pytest.raises(RuntimeError, match="set_enabled_cudnn expects a bool, but got str"):
        cudnn.enabled = "yes"
    assert cudnn.benchmark is False and cudnn.enabled is True
    if CUDA_BUILT:
        assert backend_flags() == DEFAULTS
    # Other attributes are plain module attributes, as before.
    cudnn.benchmark_limit = 3
    assert cudnn.benchmark_limit == 3
    cudnn.benchmark_limit = 10


def test_an_unknown_flag_name_is_an_error_in_the_binding():
    with pytest.raises(ValueError, match="unknown cuDNN flag"):
        _C._cudnn_set_flag("benchmarks", True)


def test_flags_sets_and_restores():
    cudnn = torch.backends.cudnn
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True, allow_tf32=False):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
            True, True, True, False)
        if CUDA_BUILT:
            assert backend_flags() == (True, True, True, False)
    assert tuple(getattr(cudnn, n) for n in NAMES) == DEFAULTS
    if CUDA_BUILT:
        assert backend_flags() == DEFAULTS
    # PyTorch's defaults of flags() switch cuDNN off within the block.
    with cudnn.flags():
        assert cudnn.enabled is False
    assert cudnn.enabled is True


def test_is_available_and_version_report_the_library():
    cudnn = torch.backends.cudnn
    available = cudnn.is_available()
    assert isinstance(available, bool)
    assert available is (_C._cudnn_unavailable_reason() is None)
    if available:
        assert isinstance(cudnn.version(), int) and 90000 <= cudnn.version() < 100000
    else:
        assert cudnn.version() is None
        why = _C._cudnn_unavailable_reason()
        assert ("libcudnn" in why or "cuDNN" in why or "without CUDA" in why), why


def test_cpu_convolutions_ignore_the_flags():
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    want = torch.nn.functional.conv2d(x, w, padding=1)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.enabled = False
    got = torch.nn.functional.conv2d(x, w, padding=1)
    assert torch.equal(got, want)
