"""The APIs the conformance suite's model packages needed (tests/conformance): ``F.conv3d``
and ``nn.Conv3d`` (lambda-networks), ``F.selu`` / ``nn.SELU`` and ``nn.ConstantPad1d``
(pytorch-tcn), the padding layers, ``ModuleList.insert`` / ``pop`` / ``del`` (the Karras
U-Nets), ``utils.checkpoint.get_device_states`` / ``set_device_states`` (the reversible
layers of axial-attention and linformer), and the assignment of a module over a plain
attribute of the same name. Each is checked against its definition, computed here with
NumPy."""

import math

import numpy as np
import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F


def conv3d_reference(x, w, b, stride, padding, dilation, groups):
    """The definition: out[n, o, d, h, w] = b[o] + sum over the group's input channels and
    the kernel of x_padded[n, c, d*s + kd*dil, ...] * w[o, c, kd, kh, kw]."""
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c, depth, height, width = x.shape
    o, cg, kd, kh, kw = w.shape
    out_shape = [(size - dil * (k - 1) - 1) // s + 1 for size, k, s, dil in
                 zip((depth, height, width), (kd, kh, kw), stride, dilation)]
    out = np.zeros((n, o, *out_shape))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i, j, k in np.ndindex(*out_shape):
            patch = x[:, g * cg:(g + 1) * cg,
                      i * stride[0]:i * stride[0] + dilation[0] * (kd - 1) + 1:dilation[0],
                      j * stride[1]:j * stride[1] + dilation[1] * (kh - 1) + 1:dilation[1],
                      k * stride[2]:k * stride[2] + dilation[2] * (kw - 1) + 1:dilation[2]]
            out[:, oc, i, j, k] = (patch * w[oc]).sum(axis=(1, 2, 3, 4))
        if b is not None:
            out[:, oc] += b[oc]
    return out


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    ((1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
    ((2, 1, 2), (1, 0, 2), (1, 2, 1), 1),
    ((1, 2, 1), (2, 1, 1), (2, 1, 1), 2),
])
def test_conv3d_matches_its_definition(stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 6, 5, 7))
    w = rng.standard_normal((6, 4 // groups, 3, 2, 3))
    b = rng.standard_normal(6)
    got = F.conv3d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride,
                   padding, dilation, groups)
    want = conv3d_reference(x, w, b, stride, padding, dilation, groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_conv3d_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((1, 2, 4, 3, 3))).requires_grad_()
    w = torch.from_numpy(rng.standard_normal((3, 2, 2, 2, 2))).requires_grad_()
    b = torch.from_numpy(rng.standard_normal(3)).requires_grad_()
    weights = rng.standard_normal((1, 3, 3, 4, 2))  # the output's shape

    def loss(xv, wv, bv):
        return float((conv3d_reference(xv, wv, bv, (2, 1, 1), (1, 1, 0), (1, 1, 1), 1)
                      * weights).sum())

    out = F.conv3d(x, w, b, stride=(2, 1, 1), padding=(1, 1, 0))
    (out * torch.from_numpy(weights)).sum().backward()
    eps = 1e-6
    base = [x.detach().numpy().copy(), w.detach().numpy().copy(), b.detach().numpy().copy()]
    for which, grad in enumerate((x.grad, w.grad, b.grad)):
        flat = base[which].reshape(-1)
        for k in range(0, flat.size, max(1, flat.size // 7)):
            plus = [a.copy() for a in base]
            minus = [a.copy() for a in base]
            plus[which].reshape(-1)[k] += eps
            minus[which].reshape(-1)[k] -= eps
            numeric = (loss(*plus) - loss(*minus)) / (2 * eps)
            assert abs(grad.numpy().reshape(-1)[k] - numeric) < 1e-6 * max(1, abs(numeric))


def test_conv3d_same_padding_unbatched_and_errors():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 4, 6))
    w = rng.standard_normal((3, 2, 4, 3, 2))
    got = F.conv3d(torch.from_numpy(x), torch.from_numpy(w), padding="same")
    assert tuple(got.shape) == (3, 5, 4, 6)
    # PyTorch's 'same': total padding dilation * (k - 1), the odd element on the high side.
    padded = np.pad(x, [(0, 0), (1, 2), (1, 1), (0, 1)])
    want = conv3d_reference(padded[None], w, None, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1)[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="strided"):
        F.conv3d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="channels"):
        F.conv3d(torch.from_numpy(x), torch.from_numpy(rng.standard_normal((3, 3, 1, 1, 1))))
    with pytest.raises(RuntimeError, match="5-D weight"):
        F.conv3d(torch.from_numpy(x), torch.from_numpy(rng.standard_normal((3, 2, 1, 1))))


def test_conv3d_module_shapes_init_and_state_dict():
    conv = nn.Conv3d(4, 6, (1, 3, 3), padding=(0, 1, 1), groups=2, bias=True)
    assert tuple(conv.weight.shape) == (6, 2, 1, 3, 3) and tuple(conv.bias.shape) == (6,)
    assert sorted(conv.state_dict()) == ["bias", "weight"]
    bound = 1 / math.sqrt(2 * 1 * 3 * 3)  # kaiming_uniform(a=sqrt(5)): 1/sqrt(fan_in)
    assert float(conv.weight.abs().max()) <= bound and float(conv.bias.abs().max()) <= bound
    out = conv(torch.randn(2, 4, 3, 5, 5))
    assert tuple(out.shape) == (2, 6, 3, 5, 5)
    assert "kernel_size=(1, 3, 3)" in repr(conv) and "groups=2" in repr(conv)
    assert nn.modules.conv.Conv3d is nn.Conv3d


def test_selu_is_scaled_elu():
    x = np.linspace(-3, 3, 13)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    want = scale * np.where(x > 0, x, alpha * (np.exp(x) - 1))
    np.testing.assert_allclose(F.selu(torch.from_numpy(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(nn.SELU()(torch.from_numpy(x)).numpy(), want, rtol=1e-12)
    t = torch.from_numpy(x.copy())
    assert F.selu(t, inplace=True) is t
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("layer,np_mode,dims", [
    (nn.ConstantPad1d((2, 1), 3.5), "constant", 1),
    (nn.ConstantPad2d(1, -1.0), "constant", 2),
    (nn.ConstantPad3d((1, 0, 0, 2, 1, 1), 0.5), "constant", 3),
    (nn.ZeroPad1d(2), "constant", 1),
    (nn.ZeroPad3d(1), "constant", 3),
    (nn.ReflectionPad1d((2, 1)), "reflect", 1),
    (nn.ReflectionPad2d(1), "reflect", 2),
    (nn.ReplicationPad1d((0, 3)), "edge", 1),
    (nn.ReplicationPad2d((1, 2, 0, 1)), "edge", 2),
])
def test_padding_layers_match_numpy_pad(layer, np_mode, dims):
    shape = (2, 3) + (4, 5, 4)[:dims]
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    pad = layer.padding
    # F.pad's order is last dim first; numpy's is first dim first.
    widths = [(0, 0)] * (x.ndim - dims) + [(pad[2 * i], pad[2 * i + 1])
                                           for i in reversed(range(dims))]
    kwargs = {"constant_values": layer.value} if np_mode == "constant" else {}
    want = np.pad(x, widths, mode=np_mode, **kwargs)
    np.testing.assert_array_equal(layer(torch.from_numpy(x)).numpy(), want)


def test_padding_layer_rejects_a_wrong_padding_length():
    with pytest.raises(ValueError, match="4 ints"):
        nn.ConstantPad2d((1, 2, 3), 0.0)


def test_module_list_insert_pop_del_keep_pytorch_keys():
    a, b, c, d = nn.Linear(1, 1), nn.Linear(1, 2), nn.Linear(1, 3), nn.Linear(1, 4)
    ml = nn.ModuleList([a, c])
    ml.insert(1, b)
    ml.insert(0, d)
    assert list(ml) == [d, a, b, c]
    assert list(dict(ml.named_children())) == ["0", "1", "2", "3"]
    assert ml.pop(1) is a and list(ml) == [d, b, c]
    del ml[-1]
    assert list(ml) == [d, b]
    assert sorted(ml.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    del ml[0:1]
    assert list(ml) == [b] and list(dict(ml.named_children())) == ["0"]
    ml += [c]
    assert list(ml) == [b, c] and list(ml + nn.ModuleList([a])) == [b, c, a]
    with pytest.raises(IndexError):
        del ml[5]


def test_assigning_a_module_over_a_plain_attribute():
    """``self.x = None`` then ``self.x = nn.Linear(...)``: the module is registered and the
    plain attribute no longer shadows it (PyTorch's ``__setattr__`` removes it)."""
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.to_emb = None
            self.to_emb = nn.Linear(2, 3)
            self.scale = None
            self.scale = nn.Parameter(torch.ones(3))

    block = Block()
    assert isinstance(block.to_emb, nn.Linear) and block.scale.shape == (3,)
    assert sorted(block.state_dict()) == ["scale", "to_emb.bias", "to_emb.weight"]


def test_get_and_set_device_states_on_cpu():
    from tinytorch.utils.checkpoint import get_device_states, set_device_states

    devices, states = get_device_states(torch.ones(2), [torch.zeros(1)], {"k": 3}, "text")
    assert devices == [] and states == []
    set_device_states(devices, states)
    with pytest.raises(ValueError):
        set_device_states([0], [])


def test_parametrizations_weight_norm_matches_the_hook_based_one():
    """pytorch-tcn's default: ``nn.utils.parametrizations.weight_norm``. Same output and
    the same gradients for g and v as the (separately tested) hook-based
    ``nn.utils.weight_norm``, PyTorch's state-dict keys, and the weight unchanged by
    registering."""
    from tinytorch.nn.utils import parametrizations, parametrize

    torch.manual_seed(0)
    a = nn.Conv1d(3, 4, 3)
    b = nn.Conv1d(3, 4, 3)
    b.load_state_dict(a.state_dict())
    before = a.weight.detach().clone()
    parametrizations.weight_norm(a)
    nn.utils.weight_norm(b)
    assert isinstance(a, nn.Conv1d) and type(a).__name__ == "ParametrizedConv1d"
    assert parametrize.is_parametrized(a, "weight") and not parametrize.is_parametrized(b)
    assert sorted(a.state_dict()) == ["bias", "parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]
    assert tuple(a.parametrizations.weight.original0.shape) == (4, 1, 1)
    np.testing.assert_allclose(a.weight.detach().numpy(), before.numpy(), rtol=1e-6)
    x = torch.randn(2, 3, 7)
    (a(x) ** 2).sum().backward()
    (b(x) ** 2).sum().backward()
    np.testing.assert_allclose(a(x).detach().numpy(), b(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.parametrizations.weight.original0.grad.numpy(),
                               b.weight_g.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(a.parametrizations.weight.original1.grad.numpy(),
                               b.weight_v.grad.numpy(), rtol=1e-5, atol=1e-7)
    # Another instance of the class is untouched.
    assert "weight" in dict(nn.Conv1d(3, 4, 3).named_parameters())


def test_register_and_remove_a_parametrization():
    from tinytorch.nn.utils import parametrize

    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    w = layer.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    assert "parametrizations.weight.original" in layer.state_dict()
    with pytest.raises(ValueError, match="does not have"):
        parametrize.register_parametrization(layer, "nothing", Symmetric())
    parametrize.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and not parametrize.is_parametrized(layer)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w)
    assert sorted(layer.state_dict()) == ["bias", "weight"]


def test_private_is_tracing_flag():
    """asteroid-filterbanks asks ``torch._C._is_tracing()`` directly: never, as
    ``torch.jit.is_tracing()`` says."""
    assert torch._C._is_tracing() is False and torch.jit.is_tracing() is False


def test_nn_transformer_and_transformer_decoder_match_pytorch():
    """``nn.Transformer`` (which pytorch/examples' word-language-model TransformerModel
    subclasses) and ``nn.TransformerDecoder``: PyTorch's parameter names, its output on
    fixed weights (values printed by PyTorch 2.x for this exact set-up), its mask helper
    and its error messages."""
    m = nn.Transformer(4, 2, 1, 2, 8, 0.0)
    names = [n for n, _ in m.named_parameters()]
    assert names[:2] == ["encoder.layers.0.self_attn.in_proj_weight",
                         "encoder.layers.0.self_attn.in_proj_bias"]
    assert "encoder.norm.weight" in names and "decoder.norm.bias" in names
    assert "decoder.layers.1.multihead_attn.out_proj.weight" in names
    assert len(names) == 12 + 2 + 2 * 18 + 2
    assert isinstance(m.decoder, nn.TransformerDecoder) and m.decoder.num_layers == 2
    sd = m.state_dict()
    for i, k in enumerate(sorted(sd)):
        n = sd[k].numel()
        sd[k] = (torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + i)
                 .reshape(sd[k].shape) * 0.5)
    m.load_state_dict(sd)
    src = torch.cos(torch.arange(3 * 2 * 4, dtype=torch.float32) * 0.3).reshape(3, 2, 4)
    tgt = torch.sin(torch.arange(2 * 2 * 4, dtype=torch.float32) * 0.7).reshape(2, 2, 4)
    out = m(src, tgt, tgt_mask=nn.Transformer.generate_square_subsequent_mask(2))
    want = [-0.589239, -0.262438, -0.415398, -0.000935, -0.586185, -0.263911, -0.415576,
            0.00088, -0.592105, -0.261087, -0.415234, -0.002648, -0.585578, -0.264207,
            -0.415612, 0.001239]
    assert tuple(out.shape) == (2, 2, 4)
    np.testing.assert_allclose(out.reshape(-1).tolist(), want, atol=2e-6)

    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == torch.float32 and mask.tolist() == [
        [0.0, -math.inf, -math.inf], [0.0, 0.0, -math.inf], [0.0, 0.0, 0.0]]
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=torch.float64).dtype == \
        torch.float64
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(torch.zeros(5, 2, 4), torch.zeros(4, 3, 4))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal "
                                           "to d_model"):
        m(torch.zeros(5, 2, 4), torch.zeros(4, 2, 6))
    from tinytorch.nn.modules.transformer import Transformer, TransformerDecoder
    assert Transformer is nn.Transformer and TransformerDecoder is nn.TransformerDecoder
