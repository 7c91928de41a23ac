"""The Python package on a GPU (skipped where ``torch.cuda.is_available()`` is False, as on CI):
every expression of cases.py and every layer of models.LAYER_CASES run on ``cuda:0`` against
PyTorch's values (the same fixtures as test_ops.py and test_nn.py), two short training runs on
the GPU against the same runs on the CPU, moving tensors and modules between devices, the
memory counters, and the error for mixing devices."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
import tinytorch.optim as optim
import models
from cases import CASES, inputs
from conftest import assert_close, check_op_case, fixture, upstream

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

GPU = "cuda:0"


def to_gpu(env):
    """The inputs on the GPU, float ones as new leaves that require grad."""
    return {k: (v.detach().to(GPU).requires_grad_() if v.is_floating_point() else v.to(GPU))
            for k, v in env.items()}


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_op_on_gpu_matches_pytorch(name, expr):
    check_op_case(name, expr, to_gpu(inputs(torch)), fixture("ops.safetensors"), device=GPU,
                  atol=1e-5, rtol=1e-4)


LAYERS = models.LAYER_CASES(torch, nn)


@pytest.mark.parametrize("name,make,x", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_on_gpu_matches_pytorch(name, make, x):
    ref = fixture("nn.safetensors")
    layer = make()
    with torch.no_grad():
        for i, (k, p) in enumerate(sorted(layer.named_parameters())):
            p.copy_(models.ramp(torch, tuple(p.shape), 0.3 / (1 + i)))
    layer.to(GPU)
    x = x.to(GPU).requires_grad_(x.is_floating_point())
    out = layer(x)
    assert_close(out.cpu(), ref[f"{name}.out"], atol=1e-5, rtol=1e-4, what=f"{name} output")
    (out * upstream(out)).sum().backward()
    if f"{name}.grad.input" in ref:
        assert_close(x.grad.cpu(), ref[f"{name}.grad.input"], atol=1e-5, rtol=1e-4,
                     what=f"{name} dx")
    for k, p in layer.named_parameters():
        got = p.grad if p.grad is not None else torch.zeros_like(p)
        assert got.device == torch.device(GPU), f"{name}: d{k} on {got.device}"
        assert_close(got.cpu(), ref[f"{name}.grad.{k}"], atol=1e-5, rtol=1e-4, what=f"{name} d{k}")
    for k, b in layer.named_buffers():
        assert_close(b.cpu(), ref[f"{name}.buffer.{k}"], atol=1e-6, rtol=1e-5, what=f"{name} {k}")


def run_steps(model, x, y, make_opt, steps, device):
    """Loss after each of ``steps`` optimizer steps of ``model`` on ``device``."""
    model.to(device)
    x, y = x.to(device), y.to(device)
    opt = make_opt(model.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.cpu() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("which", ["mlp_sgd", "cnn_adamw"])
def test_training_on_gpu_follows_the_cpu(which):
    MLP, CNN = models.make_classes(nn, F)
    if which == "mlp_sgd":
        make, x = MLP, models.ramp(torch, (24, 12), 1.0)
        y = torch.tensor([(k * 7) % 3 for k in range(24)])
        make_opt = lambda p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3)  # noqa: E731
    else:
        make, x = CNN, models.ramp(torch, (6, 1, 8, 8), 1.0)
        y = torch.tensor([0, 1, 2, 2, 1, 0])
        make_opt = lambda p: optim.AdamW(p, lr=0.01)  # noqa: E731
    runs = []
    for device in ("cpu", GPU):
        model = make()
        models.set_ramp_weights(torch, model)
        runs.append(run_steps(model, x, y, make_opt, 6, device))
    (cpu_losses, cpu_state), (gpu_losses, gpu_state) = runs
    assert_close(torch.tensor(gpu_losses), torch.tensor(cpu_losses), atol=1e-5, rtol=1e-4,
                 what=f"{which} losses")
    for k, want in cpu_state.items():
        assert_close(gpu_state[k], want, atol=1e-5, rtol=1e-4, what=f"{which} {k}")


def test_moving_between_devices_keeps_values_dtype_and_parameters():
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                  torch.bool):
        t = (torch.arange(-3, 9).reshape(3, 4) % 5).to(dtype)
        g = t.cuda()
        assert g.is_cuda and g.dtype == dtype and g.device == torch.device("cuda", 0)
        assert torch.equal(g.cpu(), t), dtype
    # A non-contiguous view moves as its values.
    t = torch.arange(12.0).reshape(3, 4).t()
    assert torch.equal(t.to(GPU).cpu(), t)
    # Module.to moves in place: the Parameter objects an optimizer holds stay the same.
    model = nn.Linear(4, 2)
    params = list(model.parameters())
    model.to(GPU)
    assert all(a is b for a, b in zip(params, model.parameters()))
    assert all(p.is_cuda for p in model.parameters())


def test_memory_counters_follow_gpu_tensors():
    before = torch.cuda.memory_allocated()
    t = torch.zeros(1024, 1024, device=GPU)
    assert torch.cuda.memory_allocated() - before >= 4 * 1024 * 1024
    assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    del t
    assert torch.cuda.memory_allocated() == before


def test_mixing_devices_is_an_error_naming_both():
    a, b = torch.ones(3), torch.ones(3, device=GPU)
    with pytest.raises(RuntimeError, match=r"(?i)cpu.*cuda|cuda.*cpu"):
        a + b
    with pytest.raises(RuntimeError, match=r"(?i)cpu.*cuda|cuda.*cpu"):
        nn.Linear(3, 2)(b)


def test_device_queries_and_flags():
    """torch.cuda's device queries read the driver; the TF32 flag reaches the matmul."""
    assert torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
    name = torch.cuda.get_device_name()
    props = torch.cuda.get_device_properties(0)
    assert name and props.name == name and props.total_memory > 2 ** 30
    assert torch.cuda.get_device_capability() == (props.major, props.minor)
    assert props.multi_processor_count > 0 and torch.cuda.is_bf16_supported()
    torch.cuda.synchronize()
    a = torch.randn(256, 256, device="cuda")
    exact = (a @ a).cpu()
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        tf32 = (a @ a).cpu()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.allclose(tf32, exact, rtol=1e-2, atol=1e-1)
    assert torch.accelerator.is_available() and torch.accelerator.current_accelerator().type \
        == "cuda"
    x = torch.ones(2, device="cuda")
    assert x.type() == "torch.cuda.FloatTensor" and isinstance(x, torch.cuda.FloatTensor)
    with torch.autocast("cuda"):
        assert nn.Linear(4, 4).cuda()(torch.ones(2, 4, device="cuda")).dtype == torch.float16
