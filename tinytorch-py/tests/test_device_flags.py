"""The device and backend names programs touch at start-up: torch.backends (cuda.matmul,
cudnn, mps), torch.accelerator, torch.cuda's seeding and device queries (as PyTorch without
a GPU where there is none), torch.amp/torch.cuda.amp (GradScaler, autocast), torch.compile
and torch.onnx."""

import warnings

import pytest

import tinytorch as torch

NO_GPU = not torch.cuda.is_available()


def test_backends_flags():
    import tinytorch.backends.cudnn as cudnn

    assert cudnn is torch.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True, False, False, True)
    cudnn.benchmark, cudnn.deterministic = True, True
    assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
    cudnn.benchmark, cudnn.deterministic = False, False
    assert torch.backends.cuda.matmul.allow_tf32 is False
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.backends.cuda.matmul.allow_tf32 is True
    torch.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="Unknown attribute"):
        torch.backends.cuda.matmul.allow_tf64 = True
    assert torch.backends.mps.is_available() is False
    assert torch.backends.mps.is_built() is False
    with torch.backends.cuda.sdp_kernel(enable_flash=False):
        assert torch.backends.cuda.flash_sdp_enabled() is False
    assert torch.backends.cuda.flash_sdp_enabled() is True


def test_accelerator():
    assert torch.accelerator.is_available() is torch.cuda.is_available()
    assert torch.accelerator.device_count() == torch.cuda.device_count()
    acc = torch.accelerator.current_accelerator()
    assert acc is None if not torch.backends.cuda.is_built() else acc.type == "cuda"


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_cuda_without_a_gpu():
    assert torch.cuda.manual_seed_all(0) is None and torch.cuda.manual_seed(0) is None
    assert torch.cuda.device_count() == 0
    torch.cuda.empty_cache()
    err = AssertionError if not torch.backends.cuda.is_built() else RuntimeError
    for fn in (torch.cuda.synchronize, torch.cuda.get_device_name, torch.cuda.current_device,
               torch.cuda.get_device_properties, torch.cuda.get_device_capability):
        with pytest.raises(err, match="CUDA|NVIDIA"):
            fn()


def test_seeding_the_gpu_leaves_the_cpu_stream_alone():
    torch.manual_seed(0)
    a = torch.rand(3).tolist()
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(123)
    torch.cuda.manual_seed(5)
    assert torch.rand(3).tolist() == a


def test_grad_scaler_disabled_passes_through():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    loss = (w ** 2).sum()
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == pytest.approx([0.8, 1.6])
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled() and scaler.state_dict() == {}


def test_grad_scaler_cuda_without_gpu_warns_and_disables():
    if not NO_GPU:
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = torch.amp.GradScaler("cuda")
    assert not scaler.is_enabled()


def test_grad_scaler_on_cpu_scales_unscales_and_skips_inf_steps():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    loss = (w ** 2).sum()
    assert scaler.scale(loss).item() == pytest.approx(8 * 5.0)
    scaler.scale(loss).backward()
    assert w.grad.tolist() == [16.0, 32.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == pytest.approx([0.8, 1.6]) and scaler.get_scale() == 8.0
    # a step whose gradient is inf is skipped and the scale backs off
    opt.zero_grad()
    (w * float("inf")).sum().backward()
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == pytest.approx([0.8, 1.6]) and scaler.get_scale() == 4.0
    for _ in range(2):  # growth_interval clean steps double it
        opt.zero_grad()
        scaler.scale((w ** 2).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 8.0
    sd = scaler.state_dict()
    other = torch.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.get_scale() == 8.0 and other.state_dict() == sd
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)


def test_autocast_runs_linear_in_low_precision():
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(x)
        with torch.autocast("cpu", enabled=False):
            z = lin(x)
    assert y.dtype == torch.bfloat16 and z.dtype == torch.float32
    assert lin(x).dtype == torch.float32

    @torch.amp.autocast("cpu")
    def run(t):
        return lin(t)

    assert run(x).dtype == torch.bfloat16
    if NO_GPU:
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with torch.cuda.amp.autocast():
                assert lin(x).dtype == torch.float32
    # PyTorch: a dtype CPU autocast lacks warns and disables the scope
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of torch.bfloat16"):
        scope = torch.autocast("cpu", dtype=torch.float64)
    with scope:
        assert lin(x).dtype == torch.float32
    with torch.autocast("cuda", dtype=torch.float32, enabled=not NO_GPU):
        assert lin(x).dtype == torch.float32


def test_compile_returns_the_model():
    model = torch.nn.Linear(2, 2)
    assert torch.compile(model) is model
    assert torch.compile(model, mode="max-autotune") is model

    @torch.compile
    def f(x):
        return x + 1

    @torch.compile(fullgraph=True)
    def g(x):
        return x * 2

    assert f(torch.ones(1)).tolist() == [2.0] and g(torch.ones(1)).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torch.compile(model, mode="default", options={})


def test_onnx_export_says_why():
    import tinytorch.onnx

    assert tinytorch.onnx.is_in_onnx_export() is False
    with pytest.raises(RuntimeError, match="no ONNX exporter"):
        torch.onnx.export(torch.nn.Linear(2, 2), (torch.ones(1, 2),), "model.onnx")


def test_no_warnings_on_import_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import tinytorch.backends.cuda  # noqa: F401
        import tinytorch.cuda.amp  # noqa: F401
