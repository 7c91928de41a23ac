"""torch.cuda.Event (python/tinytorch/cuda/streams.py over the Rust CUDA event,
tinytorch-core/src/backend/cuda/event.rs): PyTorch's constructor and errors wherever there is
no GPU (a build without CUDA raises at construction, as PyTorch's CPU-only build; a CUDA build
without a GPU creates the event lazily and raises at record()), and, on a GPU, real events
timing GPU work."""

import inspect
import time

import pytest

import tinytorch as torch

NO_GPU = not torch.cuda.is_available()
BUILT = torch.backends.cuda.is_built()


def test_event_has_pytorchs_signature():
    params = inspect.signature(torch.cuda.Event.__new__).parameters
    assert list(params)[1:] == ["enable_timing", "blocking", "interprocess", "external"]
    assert all(params[p].default is False for p in list(params)[1:])
    for method, args in (("record", ["stream"]), ("wait", ["stream"]), ("query", []),
                         ("synchronize", []), ("elapsed_time", ["end_event"])):
        assert list(inspect.signature(getattr(torch.cuda.Event, method)).parameters)[1:] == args


@pytest.mark.skipif(BUILT, reason="checks a build without CUDA")
def test_event_without_cuda_compiled_in_raises_as_pytorchs_cpu_build():
    # PyTorch's CPU-only build: torch.cuda.Event derives from a dummy base class.
    with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class Event"):
        torch.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class Event"):
        torch.cuda.Event()
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        torch._tinytorch._CudaEvent(0, True, False)


@pytest.mark.skipif(not BUILT or not NO_GPU, reason="checks a CUDA build without a GPU")
def test_event_in_a_cuda_build_without_a_gpu_is_lazy_and_record_raises():
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    assert repr(start) == "<torch.cuda.Event uninitialized>" and start.cuda_event == 0
    assert start.query() is True  # nothing recorded: nothing to wait for
    assert start.synchronize() is None
    with pytest.raises(ValueError, match="Both events must be recorded"):
        start.elapsed_time(end)
    with pytest.raises(RuntimeError, match="NVIDIA|CUDA"):
        start.record()


@pytest.mark.skipif(not BUILT, reason="needs a build with CUDA")
def test_event_argument_errors_before_any_gpu_work():
    plain = torch.cuda.Event()
    with pytest.raises(ValueError, match="enable_timing=True"):
        plain.elapsed_time(torch.cuda.Event(enable_timing=True))
    with pytest.raises(TypeError):
        torch.cuda.Event(enable_timing=True).elapsed_time(1.0)
    with pytest.raises(NotImplementedError, match="interprocess"):
        torch.cuda.Event(interprocess=True)


@pytest.mark.skipif(NO_GPU, reason="no CUDA device")
def test_events_time_gpu_work():
    x = torch.randn(1024, 1024, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t = time.perf_counter()
    start.record()
    for _ in range(20):
        x = torch.tanh(x @ x)
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - t) * 1e3
    assert end.query() and start.query()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and 0.0 < ms <= wall_ms + 1.0
    assert start.device == torch.device("cuda", 0) and repr(start).startswith("<torch.cuda.Event 0x")
    # an event records again (a later mark), and an empty interval is about zero
    start.record()
    end.record()
    end.synchronize()
    assert 0.0 <= start.elapsed_time(end) < 5.0
    x.sum().item()


@pytest.mark.skipif(NO_GPU, reason="no CUDA device")
def test_event_errors_on_a_gpu():
    timed, plain = torch.cuda.Event(enable_timing=True), torch.cuda.Event()
    plain.record()
    timed.record()
    timed.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        timed.elapsed_time(plain)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        timed.elapsed_time(torch.cuda.Event(enable_timing=True))
    plain.wait()  # later work waits for it: nothing to observe on one stream but no error
    blocking = torch.cuda.Event(enable_timing=True, blocking=True)
    blocking.record(torch.device("cuda:0"))
    blocking.synchronize()
    assert blocking.query()
    with pytest.raises((RuntimeError, ValueError)):
        blocking.record("cuda:1")
