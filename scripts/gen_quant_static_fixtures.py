"""Reference values for static int8 quantization (tinytorch/tests/quant_static.rs), from
PyTorch's quantized modules on the fbgemm engine.

- Layers: torch.ao.nn.quantized.Linear, LinearReLU, Conv2d (stride 2, padding 1) and
  ConvReLU2d (a 3x2 kernel, padding (0, 1), dilation (2, 1)). Each gets float weights (which
  both sides quantize per output channel, symmetric), an input quantized with the given
  (scale, zero point), and output parameters; the fixture holds the output integers.
- A model: LeNet's shape at 12x12 (conv+ReLU, max pool, conv+ReLU, max pool, flatten,
  linear+ReLU, linear) through PyTorch's eager static flow (QuantStub, fuse_modules, prepare
  with a MinMaxObserver quint8 / per-channel symmetric qint8 qconfig, calibration on 32
  images, convert), with the float weights, the calibration and test images, the observers'
  parameters and the quantized model's output.

Writes tinytorch/tests/fixtures/quant_static.safetensors.

    python scripts/gen_quant_static_fixtures.py
"""
import os
import warnings

import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
from safetensors.torch import save_file
from torch import nn
from torch.ao.quantization import (DeQuantStub, MinMaxObserver, PerChannelMinMaxObserver,
                                   QConfig, QuantStub, convert, fuse_modules, prepare)

warnings.filterwarnings("ignore")  # quantized tensor creation is deprecated in 2.15
torch.backends.quantized.engine = "fbgemm"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "quant_static.safetensors")

ACT = MinMaxObserver.with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
WEIGHT = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, ch_axis=0,
                                            qscheme=torch.per_channel_symmetric)


def act_params(t):
    obs = ACT()
    obs(t)
    scale, zp = obs.calculate_qparams()
    return float(scale), int(zp)


def qweight(w):
    obs = WEIGHT()
    obs(w)
    scales, zps = obs.calculate_qparams()
    return torch.quantize_per_channel(w, scales, zps, 0, torch.qint8)


def layer_case(out, name, qmodule, float_module, x):
    """Run `qmodule` (holding `float_module`'s quantized weights) on x quantized with x's own
    range; output parameters from the float output's range (after ReLU for fused modules)."""
    y = float_module(x).detach()
    if isinstance(qmodule, (nniq.LinearReLU, nniq.ConvReLU2d)):
        y = torch.relu(y)
    s_in, zp_in = act_params(x)
    s_out, zp_out = act_params(y)
    qmodule.set_weight_bias(qweight(float_module.weight.detach()), float_module.bias.detach())
    qmodule.scale, qmodule.zero_point = s_out, zp_out
    qy = qmodule(torch.quantize_per_tensor(x, s_in, zp_in, torch.quint8))
    out[f"{name}.x"] = x.clone()
    out[f"{name}.weight"] = float_module.weight.detach().clone()
    out[f"{name}.bias"] = float_module.bias.detach().clone()
    out[f"{name}.input"] = torch.tensor([s_in, float(zp_in)], dtype=torch.float64)
    out[f"{name}.output"] = torch.tensor([s_out, float(zp_out)], dtype=torch.float64)
    out[f"{name}.int"] = qy.int_repr().long()


class Quantized(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.quant, self.body, self.dequant = QuantStub(), body, DeQuantStub()

    def forward(self, x):
        return self.dequant(self.body(self.quant(x)))


def model_case(out, g):
    body = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 10))
    for k, v in body.state_dict().items():
        out[f"model.{k}"] = v.clone()
    calib = torch.randn(32, 1, 12, 12, generator=g)
    test = torch.randn(8, 1, 12, 12, generator=g)
    out["model.float"] = body(test).detach()
    m = Quantized(body).eval()
    fuse_modules(m, [["body.0", "body.1"], ["body.3", "body.4"], ["body.7", "body.8"]],
                 inplace=True)
    m.qconfig = QConfig(activation=ACT, weight=WEIGHT)
    prepare(m, inplace=True)
    m(calib)
    convert(m, inplace=True)
    out["model.calib"], out["model.test"] = calib, test
    out["model.int8"] = m(test).detach()
    # Each quantized layer's output parameters, in order (QuantStub's first).
    params = [(m.quant.scale, m.quant.zero_point)]
    for i in ["0", "3", "7", "9"]:
        q = getattr(m.body, i)
        params.append((q.scale, q.zero_point))
    out["model.qparams"] = torch.tensor([[float(s), float(z)] for s, z in params],
                                        dtype=torch.float64)


def main():
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    out = {}
    x = torch.randn(8, 32, generator=g) * 2
    layer_case(out, "linear", nnq.Linear(32, 16), nn.Linear(32, 16), x)
    layer_case(out, "linear_relu", nniq.LinearReLU(32, 16), nn.Linear(32, 16), x)
    x = torch.randn(2, 3, 9, 9, generator=g)
    layer_case(out, "conv", nnq.Conv2d(3, 5, 3, stride=2, padding=1),
               nn.Conv2d(3, 5, 3, stride=2, padding=1), x)
    layer_case(out, "conv_relu", nniq.ConvReLU2d(3, 5, (3, 2), padding=(0, 1), dilation=(2, 1)),
               nn.Conv2d(3, 5, (3, 2), padding=(0, 1), dilation=(2, 1)), x)
    model_case(out, g)
    save_file({k: v.contiguous() for k, v in out.items()}, OUT)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
