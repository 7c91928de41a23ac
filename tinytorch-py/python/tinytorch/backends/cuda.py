"""``torch.backends.cuda``: ``matmul.allow_tf32`` switches TF32 for float32 matmuls on the
GPU (off by default, as in PyTorch); the other precision and attention flags are stored."""

import contextlib

from .. import _tinytorch as _C


def is_built():
    """Whether TinyTorch was compiled with CUDA (the ``cuda`` feature)."""
    return _C._cuda_is_built()


class cuBLASModule:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` reaches the Rust GPU matmul;
    ``allow_fp16_reduced_precision_reduction`` and ``allow_bf16_reduced_precision_reduction``
    are stored (TinyTorch's half-precision matmuls accumulate in float32 either way)."""

    def __init__(self):
        object.__setattr__(self, "_allow_tf32", False)
        object.__setattr__(self, "allow_fp16_reduced_precision_reduction", True)
        object.__setattr__(self, "allow_bf16_reduced_precision_reduction", True)

    @property
    def allow_tf32(self):
        """Whether float32 matmuls on the GPU may use TF32 tensor cores."""
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        if not isinstance(value, bool):  # PyTorch's check: 1 or None is an error
            raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                               f"{type(value).__name__}")
        object.__setattr__(self, "_allow_tf32", value)
        _C._cuda_set_allow_tf32(bool(value))

    def __setattr__(self, name, value):
        if name not in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                        "allow_bf16_reduced_precision_reduction"):
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


matmul = cuBLASModule()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled):
    """Store whether scaled-dot-product attention may use the flash kernel."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled):
    """Store whether scaled-dot-product attention may use the memory-efficient kernel."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled):
    """Store whether scaled-dot-product attention may use the plain (math) path."""
    _sdp["math"] = bool(enabled)


def flash_sdp_enabled():
    """The stored flash-attention flag."""
    return _sdp["flash"]


def mem_efficient_sdp_enabled():
    """The stored memory-efficient-attention flag."""
    return _sdp["mem_efficient"]


def math_sdp_enabled():
    """The stored math-attention flag."""
    return _sdp["math"]


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Within the block, store the given attention-kernel flags (restored after).
    TinyTorch's attention picks its own kernel, so the flags do not change results."""
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.clear()
        _sdp.update(saved)
