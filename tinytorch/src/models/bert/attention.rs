//! BERT's multi-head self-attention (`BertSelfAttention`): project to queries, keys and
//! values, split into heads, attend with an additive padding mask, merge the heads.
//!
//! The attention itself is one private function, [`attention`], written with matmul,
//! an additive mask and softmax; a fused scaled-dot-product kernel can replace it there alone.

use super::parts::{add_into, Dense, Init};
use super::BertConfig;
use crate::error::{Error, Result};
use crate::nn::prefixed;
use crate::tensor::{DType, Tensor};

/// `softmax(q k^T / sqrt(d) + mask) v` for every batch entry and head.
///
/// q, k, v: (B, heads, T, d); mask: (B, 1, 1, T), 0 on tokens and a huge negative number on
/// padding, so padded keys get zero weight; `None` when nothing is padded. Returns
/// (B, heads, T, d). The scale is applied to q, which is T/d times smaller than the scores
/// (as PyTorch's scaled_dot_product_attention does; Hugging Face's eager path scales the
/// scores, which differs only by rounding).
fn attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
    let d = q.shape()[3];
    let q = q.mul_scalar(1.0 / (d as f64).sqrt())?;
    let scores = q.matmul(&k.transpose(-2, -1)?)?; // (B, heads, T, T)
    let scores = match mask {
        Some(m) => add_into(scores, m)?,
        None => scores,
    };
    scores.softmax(-1)?.matmul(v)
}

/// The additive mask of [`attention`] from a (B, T) mask of 1 (token) and 0 (padding), in
/// any dtype: `(1 - mask) * f32::MIN`, shaped (B, 1, 1, T) to broadcast over heads and
/// queries; `None` when every position is a token (no padding: adding zeros would only cost
/// a pass over the scores, and Hugging Face drops such a mask too). Hugging Face uses the
/// same constant (`torch.finfo(float32).min`): adding it to a score leaves a finite number
/// whose exponential underflows to exactly 0 in softmax.
pub(super) fn additive_mask(attention_mask: &Tensor) -> Result<Option<Tensor>> {
    let mask = attention_mask.to_dtype(DType::F32)?;
    if mask.to_vec::<f32>()?.iter().all(|&m| m == 1.0) {
        return Ok(None);
    }
    let (b, t) = (mask.shape()[0], mask.shape()[1]);
    let additive = mask
        .rsub_scalar(1.0)?
        .mul_scalar(f32::MIN as f64)?
        .reshape(&[b, 1, 1, t])?;
    Ok(Some(additive))
}

/// The self-attention of one layer, with its output projection, LayerNorm and residual
/// (`BertAttention`: `BertSelfAttention` + `BertSelfOutput`) living in `layer.rs`.
pub(super) struct SelfAttention {
    query: Dense,
    key: Dense,
    value: Dense,
    heads: usize,
}

impl SelfAttention {
    /// Projections for `config`'s width and heads.
    pub(super) fn new(config: &BertConfig, init: Init) -> Result<SelfAttention> {
        let h = config.hidden_size;
        Ok(SelfAttention {
            query: Dense::new(h, h, init)?,
            key: Dense::new(h, h, init)?,
            value: Dense::new(h, h, init)?,
            heads: config.num_attention_heads,
        })
    }

    /// x: (B, T, hidden), mask: (B, 1, 1, T) additive or `None` -> (B, T, hidden), heads
    /// concatenated.
    pub(super) fn forward(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let q = self.split_heads(&self.query.forward(x)?)?;
        let k = self.split_heads(&self.key.forward(x)?)?;
        let v = self.split_heads(&self.value.forward(x)?)?;
        let ctx = attention(&q, &k, &v, mask)?; // (B, heads, T, d)
        let (b, t, hidden) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        ctx.transpose(1, 2)?.reshape(&[b, t, hidden])
    }

    /// (B, T, hidden) -> (B, heads, T, hidden / heads), as a view.
    fn split_heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, hidden) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        if !hidden.is_multiple_of(self.heads) {
            return Err(Error::shape(
                "BertSelfAttention",
                format!(
                    "hidden size {hidden} does not split into {} heads",
                    self.heads
                ),
            ));
        }
        let d = hidden / self.heads;
        x.view(&[b, t, self.heads, d])?.transpose(1, 2)
    }

    /// `query.*`, `key.*`, `value.*`: Hugging Face's names under `attention.self`.
    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("query", self.query.named_parameters());
        out.extend(prefixed("key", self.key.named_parameters()));
        out.extend(prefixed("value", self.value.named_parameters()));
        out
    }
}
