"""``torch.onnx``: importable so that programs which export ONNX at the end of training
load; TinyTorch has no ONNX exporter (PyTorch's traces the model through its JIT/Dynamo
graph capture, which TinyTorch does not have)."""


def export(model, args=(), f=None, *pargs, **kwargs):
    """Raises: TinyTorch cannot export ONNX. Save the weights with ``torch.save(
    model.state_dict(), path)`` (PyTorch's ``.pt`` format, which PyTorch loads) and export
    from PyTorch, whose module names and state-dict keys are the same."""
    raise RuntimeError(
        f"torch.onnx.export({type(model).__name__}): TinyTorch has no ONNX exporter (it has "
        "no graph capture to trace the model with); save model.state_dict() with torch.save "
        "and export the same model from PyTorch instead")


def is_in_onnx_export():
    """Whether an ONNX export is running: never, in TinyTorch."""
    return False
