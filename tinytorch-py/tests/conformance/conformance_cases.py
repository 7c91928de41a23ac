"""The conformance table: other people's PyTorch model code, in tiny configurations, and the
one procedure that runs each of them.

This file is imported twice with different libraries behind the same name:
``scripts/fixtures/gen_conformance_fixtures.py`` imports it with the real ``torch`` to write the
reference values, and ``test_conformance.py`` imports it after ``torch_shim.install()`` so
that ``torch`` (here and inside the model packages) is ``tinytorch``. Nothing here may
therefore depend on which library it runs on: the weights, inputs and targets are NumPy
draws from fixed seeds, loaded into both libraries through ``load_state_dict`` /
``from_numpy``.

For each case, ``run_case`` records:
  ``out``         the forward output (float32);
  ``loss``        a loss of it (MSE against a NumPy target, or cross-entropy for logits);
  ``grad.<name>`` the gradient of that loss w.r.t. every parameter that gets one;
  ``losses``      the losses of three SGD (momentum 0.9) steps;
  ``after.<name>`` every parameter after those three steps.
"""

import os
import zlib
from dataclasses import dataclass

import numpy as np
import torch

from torch_shim import import_submodule


def _read_pins():
    """The pinned packages of requirements.txt beside this file, as {pip name: version}."""
    pins = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, version = line.split("==")
                pins[name] = version
    return pins


#: The pinned PyPI packages the suite runs (pip name -> version), from requirements.txt,
#: which scripts/test_all.sh installs with ``pip install --no-deps``; the fixtures were
#: generated with the same versions.
PACKAGES = _read_pins()

#: Steps of the optimizer part, and its settings.
STEPS = 3
LR = 0.05
MOMENTUM = 0.9


@dataclass
class Case:
    """One model of the suite.

    ``name`` keys its fixtures; ``domain`` is vision, language, audio or diffusion;
    ``modules`` are the top-level modules it imports (the test skips when one is missing);
    ``build`` returns the module (called after the shim is in place, so the package's
    ``torch`` is whichever library runs); ``inputs(rng)`` returns NumPy arrays;
    ``forward(model, *tensors)`` defaults to ``model(*tensors)``; ``loss`` is ``"mse"`` or
    ``"ce"`` (cross-entropy over the last axis against integer labels); ``seed`` shifts the
    NumPy seeds; ``missing_api`` names the API tinytorch lacks that the model needs, for a
    case that is known to fail (the test then checks that it still fails with an error
    naming that API, and fails itself once it does not); ``atol_scale`` is the fraction of a
    tensor's largest magnitude that its elements may differ by, raised only for a model
    whose float32 results PyTorch itself cannot give that closely (measured against
    float64)."""
    name: str
    domain: str
    modules: tuple
    build: object
    inputs: object
    forward: object = None
    loss: str = "mse"
    seed: int = 0
    missing_api: str = ""
    atol_scale: float = 1e-4


def _images(shape):
    """A float32 N(0, 1) array of ``shape`` (images, signals, or feature sequences)."""
    return lambda rng: [rng.standard_normal(shape).astype(np.float32)]


def _tokens(shape, vocab):
    """Token ids in ``[0, vocab)`` of ``shape``, int64."""
    return lambda rng: [rng.integers(0, vocab, size=shape).astype(np.int64)]


def _with_time(shape):
    """An image (or signal) batch and one diffusion time per sample."""
    def make(rng):
        x = rng.standard_normal(shape).astype(np.float32)
        t = rng.uniform(0.05, 0.95, size=(shape[0],)).astype(np.float32)
        return [x, t]
    return make


# ---- vision ---------------------------------------------------------------------------

def _vit():
    ViT = import_submodule("vit_pytorch", "vit").ViT
    return ViT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, heads=2,
               dim_head=8, mlp_dim=32)


def _vit_mean_pool():
    ViT = import_submodule("vit_pytorch", "vit").ViT
    return ViT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=1, heads=2,
               dim_head=8, mlp_dim=32, pool="mean", channels=1)


def _simple_vit():
    SimpleViT = import_submodule("vit_pytorch", "simple_vit").SimpleViT
    return SimpleViT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, heads=2,
                     dim_head=8, mlp_dim=32)


def _cait():
    CaiT = import_submodule("vit_pytorch", "cait").CaiT
    return CaiT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, cls_depth=1,
                heads=2, dim_head=8, mlp_dim=32, dropout=0.0, emb_dropout=0.0,
                layer_dropout=0.0)


def _deepvit():
    DeepViT = import_submodule("vit_pytorch", "deepvit").DeepViT
    return DeepViT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, heads=2,
                   dim_head=8, mlp_dim=32)


def _cvt():
    CvT = import_submodule("vit_pytorch", "cvt").CvT
    return CvT(num_classes=5, s1_emb_dim=8, s1_emb_kernel=3, s1_emb_stride=2, s1_heads=1,
               s1_depth=1, s1_mlp_mult=2, s2_emb_dim=8, s2_heads=2, s2_depth=1,
               s2_mlp_mult=2, s3_emb_dim=12, s3_heads=2, s3_depth=1, s3_mlp_mult=2)


def _mlp_mixer():
    from mlp_mixer_pytorch import MLPMixer
    return MLPMixer(image_size=16, channels=3, patch_size=4, dim=16, depth=2, num_classes=5)


def _res_mlp():
    from res_mlp_pytorch import ResMLP
    return ResMLP(image_size=16, patch_size=4, dim=16, depth=2, num_classes=5)


def _gmlp_vision():
    from g_mlp_pytorch import gMLPVision
    return gMLPVision(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2)


def _lambda_layer():
    from lambda_networks import LambdaLayer
    return LambdaLayer(dim=8, dim_out=8, r=3, dim_k=4, heads=2, dim_u=1)


def _bottleneck():
    from bottleneck_transformer_pytorch import BottleStack
    return BottleStack(dim=8, fmap_size=8, dim_out=16, proj_factor=2, num_layers=1,
                       heads=2, dim_head=4, downsample=True, rel_pos_emb=True)


def _halonet():
    from halonet_pytorch import HaloAttention
    return HaloAttention(dim=8, block_size=4, halo_size=1, dim_head=4, heads=2)


def _axial():
    from axial_attention import AxialAttention
    return AxialAttention(dim=8, dim_index=1, heads=2, num_dimensions=2)


def _siren():
    from siren_pytorch import SirenNet
    return SirenNet(dim_in=2, dim_hidden=16, dim_out=3, num_layers=3, w0_initial=3.0)


def _perceiver():
    from perceiver_pytorch import Perceiver
    return Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0,
                     depth=1, num_latents=4, latent_dim=16, cross_heads=1, latent_heads=2,
                     cross_dim_head=8, latent_dim_head=8, num_classes=5)


# ---- language -------------------------------------------------------------------------

def _gmlp_lm():
    from g_mlp_pytorch import gMLP
    return gMLP(num_tokens=20, dim=16, depth=2, seq_len=8, causal=True)


def _linformer_lm():
    from linformer import LinformerLM
    return LinformerLM(num_tokens=20, dim=16, seq_len=8, depth=1, k=4, heads=2)


def _nystromformer():
    from nystrom_attention import Nystromformer
    return Nystromformer(dim=16, depth=1, dim_head=8, heads=2, num_landmarks=4,
                         attn_values_residual_conv_kernel=3)


def _perceiver_lm():
    from perceiver_pytorch.perceiver_io import PerceiverLM
    return PerceiverLM(num_tokens=20, dim=16, depth=1, max_seq_len=8, num_latents=4,
                       latent_dim=16, cross_heads=1, latent_heads=2, cross_dim_head=8,
                       latent_dim_head=8)


# ---- audio ----------------------------------------------------------------------------

def _conformer_block():
    from conformer import ConformerBlock
    return ConformerBlock(dim=16, dim_head=8, heads=2, ff_mult=2, conv_expansion_factor=2,
                          conv_kernel_size=5)


def _conformer():
    from conformer import Conformer
    return Conformer(12, depth=1, dim_head=8, heads=2, ff_mult=2, conv_expansion_factor=2,
                     conv_kernel_size=3, conv_causal=True)


def _tcn():
    from pytorch_tcn import TCN
    return TCN(num_inputs=4, num_channels=[8, 8], kernel_size=3, dropout=0.0,
               causal=True, use_norm="weight_norm", use_skip_connections=True)


def _vit_1d():
    vit_1d = import_submodule("vit_pytorch", "vit_1d")
    return vit_1d.ViT(seq_len=32, patch_size=8, num_classes=5, dim=16, depth=2, heads=2,
                      mlp_dim=32, channels=2, dim_head=8)


def _simple_vit_1d():
    simple_vit_1d = import_submodule("vit_pytorch", "simple_vit_1d")
    return simple_vit_1d.SimpleViT(seq_len=32, patch_size=8, num_classes=5, dim=16,
                                   depth=2, heads=2, mlp_dim=32, channels=2, dim_head=8)


def _asteroid_file(name):
    """One file of asteroid-filterbanks: its package __init__ also imports the analytic
    filterbank, which needs ``torch.fft`` over complex tensors (not in tinytorch). Its
    encoders ask ``torch._C._is_tracing()``, which tinytorch binds for them."""
    return import_submodule("asteroid_filterbanks", name)


def _asteroid_free():
    # A learned analysis filterbank and its transposed-convolution synthesis, in sequence:
    # the front end of Conv-TasNet-style source separation.
    enc_dec = _asteroid_file("enc_dec")
    fb = _asteroid_file("free_fb").FreeFB(n_filters=8, kernel_size=4, stride=2)
    return torch.nn.Sequential(enc_dec.Encoder(fb), enc_dec.Decoder(fb))


def _asteroid_param_sinc():
    # SincNet's band-pass filters, parametrised by their cut-off frequencies.
    enc_dec = _asteroid_file("enc_dec")
    sinc = _asteroid_file("param_sinc_fb").ParamSincFB(n_filters=8, kernel_size=9, stride=2)
    return enc_dec.Encoder(sinc)


# ---- diffusion ------------------------------------------------------------------------

def _karras_unet():
    karras_unet = import_submodule("denoising_diffusion_pytorch", "karras_unet")
    return karras_unet.KarrasUnet(image_size=8, dim=4, dim_max=8, channels=3,
                                  num_downsamples=1, num_blocks_per_stage=1, attn_res=(4,),
                                  attn_dim_head=4, fourier_dim=8, dropout=0.0)


def _karras_unet_1d():
    karras_unet_1d = import_submodule("denoising_diffusion_pytorch", "karras_unet_1d")
    return karras_unet_1d.KarrasUnet1D(seq_len=16, dim=4, dim_max=8, channels=2,
                                       num_downsamples=1, num_blocks_per_stage=1,
                                       attn_res=(8,), attn_dim_head=4, fourier_dim=8,
                                       dropout=0.0)


def _uvit():
    simple_diffusion = import_submodule("denoising_diffusion_pytorch", "simple_diffusion")
    return simple_diffusion.UViT(4, dim_mults=(1, 2), channels=3, vit_depth=1,
                                 vit_dropout=0.0, attn_dim_head=4, attn_heads=2,
                                 learned_sinusoidal_dim=4)


# ---- more vision (vit-pytorch's variants, glom) and language (hourglass, MoE) ------

def _vp(mod, cls):
    """Class ``cls`` of ``vit_pytorch/<mod>.py`` (without the package's __init__, which
    imports torchvision for its self-supervised trainers)."""
    return getattr(import_submodule("vit_pytorch", mod), cls)


def _cct():
    return _vp("cct", "CCT")(img_size=(16, 16), embedding_dim=16, n_conv_layers=1,
                             kernel_size=3, stride=1, padding=1, pooling_kernel_size=3,
                             pooling_stride=2, pooling_padding=1, num_layers=1, num_heads=2,
                             mlp_ratio=2.0, num_classes=5, dropout_rate=0.0,
                             attention_dropout=0.0, stochastic_depth_rate=0.0,
                             positional_embedding="learnable")


def _t2t():
    return _vp("t2t", "T2TViT")(image_size=16, num_classes=5, dim=16, depth=1, heads=2,
                                mlp_dim=32, dim_head=8, t2t_layers=((3, 2), (3, 2)))


def _pit():
    return _vp("pit", "PiT")(image_size=16, patch_size=4, num_classes=5, dim=8, depth=(1, 1),
                             heads=2, mlp_dim=16, dim_head=4)


def _xcit():
    return _vp("xcit", "XCiT")(image_size=16, patch_size=4, num_classes=5, dim=16, depth=1,
                               cls_depth=1, heads=2, mlp_dim=32, dim_head=8)


def _nest():
    return _vp("nest", "NesT")(image_size=16, patch_size=4, num_classes=5, dim=8, heads=2,
                               num_hierarchies=2, block_repeats=(1, 1), mlp_mult=2, dim_head=4)


def _vivit():
    return _vp("vivit", "ViViT")(image_size=8, image_patch_size=4, frames=4,
                                 frame_patch_size=2, num_classes=5, dim=16, spatial_depth=1,
                                 temporal_depth=1, heads=2, mlp_dim=32, dim_head=8,
                                 use_flash_attn=False)


def _max_vit():
    return _vp("max_vit", "MaxViT")(num_classes=5, dim=8, depth=(1,), dim_head=4,
                                    dim_conv_stem=8, window_size=2, mbconv_expansion_rate=2,
                                    dropout=0.0)


def _cross_vit():
    return _vp("cross_vit", "CrossViT")(image_size=16, num_classes=5, sm_dim=8, lg_dim=16,
                                        sm_patch_size=4, sm_enc_depth=1, sm_enc_heads=2,
                                        sm_enc_mlp_dim=16, sm_enc_dim_head=4, lg_patch_size=8,
                                        lg_enc_depth=1, lg_enc_heads=2, lg_enc_mlp_dim=16,
                                        lg_enc_dim_head=4, cross_attn_depth=1,
                                        cross_attn_heads=2, cross_attn_dim_head=4, depth=1,
                                        dropout=0.0, emb_dropout=0.0)


def _hourglass_lm():
    from hourglass_transformer_pytorch import HourglassTransformerLM
    return HourglassTransformerLM(num_tokens=20, dim=16, max_seq_len=8, depth=(1, 1, 1),
                                  shorten_factor=2, heads=2, dim_head=8, causal=True)


def _glom():
    from glom_pytorch import Glom
    return Glom(dim=8, levels=2, image_size=8, patch_size=4)


def _moe():
    # Top-2 gating with every second expert kept ("all"): the "random" default draws from
    # the random stream, which differs between the libraries.
    from mixture_of_experts import MoE
    return MoE(dim=8, num_experts=4, hidden_dim=16, second_policy_train="all",
               second_policy_eval="all")


# ---- x-transformers ----------------------------------------------------------------

def _xt():
    """x-transformers' model file (its package __init__ also imports wrappers built on
    ``torch.func``, which the models here do not use)."""
    return import_submodule("x_transformers", "x_transformers")


def _xt_gpt():
    xt = _xt()
    return xt.TransformerWrapper(num_tokens=20, max_seq_len=8,
                                 attn_layers=xt.Decoder(dim=16, depth=2, heads=2,
                                                        attn_dim_head=8))


def _xt_llama():
    # Rotary positions, RMSNorm, SwiGLU feed-forward, no absolute positions: Llama's recipe.
    xt = _xt()
    return xt.TransformerWrapper(num_tokens=20, max_seq_len=8, use_abs_pos_emb=False,
                                 attn_layers=xt.Decoder(dim=16, depth=2, heads=2,
                                                        attn_dim_head=8, rotary_pos_emb=True,
                                                        use_rmsnorm=True, ff_glu=True,
                                                        ff_swish=True))


def _xt_bert():
    xt = _xt()
    return xt.TransformerWrapper(num_tokens=20, max_seq_len=8,
                                 attn_layers=xt.Encoder(dim=16, depth=2, heads=2,
                                                        attn_dim_head=8))


def _xt_vit():
    xt = _xt()
    return xt.ViTransformerWrapper(image_size=16, patch_size=4, num_classes=5,
                                   attn_layers=xt.Encoder(dim=16, depth=1, heads=2,
                                                          attn_dim_head=8))


def _time_forward(model, x, t):
    return model(x, t)


#: The modules the x-transformers model file imports.
_XT_MODULES = ("x_transformers", "einops", "einx", "loguru", "torch_einops_utils", "packaging")

CASES = [
    Case("vit", "vision", ("vit_pytorch", "einops"), _vit, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("vit_mean_pool", "vision", ("vit_pytorch", "einops"), _vit_mean_pool,
         _images((2, 1, 16, 16)), loss="ce"),
    Case("simple_vit", "vision", ("vit_pytorch", "einops"), _simple_vit,
         _images((2, 3, 16, 16)), loss="ce"),
    Case("cait", "vision", ("vit_pytorch", "einops"), _cait, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("deepvit", "vision", ("vit_pytorch", "einops"), _deepvit, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("cvt", "vision", ("vit_pytorch", "einops"), _cvt, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("mlp_mixer", "vision", ("mlp_mixer_pytorch", "einops"), _mlp_mixer,
         _images((2, 3, 16, 16)), loss="ce"),
    Case("res_mlp", "vision", ("res_mlp_pytorch", "einops"), _res_mlp,
         _images((2, 3, 16, 16)), loss="ce"),
    Case("gmlp_vision", "vision", ("g_mlp_pytorch", "einops"), _gmlp_vision,
         _images((2, 3, 16, 16)), loss="ce"),
    Case("lambda_layer", "vision", ("lambda_networks", "einops"), _lambda_layer,
         _images((2, 8, 6, 6))),
    Case("bottleneck_transformer", "vision", ("bottleneck_transformer_pytorch", "einops"),
         _bottleneck, _images((2, 8, 8, 8))),
    Case("halonet_attention", "vision", ("halonet_pytorch", "einops"), _halonet,
         _images((1, 8, 8, 8))),
    Case("axial_attention", "vision", ("axial_attention",), _axial, _images((2, 8, 4, 5))),
    Case("siren", "vision", ("siren_pytorch", "einops"), _siren, _images((32, 2))),
    Case("perceiver", "vision", ("perceiver_pytorch", "einops"), _perceiver,
         _images((2, 4, 4, 3)), loss="ce"),
    Case("gmlp_lm", "language", ("g_mlp_pytorch", "einops"), _gmlp_lm, _tokens((2, 8), 20),
         loss="ce"),
    Case("linformer_lm", "language", ("linformer",), _linformer_lm, _tokens((2, 8), 20),
         loss="ce"),
    Case("nystromformer", "language", ("nystrom_attention", "einops"), _nystromformer,
         _images((2, 8, 16))),
    Case("perceiver_lm", "language", ("perceiver_pytorch", "einops"), _perceiver_lm,
         _tokens((2, 8), 20), loss="ce"),
    Case("conformer_block", "audio", ("conformer", "einops"), _conformer_block,
         _images((2, 10, 16))),
    Case("conformer", "audio", ("conformer", "einops"), _conformer, _images((2, 10, 12))),
    Case("tcn", "audio", ("pytorch_tcn",), _tcn, _images((2, 4, 12))),
    Case("vit_1d", "audio", ("vit_pytorch", "einops"), _vit_1d, _images((2, 2, 32)),
         loss="ce"),
    Case("simple_vit_1d", "audio", ("vit_pytorch", "einops"), _simple_vit_1d,
         _images((2, 2, 32)), loss="ce"),
    Case("karras_unet", "diffusion", ("denoising_diffusion_pytorch", "einops", "packaging"),
         _karras_unet, _with_time((2, 3, 8, 8)), forward=_time_forward),
    Case("karras_unet_1d", "diffusion",
         ("denoising_diffusion_pytorch", "einops", "packaging"), _karras_unet_1d,
         _with_time((2, 2, 16)), forward=_time_forward),
    Case("uvit", "diffusion", ("denoising_diffusion_pytorch", "einops", "tqdm"), _uvit,
         _with_time((2, 3, 8, 8)), forward=_time_forward),
    Case("cct", "vision", ("vit_pytorch", "einops"), _cct, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("t2t_vit", "vision", ("vit_pytorch", "einops"), _t2t, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("pit", "vision", ("vit_pytorch", "einops"), _pit, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("xcit", "vision", ("vit_pytorch", "einops"), _xcit, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("nest", "vision", ("vit_pytorch", "einops"), _nest, _images((2, 3, 16, 16)),
         loss="ce"),
    Case("vivit", "vision", ("vit_pytorch", "einops"), _vivit, _images((2, 3, 4, 8, 8)),
         loss="ce"),
    Case("max_vit", "vision", ("vit_pytorch", "einops"), _max_vit, _images((2, 3, 8, 8)),
         loss="ce"),
    Case("cross_vit", "vision", ("vit_pytorch", "einops"), _cross_vit,
         _images((2, 3, 16, 16)), loss="ce"),
    Case("glom", "vision", ("glom_pytorch", "einops"), _glom, _images((2, 3, 8, 8))),
    Case("hourglass_lm", "language", ("hourglass_transformer_pytorch", "einops"),
         _hourglass_lm, _tokens((2, 8), 20), loss="ce"),
    Case("moe", "language", ("mixture_of_experts",), _moe, _images((2, 6, 8))),
    Case("x_transformers_gpt", "language", _XT_MODULES, _xt_gpt, _tokens((2, 8), 20), loss="ce"),
    Case("x_transformers_llama", "language", _XT_MODULES, _xt_llama, _tokens((2, 8), 20),
         loss="ce"),
    Case("x_transformers_bert", "language", _XT_MODULES, _xt_bert, _tokens((2, 8), 20), loss="ce"),
    Case("x_transformers_vit", "vision", _XT_MODULES, _xt_vit, _images((2, 3, 16, 16)), loss="ce"),
    Case("asteroid_free_fb", "audio", ("asteroid_filterbanks",), _asteroid_free,
         _images((2, 1, 32))),
    # The cut-off gradients (about 1e-5) come from cancelling terms: PyTorch's own float32
    # values differ from its float64 ones by 2e-4 of their largest magnitude.
    Case("asteroid_param_sinc", "audio", ("asteroid_filterbanks",), _asteroid_param_sinc,
         _images((2, 1, 32)), atol_scale=1e-3),
]

CASE_BY_NAME = {case.name: case for case in CASES}


def _seed(case, name):
    """A seed per (case, parameter name), so the draws do not depend on the order in which
    a library lists its parameters."""
    return zlib.crc32(f"{case.name}/{name}".encode()) + case.seed


def draw_parameter(case, name, current):
    """The NumPy value a parameter is loaded with. Weights of rank >= 2 get N(0, 1/fan_in);
    a vector that the model initialised to one constant (a norm's scale, a layer-scale, a
    zero bias) gets that constant plus N(0, 0.1^2), so scales stay near their meaning; any
    other vector N(0, 0.1^2)."""
    rng = np.random.default_rng(_seed(case, name))
    shape = current.shape
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    flat = current.reshape(-1)
    base = flat[0] if flat.size and np.all(flat == flat[0]) else 0.0
    return np.asarray(base + 0.1 * rng.standard_normal(shape), dtype=np.float32)


def to_numpy(t):
    """A tensor of either library as a NumPy array (detached, on the CPU)."""
    return t.detach().cpu().numpy()


def load_weights(case, model):
    """Replaces every floating parameter in the model's state dict by its NumPy draw and
    loads the result back with ``load_state_dict`` (strict), the path a checkpoint takes."""
    params = dict(model.named_parameters())
    state = model.state_dict()
    for name, value in state.items():
        if name in params and value.is_floating_point():
            state[name] = torch.from_numpy(draw_parameter(case, name, to_numpy(value)))
    model.load_state_dict(state)


def _first_tensor(out):
    """The main output of models that return tuples (MoE: output and auxiliary loss)."""
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def compute_loss(case, out, rng_targets):
    """The case's loss of ``out``: cross-entropy against labels, or MSE against a target,
    both drawn from ``rng_targets``."""
    if case.loss == "ce":
        classes = out.shape[-1]
        labels = rng_targets.integers(0, classes, size=tuple(out.shape[:-1]))
        labels = torch.from_numpy(labels.astype(np.int64))
        return torch.nn.functional.cross_entropy(out.reshape(-1, classes), labels.reshape(-1))
    target = torch.from_numpy(rng_targets.standard_normal(tuple(out.shape)).astype(np.float32))
    return torch.nn.functional.mse_loss(out, target)


def run_case(case):
    """Builds, loads, runs forward/backward and three optimizer steps; returns the record
    described at the top of this file as a dict of NumPy arrays."""
    model = case.build()
    load_weights(case, model)
    model.train()
    rng = np.random.default_rng(1000 + case.seed)
    inputs = [torch.from_numpy(a) for a in case.inputs(rng)]
    forward = case.forward or (lambda m, *xs: m(*xs))
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    opt = torch.optim.SGD([p for _, p in params], lr=LR, momentum=MOMENTUM)

    record = {}
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        out = _first_tensor(forward(model, *inputs))
        # The same target every step: a fresh generator from the case's seed.
        loss = compute_loss(case, out, np.random.default_rng(2000 + case.seed))
        loss.backward()
        if step == 0:
            record["out"] = to_numpy(out).astype(np.float32)
            record["loss"] = np.float32(loss.item())
            for name, p in params:
                if p.grad is not None:
                    record[f"grad.{name}"] = to_numpy(p.grad).astype(np.float32)
        losses.append(loss.item())
        opt.step()
    record["losses"] = np.asarray(losses, dtype=np.float32)
    for name, p in params:
        record[f"after.{name}"] = to_numpy(p).astype(np.float32)
    return record
