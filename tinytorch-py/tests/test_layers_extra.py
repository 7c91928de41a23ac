"""Layers and helpers composed in Python, against their definitions: ConvTranspose1d (a
direct sum over input positions), InstanceNorm1d/2d (per-sample statistics, running
averages), BatchNorm3d, nn.init.orthogonal_, nn.utils.weight_norm, and
torch.multiprocessing.spawn."""

import math
import os

import pytest

import tinytorch as torch
import tinytorch.nn as nn
from tinytorch.nn import functional as F


def conv_transpose1d_reference(x, w, b, stride, padding, output_padding, dilation):
    """y[n, o, t] = b[o] + sum over i, j, k with t = j*stride - padding + k*dilation of
    x[n, i, j] w[i, o, k] (one group)."""
    n, cin, length = x.shape
    _, cout, k = w.shape
    out_len = (length - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
    xs, ws = x.tolist(), w.tolist()
    y = [[[b[o] if b else 0.0 for _ in range(out_len)] for o in range(cout)] for _ in range(n)]
    for s in range(n):
        for i in range(cin):
            for j in range(length):
                for o in range(cout):
                    for kk in range(k):
                        t = j * stride - padding + kk * dilation
                        if 0 <= t < out_len:
                            y[s][o][t] += xs[s][i][j] * ws[i][o][kk]
    return y


@pytest.mark.parametrize("stride,padding,output_padding,dilation", [(1, 0, 0, 1), (2, 1, 1, 1),
                                                                    (3, 2, 0, 2)])
def test_conv_transpose1d(stride, padding, output_padding, dilation):
    torch.manual_seed(0)
    conv = nn.ConvTranspose1d(3, 2, 3, stride, padding, output_padding, dilation=dilation)
    assert tuple(conv.weight.shape) == (3, 2, 3) and tuple(conv.bias.shape) == (2,)
    x = torch.randn(2, 3, 5)
    want = conv_transpose1d_reference(x, conv.weight.detach(), conv.bias.tolist(), stride,
                                      padding, output_padding, dilation)
    got = conv(x)
    flat_want = [v for s in want for o in s for v in o]
    assert got.reshape(-1).tolist() == pytest.approx(flat_want, abs=1e-5)
    assert tuple(conv(x[0]).shape) == tuple(got.shape[1:])
    got.sum().backward()
    assert conv.weight.grad is not None and tuple(conv.weight.grad.shape) == (3, 2, 3)


def test_instance_norm():
    x = torch.tensor([[[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 4.0]]])  # (1, 2, 4)
    out = nn.InstanceNorm1d(2)(x)
    for c, row in enumerate(x[0].tolist()):
        m = sum(row) / 4
        var = sum((v - m) ** 2 for v in row) / 4
        want = [(v - m) / math.sqrt(var + 1e-5) for v in row]
        assert out[0, c].tolist() == pytest.approx(want, abs=1e-5)
    norm = nn.InstanceNorm2d(2, affine=True, track_running_stats=True)
    assert [n for n, _ in norm.named_parameters()] == ["weight", "bias"]
    y = torch.randn(3, 2, 4, 4)
    norm(y)
    means = y.mean((2, 3)).mean(0)
    assert norm.running_mean.tolist() == pytest.approx((0.1 * means).tolist(), abs=1e-6)
    norm.eval()
    z = norm(y)
    want = (y - norm.running_mean.reshape(1, 2, 1, 1)) / (norm.running_var.reshape(1, 2, 1, 1)
                                                          + 1e-5).sqrt()
    assert torch.allclose(z, want, atol=1e-5)
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(2)(torch.ones(2, 2))
    bn3 = nn.BatchNorm3d(2)
    v = torch.randn(2, 2, 2, 2, 2)
    assert torch.allclose(bn3(v), nn.BatchNorm2d(2)(v.reshape(2, 2, 4, 2)).reshape(2, 2, 2, 2, 2),
                          atol=1e-5)
    with pytest.raises(ValueError, match="expected 5D input"):
        bn3(torch.ones(2, 2, 2, 2))


def test_orthogonal_init():
    torch.manual_seed(1)
    w = torch.empty(6, 4)
    assert nn.init.orthogonal_(w, gain=2.0) is w
    assert torch.allclose(w.t() @ w, 4 * torch.eye(4), atol=1e-5)
    wide = nn.init.orthogonal_(torch.empty(3, 2, 4))
    flat = wide.reshape(3, 8)
    assert torch.allclose(flat @ flat.t(), torch.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.orthogonal_(torch.empty(3))


def test_weight_norm():
    torch.manual_seed(2)
    lin = nn.Linear(3, 2)
    w0 = lin.weight.detach().clone()
    x = torch.randn(4, 3)
    before = lin(x)
    nn.utils.weight_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert tuple(lin.weight_g.shape) == (2, 1) and torch.allclose(lin.weight_v, w0)
    assert torch.allclose(lin(x), before, atol=1e-6)
    with torch.no_grad():
        lin.weight_g.mul_(2)
    assert torch.allclose(lin(x) - lin.bias, 2 * (before - lin.bias), atol=1e-5)
    lin(x).sum().backward()
    assert lin.weight_g.grad is not None and lin.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        nn.utils.weight_norm(lin)
    nn.utils.remove_weight_norm(lin)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert torch.allclose(lin.weight, 2 * w0, atol=1e-5)
    conv = nn.utils.weight_norm(nn.Conv1d(2, 3, 2), dim=None)
    assert conv.weight_g.dim() == 0


def test_spawn(tmp_path):
    import spawn_target

    torch.multiprocessing.spawn(spawn_target.write_rank, args=(str(tmp_path),), nprocs=2)
    assert sorted(os.listdir(tmp_path)) == ["0.txt", "1.txt"]
    assert (tmp_path / "1.txt").read_text() == "10"
    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="rank one fails"):
        torch.multiprocessing.spawn(spawn_target.fail_on_one, nprocs=2)
    assert torch.multiprocessing.cpu_count() >= 1


GRID_CASES = [("bilinear", "zeros", False), ("bilinear", "zeros", True),
              ("bilinear", "border", False), ("nearest", "zeros", False),
              ("nearest", "border", True)]


@pytest.mark.parametrize("mode,padding,align", GRID_CASES)
def test_grid_sample_matches_pytorch(mode, padding, align):
    from py_api_fixtures import DATA, assert_list_close, filled, upstream

    want = DATA["grid"][f"{mode}_{padding}_{align}"]
    x = filled((2, 3, 4, 5), 0.3, torch.float64).requires_grad_(True)
    g = (filled((2, 3, 4, 2), 1.1, torch.float64) * 2.6).requires_grad_(True)
    y = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    assert tuple(y.shape) == (2, 3, 3, 4)
    assert_list_close(y, want["out"], atol=1e-12, what="out")
    (y * upstream(y)).sum().backward()
    assert_list_close(x.grad, want["grad_input"], atol=1e-12, what="grad input")
    if mode == "bilinear":
        assert_list_close(g.grad, want["grad_grid"], atol=1e-10, what="grad grid")


def test_affine_grid_and_grid_errors():
    from py_api_fixtures import DATA, assert_list_close, filled

    theta = filled((2, 2, 3), 2.0, torch.float64)
    for align in (False, True):
        assert_list_close(F.affine_grid(theta, (2, 3, 4, 5), align_corners=align),
                          DATA["grid"][f"affine_{align}"], atol=1e-12)
    # the identity map samples every pixel at its centre
    img = torch.arange(12.0).reshape(1, 1, 3, 4)
    eye = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    grid = F.affine_grid(eye, (1, 1, 3, 4), align_corners=False)
    assert torch.allclose(F.grid_sample(img, grid, align_corners=False), img, atol=1e-6)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(img, grid)
    with pytest.raises(NotImplementedError, match="reflection"):
        F.grid_sample(img, grid, padding_mode="reflection", align_corners=False)


def test_spectral_norm():
    torch.manual_seed(3)
    lin = nn.Linear(5, 4)
    w0 = lin.weight.detach().clone()
    nn.utils.spectral_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    x = torch.randn(2, 5)
    for _ in range(50):  # power iterations converge to the top singular vectors
        lin(x)
    # the top singular value of w0, by power iteration on w0^T w0
    v = torch.ones(5)
    for _ in range(500):
        v = w0.t() @ (w0 @ v)
        v = v / v.norm()
    sigma = (w0 @ v).norm().item()
    assert torch.allclose(lin.weight, w0 / sigma, atol=1e-4)
    lin.eval()
    u_before = lin.weight_u.clone()
    lin(x)
    assert torch.equal(lin.weight_u, u_before)  # no power iteration in eval mode
    lin.train()
    lin(x).sum().backward()
    assert lin.weight_orig.grad is not None
    nn.utils.remove_spectral_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
    assert torch.allclose(lin.weight, w0 / sigma, atol=1e-4)
    convt = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert tuple(convt.weight_u.shape) == (3,)


def test_unfold_fold_match_pytorch():
    from py_api_fixtures import DATA, assert_list_close, filled, upstream

    want = DATA["grid"]["unfold"]
    x = filled((2, 3, 4, 5), 0.3, torch.float64).requires_grad_(True)
    cols = F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    assert_list_close(cols, want["out"], atol=1e-12, what="unfold")
    (cols * upstream(cols)).sum().backward()
    assert_list_close(x.grad, want["grad_input"], atol=1e-12, what="unfold grad")
    back = nn.Fold((4, 5), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))(cols.detach())
    assert_list_close(back, want["fold"], atol=1e-12, what="fold")
    patches = nn.Unfold(2, stride=2)(torch.arange(16.0).reshape(1, 1, 4, 4))
    assert patches[0, :, 0].tolist() == [0.0, 1.0, 4.0, 5.0] and patches.shape == (1, 4, 4)
    with pytest.raises(RuntimeError, match="number of sliding blocks"):
        F.fold(torch.ones(1, 4, 3), (4, 4), 2, stride=2)
