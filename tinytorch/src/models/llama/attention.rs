//! Llama's self-attention (`LlamaAttention`): q/k/v projections, rotary embeddings on queries
//! and keys, grouped-query attention (fewer key/value heads than query heads, each shared by a
//! group of consecutive query heads), the output projection.
//!
//! The head groups are handled by views, not by copying keys and values per query head
//! (Hugging Face's `repeat_kv`): queries `(B, H, L, D)` are viewed as `(B, H_kv, G, L, D)`
//! and keys/values `(B, H_kv, S, D)` as `(B, H_kv, 1, S, D)`, and
//! `scaled_dot_product_attention` broadcasts the group dim (its backward sums the key and
//! value gradients over each group; the fused CPU kernel still expands the broadcast in the
//! working copy it makes of its inputs). Without a mask (a new token against the cache), the
//! group's queries are stacked instead: `(B, H_kv, G * L, D)` against the keys as they are,
//! so nothing is expanded at all.

use super::weights::Weights;
use super::LlamaConfig;
use super::LlamaKvCache;
use crate::error::{Error, Result};
use crate::models::gpt::causal_mask;
use crate::nn::{apply_rotary, prefixed, Linear, Module};
use crate::tensor::Tensor;

const OP: &str = "grouped_query_attention";

/// Grouped-query attention: `softmax(q k^T / sqrt(D) + mask) v` where query head `h` attends
/// with key/value head `h / (H / H_kv)` (PyTorch's `scaled_dot_product_attention(...,
/// enable_gqa=True)`, Hugging Face's `repeat_kv` + attention).
///
/// q: `(B, H, L, D)`; k, v: `(B, H_kv, S, D)` with `H` a multiple of `H_kv`; `attn_mask`
/// broadcastable to `(B, H, L, S)` (bool: true = may attend, or additive of q's dtype);
/// `is_causal` lets query `i` see keys `j <= i` (no mask with it); `dropout_p` drops
/// attention weights. Returns `(B, H, L, D)`. Differentiable in q, k and v.
pub fn grouped_query_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
) -> Result<Tensor> {
    for (name, t) in [("query", q), ("key", k), ("value", v)] {
        if t.ndim() != 4 {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} must be (batch, heads, length, head_dim), got {:?}",
                    t.shape()
                ),
            ));
        }
    }
    let (b, h, l, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let hkv = k.shape()[1];
    if hkv == 0 || !h.is_multiple_of(hkv) || v.shape()[1] != hkv {
        return Err(Error::shape(
            OP,
            format!(
                "query heads must be a multiple of the key/value heads: query {:?}, key {:?}, value {:?}",
                q.shape(),
                k.shape(),
                v.shape()
            ),
        ));
    }
    let g = h / hkv;
    let ev = v.shape()[3];
    if attn_mask.is_none() && !is_causal {
        // Every query sees every key alike, so a group's queries can be stacked into one
        // longer query sequence of their key/value head: `(B, H_kv, G * L, D)`. Keys and
        // values are then read once per group, not once per query head (generation's case:
        // one new token against the whole cache).
        let stacked = q.reshape(&[b, hkv, g * l, d])?;
        let y = stacked.scaled_dot_product_attention(k, v, None, dropout_p, false, None)?;
        return y.reshape(&[b, h, l, ev]);
    }
    let q5 = q.reshape(&[b, hkv, g, l, d])?;
    let (k5, v5) = (k.unsqueeze(2)?, v.unsqueeze(2)?);
    let mask = attn_mask.map(|m| group_mask(m, h, hkv)).transpose()?;
    let y = q5.scaled_dot_product_attention(&k5, &v5, mask.as_ref(), dropout_p, is_causal, None)?;
    y.reshape(&[b, h, l, ev])
}

/// A mask broadcastable to `(B, H, L, S)` reshaped to broadcast to `(B, H_kv, G, L, S)`.
fn group_mask(m: &Tensor, h: usize, hkv: usize) -> Result<Tensor> {
    let n = m.ndim();
    if n <= 2 {
        return Ok(m.clone());
    }
    let mut shape = m.shape().to_vec();
    match m.shape()[n - 3] {
        1 => m.unsqueeze(n - 3),
        heads if heads == h => {
            shape.splice(n - 3..n - 2, [hkv, h / hkv]);
            m.reshape(&shape)
        }
        _ => Err(Error::shape(
            OP,
            format!(
                "attn_mask {:?} does not broadcast over {h} query heads",
                m.shape()
            ),
        )),
    }
}

/// One layer's self-attention.
pub struct LlamaAttention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    dropout: f64,
    /// Mistral's sliding window: positions attended to, the query's own included.
    window: Option<usize>,
}

/// Which keys each of `t` queries at positions `past..past + t` may attend to among the
/// `past + t` positions: the earlier ones and itself, and with a `window`, only the last
/// `window` of those (`(t, past + t)` bool; Hugging Face's sliding-window causal mask).
pub(super) fn attention_mask(
    t: usize,
    past: usize,
    window: Option<usize>,
    device: crate::tensor::Device,
) -> Result<Tensor> {
    let causal = causal_mask(t, past, device)?;
    match window {
        Some(w) => causal.triu(past as i64 - w as i64 + 1),
        None => Ok(causal),
    }
}

impl LlamaAttention {
    /// The projections of layer `prefix` (`model.layers.N.self_attn`) from `weights`.
    pub(super) fn new(c: &LlamaConfig, prefix: &str, weights: &mut Weights) -> Result<Self> {
        let (h, hkv, d) = (c.num_attention_heads, c.kv_heads(), c.head_dim());
        let mut proj = |name: &str, inputs: usize, outputs: usize, bias: bool| {
            weights.linear(&format!("{prefix}.{name}"), inputs, outputs, bias)
        };
        let (qkv_bias, o_bias) = (c.qkv_bias(), c.o_bias());
        Ok(LlamaAttention {
            q_proj: proj("q_proj", c.hidden_size, h * d, qkv_bias)?,
            k_proj: proj("k_proj", c.hidden_size, hkv * d, qkv_bias)?,
            v_proj: proj("v_proj", c.hidden_size, hkv * d, qkv_bias)?,
            o_proj: proj("o_proj", h * d, c.hidden_size, o_bias)?,
            heads: h,
            kv_heads: hkv,
            head_dim: d,
            dropout: c.attention_dropout,
            window: c.attention_window(),
        })
    }

    /// x: `(B, T, hidden)`; cos, sin: the rotary tables `(T, head_dim)` of the T positions;
    /// `cache`: this layer's keys and values of earlier positions (and receives these).
    /// Attention dropout applies when `training`.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        cache: Option<(&mut LlamaKvCache, usize)>,
        training: bool,
    ) -> Result<Tensor> {
        let (b, t) = (x.shape()[0], x.shape()[1]);
        let heads = |z: Tensor, n: usize| -> Result<Tensor> {
            z.reshape(&[b, t, n, self.head_dim])?.transpose(1, 2)
        };
        // q: (B, H, T, hd); k, v: (B, Hkv, T, hd) (grouped-query: H a multiple of Hkv).
        let q = heads(self.q_proj.forward(x)?, self.heads)?;
        let k = heads(self.k_proj.forward(x)?, self.kv_heads)?;
        let v = heads(self.v_proj.forward(x)?, self.kv_heads)?;
        let (q, k) = (apply_rotary(&q, cos, sin)?, apply_rotary(&k, cos, sin)?);
        let p = if training { self.dropout } else { 0.0 };
        // A window shorter than what the queries could see needs a mask.
        let windowed = |seen: usize| self.window.filter(|&w| w < seen);
        // y: (B, H, T, hd); the cache's keys and values: (B, Hkv, past + T, hd).
        let y = match cache {
            None => match windowed(t) {
                None => grouped_query_attention(&q, &k, &v, None, p, true)?,
                Some(w) => {
                    let mask = attention_mask(t, 0, Some(w), x.device())?;
                    grouped_query_attention(&q, &k, &v, Some(&mask), p, false)?
                }
            },
            Some((cache, layer)) => {
                let past = cache.len();
                let (k_all, v_all) = cache.append(layer, &k, &v)?;
                // One new token sees every cached position (within its window): no mask.
                let window = windowed(past + t);
                let mask = (t > 1 || window.is_some())
                    .then(|| attention_mask(t, past, window, x.device()))
                    .transpose()?;
                grouped_query_attention(&q, &k_all, &v_all, mask.as_ref(), p, false)?
            }
        };
        // (B, H, T, hd) -> (B, T, H * hd) -> (B, T, hidden).
        let y = y
            .transpose(1, 2)?
            .reshape(&[b, t, (self.heads * self.head_dim)])?;
        self.o_proj.forward(&y)
    }

    /// `q_proj.*`, `k_proj.*`, `v_proj.*`, `o_proj.*`.
    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("q_proj", self.q_proj.named_parameters());
        out.extend(prefixed("k_proj", self.k_proj.named_parameters()));
        out.extend(prefixed("v_proj", self.v_proj.named_parameters()));
        out.extend(prefixed("o_proj", self.o_proj.named_parameters()));
        out
    }
}
