"""``torch.cuda.Event``: a CUDA event on the GPU's stream, for timing GPU work and waiting for
it without synchronising the whole device (``tinytorch-core/src/backend/cuda/event.rs``).

As in PyTorch, the CUDA event is created lazily, at the first ``record()``; an event never
recorded answers ``query()`` with True and ``synchronize()`` at once. TinyTorch queues all
of a GPU's work on one stream, so there is no ``Stream`` class: ``record(stream)`` and
``wait(stream)`` take ``None`` (the current stream) or an object whose ``device`` is a GPU.

Where PyTorch was built without CUDA, constructing an event raises ``RuntimeError: Tried to
instantiate dummy base class Event``; a TinyTorch build without the ``cuda`` feature raises
the same. With CUDA compiled in but no GPU, construction works and ``record()`` raises the
``RuntimeError`` of every call that needs a GPU (as PyTorch's lazy initialisation does)."""

import ctypes

from .. import _tinytorch as _C


def _stream_ordinal(stream, op):
    """The GPU number of ``stream`` (None: the current GPU), checked as ``torch.cuda`` checks
    devices."""
    from . import _ordinal  # the package's device check (a GPU is there, the index is valid)
    device = None if stream is None else getattr(stream, "device", stream)
    return _ordinal(device, op)


class Event:
    """``Event(enable_timing=False, blocking=False, interprocess=False, external=False)``.

    ``record(stream=None)`` marks the work queued on the GPU so far; ``query()`` says whether
    it has finished; ``synchronize()`` waits for it on the host; ``wait(stream=None)`` makes
    later GPU work wait for it; ``start.elapsed_time(end)`` is the GPU time in milliseconds
    between two recorded, finished events created with ``enable_timing=True``."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False, external=False):
        if not _C._cuda_is_built():
            raise RuntimeError(f"Tried to instantiate dummy base class {cls.__name__}")
        if interprocess:
            raise NotImplementedError("torch.cuda.Event: interprocess events (IPC handles) "
                                      "are not supported by TinyTorch")
        self = super().__new__(cls)
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = False
        self.external = bool(external)
        self._event = None  # the native event, made at the first record()
        return self

    @property
    def device(self):
        """The GPU the event was recorded on (None before the first ``record()``)."""
        return None if self._event is None else _C.device("cuda", self._event.ordinal)

    @property
    def cuda_event(self):
        """A number identifying the native event (0 before the first ``record()``)."""
        return 0 if self._event is None else id(self._event)

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.cuda_event)

    def record(self, stream=None):
        """Record the work queued so far on ``stream`` (the current stream when None)."""
        ordinal = _stream_ordinal(stream, "Event.record")
        if self._event is None:
            self._event = _C._CudaEvent(ordinal, self.enable_timing, self.blocking)
        elif self._event.ordinal != ordinal:
            raise RuntimeError(f"Event device cuda:{self._event.ordinal} does not match "
                               f"recording stream's device cuda:{ordinal}.")
        self._event.record()

    def wait(self, stream=None):
        """Make all later work on ``stream`` (the current stream when None) wait for this
        event; nothing to wait for before the first ``record()``."""
        _stream_ordinal(stream, "Event.wait")
        if self._event is not None:
            self._event.wait()

    def query(self):
        """Whether all work captured by the event has finished (True if never recorded)."""
        return True if self._event is None else self._event.query()

    def synchronize(self):
        """Wait on the host until the work captured by the event has finished."""
        if self._event is not None:
            self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and ``end_event``'s; both must have
        been created with ``enable_timing=True``, recorded, and have finished (call
        ``end_event.synchronize()`` first), as in PyTorch."""
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time(): argument 'other' must be torch.cuda.Event, "
                            f"not {type(end_event).__name__}")
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._event is None or end_event._event is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return float(self._event.elapsed_time(end_event._event))

    def ipc_handle(self):
        """IPC handles are not supported by TinyTorch."""
        raise NotImplementedError("torch.cuda.Event.ipc_handle: interprocess events are not "
                                  "supported by TinyTorch")

    def __repr__(self):
        if self._event is not None:
            return f"<torch.cuda.Event {self.cuda_event:#x}>"
        return "<torch.cuda.Event uninitialized>"
