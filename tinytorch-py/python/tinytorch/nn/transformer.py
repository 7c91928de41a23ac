"""``nn.MultiheadAttention`` and the Transformer layers, composed of the layers and
functional ops (the attention itself is TinyTorch's fused ``scaled_dot_product_attention``
when no weights are asked for). PyTorch's parameter names, defaults and mask conventions:
in an ``attn_mask`` or ``key_padding_mask`` of bools, True means *may not* attend."""

import copy
import math

from .. import _tinytorch as _C
from . import functional as F
from . import init
from .container import ModuleList
from .layers import Dropout, LayerNorm, Linear
from .module import Module
from .parameter import Parameter


def _additive_mask(attn_mask, key_padding_mask, n, h, l, s, dtype):
    """One float mask broadcastable to ``(N, H, L, S)`` with -inf where attention is not
    allowed, from MultiheadAttention's two masks (None when neither is given)."""
    mask = None
    if attn_mask is not None:
        m = attn_mask
        if m.dtype == _C.bool:
            m = _C.zeros(*m.shape, dtype=dtype).masked_fill(m, float("-inf"))
        mask = m.reshape(n, h, l, s) if m.dim() == 3 else m.reshape(1, 1, l, s)
    if key_padding_mask is not None:
        k = key_padding_mask
        if k.dtype == _C.bool:
            k = _C.zeros(*k.shape, dtype=dtype).masked_fill(k, float("-inf"))
        k = k.reshape(n, 1, 1, s)
        mask = k if mask is None else mask + k
    return mask


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn or (kdim or embed_dim) != embed_dim or \
                (vdim or embed_dim) != embed_dim:
            raise ValueError("add_bias_kv, add_zero_attn and kdim/vdim != embed_dim are not "
                             "supported")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self.in_proj_weight = Parameter(_C.zeros(3 * embed_dim, embed_dim, dtype=dtype,
                                                 device=device))
        self.in_proj_bias = (Parameter(_C.zeros(3 * embed_dim, dtype=dtype, device=device))
                             if bias else None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        l, n, e = query.shape
        s = key.shape[0]
        h, d = self.num_heads, self.head_dim
        w = self.in_proj_weight.chunk(3)
        b = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None,) * 3
        # (len, N, E) -> (N, H, len, D)
        heads = [F.linear(x, wi, bi).reshape(x.shape[0], n * h, d).transpose(0, 1)
                 .reshape(n, h, x.shape[0], d)
                 for x, wi, bi in zip((query, key, value), w, b)]
        q, k, v = heads
        mask = _additive_mask(attn_mask, key_padding_mask, n, h, l, s, q.dtype)
        if is_causal and mask is None and attn_mask is None:
            causal = _C.ones(l, s, dtype=_C.bool).triu(1)
            mask = _C.zeros(l, s, dtype=q.dtype).masked_fill(causal, float("-inf"))
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(-1)
            out = F.dropout(weights, p, self.training) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        # (N, H, L, D) -> (L, N, E)
        out = out.permute(2, 0, 1, 3).reshape(l, n, e)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if weights is not None:
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        return out, weights


def _activation(a):
    if callable(a):
        return a
    return {"relu": F.relu, "gelu": F.gelu}[a]


def _init_layer(layer, attentions, d_model, nhead, dim_feedforward, dropout, activation,
                layer_norm_eps, batch_first, norm_first, bias, device, dtype):
    """Build what an encoder and a decoder layer share, in PyTorch's order (so parameters
    list and initialise as PyTorch's do): a ``MultiheadAttention`` for each name in
    ``attentions``, the feed-forward block (``linear1``, ``dropout``, ``linear2``), then one
    ``LayerNorm`` (``norm1``, ...) and one ``Dropout`` (``dropout1``, ...) for each attention
    block and the feed-forward block."""
    kw = {"device": device, "dtype": dtype}
    for name in attentions:
        setattr(layer, name, MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                                batch_first=batch_first, **kw))
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
    layer.norm_first = norm_first
    blocks = range(1, len(attentions) + 2)
    for i in blocks:
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    for i in blocks:
        setattr(layer, f"dropout{i}", Dropout(dropout))
    object.__setattr__(layer, "activation", _activation(activation))


class TransformerEncoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _init_layer(self, ("self_attn",), d_model, nhead, dim_feedforward, dropout, activation,
                    layer_norm_eps, batch_first, norm_first, bias, device, dtype)

    def _sa(self, x, mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))


class TransformerDecoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _init_layer(self, ("self_attn", "multihead_attn"), d_model, nhead, dim_feedforward,
                    dropout, activation, layer_norm_eps, batch_first, norm_first, bias, device,
                    dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        def sa(x):
            return self.dropout1(self.self_attn(x, x, x, attn_mask=tgt_mask,
                                                key_padding_mask=tgt_key_padding_mask,
                                                need_weights=False, is_causal=tgt_is_causal)[0])

        def mha(x):
            return self.dropout2(self.multihead_attn(x, memory, memory, attn_mask=memory_mask,
                                                     key_padding_mask=memory_key_padding_mask,
                                                     need_weights=False,
                                                     is_causal=memory_is_causal)[0])

        def ff(x):
            return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

        x = tgt
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + mha(self.norm2(x))
            return x + ff(self.norm3(x))
        x = self.norm1(x + sa(x))
        x = self.norm2(x + mha(x))
        return self.norm3(x + ff(x))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer``, then ``norm``."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """The encoder-decoder of "Attention Is All You Need": a ``TransformerEncoder`` and a
    ``TransformerDecoder``, each ending in a LayerNorm, every matrix parameter
    Xavier-uniform (PyTorch's ``_reset_parameters``)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
                 norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}

        def stack(custom, stack_cls, layer_cls, num_layers):
            """``custom`` if given, else ``num_layers`` copies of a new ``layer_cls`` layer
            followed by a LayerNorm."""
            if custom is not None:
                return custom
            layer = layer_cls(d_model, nhead, dim_feedforward, dropout, activation,
                              layer_norm_eps, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            return stack_cls(layer, num_layers, norm)

        self.encoder = stack(custom_encoder, TransformerEncoder, TransformerEncoderLayer,
                             num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoder, TransformerDecoderLayer,
                             num_decoder_layers)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        elif self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float mask of shape ``(sz, sz)``: 0 on and below the diagonal, -inf above it
        (position i may attend to positions up to i)."""
        if dtype is None:
            dtype = _C.float32
        if device is None:
            device = "cpu"
        return _C.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
