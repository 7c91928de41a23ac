"""``torch.nn.functional``: TinyTorch's Rust ops under PyTorch's names."""

from .._tinytorch import _functional as _F

relu = _F.relu
sigmoid = _F.sigmoid
tanh = _F.tanh
silu = _F.silu
gelu = _F.gelu
leaky_relu = _F.leaky_relu
elu = _F.elu
softplus = _F.softplus
softmax = _F.softmax
log_softmax = _F.log_softmax
linear = _F.linear
conv1d = _F.conv1d
conv2d = _F.conv2d
conv_transpose2d = _F.conv_transpose2d
max_pool2d = _F.max_pool2d
avg_pool2d = _F.avg_pool2d
adaptive_avg_pool2d = _F.adaptive_avg_pool2d
max_pool1d = _F.max_pool1d
avg_pool1d = _F.avg_pool1d
adaptive_max_pool2d = _F.adaptive_max_pool2d
pixel_shuffle = _F.pixel_shuffle
pixel_unshuffle = _F.pixel_unshuffle
interpolate = _F.interpolate
dropout = _F.dropout
embedding = _F.embedding
one_hot = _F.one_hot
pad = _F.pad
layer_norm = _F.layer_norm
rms_norm = _F.rms_norm
group_norm = _F.group_norm
batch_norm = _F.batch_norm
scaled_dot_product_attention = _F.scaled_dot_product_attention
cross_entropy = _F.cross_entropy
nll_loss = _F.nll_loss
mse_loss = _F.mse_loss
l1_loss = _F.l1_loss
smooth_l1_loss = _F.smooth_l1_loss
huber_loss = _F.huber_loss
binary_cross_entropy = _F.binary_cross_entropy
binary_cross_entropy_with_logits = _F.binary_cross_entropy_with_logits
kl_div = _F.kl_div
# TinyTorch's addition: knowledge distillation (Hinton et al.), see tinytorch::ops::loss.
distillation_loss = _F.distillation_loss


def relu6(input, inplace=False):
    return input.clamp(0.0, 6.0)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``x / max(||x||_p, eps)`` along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)
