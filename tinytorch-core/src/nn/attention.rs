//! `nn.MultiheadAttention` with PyTorch's parameter layout (`in_proj_weight`,
//! `in_proj_bias`, `out_proj.weight`, `out_proj.bias`) and mask conventions, computed with
//! the fused `scaled_dot_product_attention`.

use super::init::{constant_, xavier_uniform_};
use super::linear::linear;
use super::module::{prefixed, Module};
use super::Linear;
use crate::error::{Error, Result};
use crate::ops::attention::masked_scores;
use crate::tensor::{DType, Tensor};

/// Masks and switches of one attention call (PyTorch's keyword arguments).
#[derive(Clone, Copy, Default)]
pub struct AttentionArgs<'a> {
    /// `(N, S)`: true marks keys to ignore (padding), or additive floats.
    pub key_padding_mask: Option<&'a Tensor>,
    /// `(L, S)` or `(N * heads, L, S)`: true marks pairs that may NOT attend (PyTorch's MHA
    /// convention, the opposite of `scaled_dot_product_attention`'s), or additive floats.
    pub attn_mask: Option<&'a Tensor>,
    /// Query `i` attends to keys `j <= i` (without an `attn_mask`).
    pub is_causal: bool,
    /// Also return the attention weights (`need_weights`), averaged over heads unless
    /// `per_head_weights`.
    pub need_weights: bool,
    /// Return `(N, heads, L, S)` weights instead of their mean over heads.
    pub per_head_weights: bool,
}

/// Multi-head attention (`torch.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
/// batch_first=...)`), with query, key and value all of `embed_dim` features.
pub struct MultiheadAttention {
    /// `(3 * embed_dim, embed_dim)`: the query, key and value projections stacked.
    pub in_proj_weight: Tensor,
    /// `(3 * embed_dim,)`, when the layer has biases.
    pub in_proj_bias: Option<Tensor>,
    /// The output projection.
    pub out_proj: Linear,
    num_heads: usize,
    dropout: f64,
    batch_first: bool,
    training: bool,
}

impl MultiheadAttention {
    /// PyTorch's initialisation: xavier-uniform input projection, zero biases, the output
    /// projection as `nn.Linear` with a zero bias.
    pub fn new(
        embed_dim: usize,
        num_heads: usize,
        dropout: f64,
        bias: bool,
        batch_first: bool,
    ) -> Result<Self> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::invalid(
                "MultiheadAttention",
                format!("embed_dim {embed_dim} must be divisible by num_heads {num_heads}"),
            ));
        }
        let in_proj_weight =
            Tensor::zeros(&[3 * embed_dim, embed_dim], DType::F32, Default::default())?;
        xavier_uniform_(&in_proj_weight, 1.0)?;
        let in_proj_bias = if bias {
            Some(
                Tensor::zeros(&[3 * embed_dim], DType::F32, Default::default())?
                    .requires_grad_(true)?,
            )
        } else {
            None
        };
        let out_proj = Linear::new(embed_dim, embed_dim, bias)?;
        if let Some(b) = &out_proj.bias {
            constant_(b, 0.0)?;
        }
        Ok(MultiheadAttention {
            in_proj_weight: in_proj_weight.requires_grad_(true)?,
            in_proj_bias,
            out_proj,
            num_heads,
            dropout,
            batch_first,
            training: true,
        })
    }

    /// Number of heads.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// Attention of `query` `(L, N, E)` over `key`/`value` `(S, N, E)` (batch first:
    /// `(N, L, E)`, `(N, S, E)`; unbatched `(L, E)` also works). Returns the output, shaped
    /// like `query`, and the weights when `args.need_weights`.
    pub fn attend(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        args: AttentionArgs,
    ) -> Result<(Tensor, Option<Tensor>)> {
        const OP: &str = "MultiheadAttention";
        let unbatched = query.ndim() == 2;
        let lift = |t: &Tensor| -> Result<Tensor> {
            match (t.ndim(), unbatched, self.batch_first) {
                (2, true, _) => t.unsqueeze(0),
                (3, false, true) => Ok(t.clone()),
                (3, false, false) => t.transpose(0, 1),
                _ => Err(Error::shape(
                    OP,
                    format!(
                        "query, key and value must all be (L, E) or 3-D, got {:?}",
                        t.shape()
                    ),
                )),
            }
        };
        let (q, k, v) = (lift(query)?, lift(key)?, lift(value)?);
        let e = self.in_proj_weight.shape()[1];
        let (n, l, s) = (q.shape()[0], q.shape()[1], k.shape()[1]);
        if q.shape()[2] != e
            || k.shape()[2] != e
            || v.shape()[2] != e
            || k.shape()[..2] != v.shape()[..2]
        {
            return Err(Error::shape(
                OP,
                format!(
                    "query {:?}, key {:?}, value {:?} do not fit embed_dim {e}",
                    q.shape(),
                    k.shape(),
                    v.shape()
                ),
            ));
        }
        let w = self.in_proj_weight.chunk(3, 0)?;
        let b = match &self.in_proj_bias {
            Some(b) => b.chunk(3, 0)?.into_iter().map(Some).collect(),
            None => vec![None, None, None],
        };
        let (h, hd) = (self.num_heads, e / self.num_heads);
        // (N, T, E) -> (N, heads, T, head_dim)
        let heads = |x: &Tensor, i: usize, t: usize| -> Result<Tensor> {
            linear(x, &w[i], b[i].as_ref())?
                .reshape(&[n, t, h, hd])?
                .transpose(1, 2)
        };
        let (qh, kh, vh) = (heads(&q, 0, l)?, heads(&k, 1, s)?, heads(&v, 2, s)?);
        let mask = merged_mask(args, n, h, l, s, q.dtype())?;
        let p = if self.training { self.dropout } else { 0.0 };
        let causal = args.is_causal && mask.is_none();
        let out = qh.scaled_dot_product_attention(&kh, &vh, mask.as_ref(), p, causal, None)?;
        let out = self
            .out_proj
            .call(&out.transpose(1, 2)?.reshape(&[n, l, e])?)?;
        let out = match (unbatched, self.batch_first) {
            (true, _) => out.squeeze_dim(0)?,
            (false, true) => out,
            (false, false) => out.transpose(0, 1)?,
        };
        let weights = if args.need_weights {
            Some(attention_weights(
                &qh,
                &kh,
                mask.as_ref(),
                causal,
                p,
                args.per_head_weights,
                unbatched,
            )?)
        } else {
            None
        };
        Ok((out, weights))
    }
}

/// The key-padding and attention masks as one additive or boolean `scaled_dot_product_attention`
/// mask of shape broadcastable to `(N, heads, L, S)` (true = may attend).
fn merged_mask(
    args: AttentionArgs,
    n: usize,
    h: usize,
    l: usize,
    s: usize,
    dtype: DType,
) -> Result<Option<Tensor>> {
    const OP: &str = "MultiheadAttention";
    // MHA's boolean masks mark what is forbidden; turn every mask into additive floats.
    let additive = |m: &Tensor| -> Result<Tensor> {
        if m.dtype() == DType::Bool {
            Tensor::zeros(m.shape(), dtype, m.device())?.masked_fill(m, f64::NEG_INFINITY)
        } else {
            m.to_dtype(dtype)
        }
    };
    let mut mask: Option<Tensor> = None;
    if let Some(m) = args.attn_mask {
        let m = additive(m)?;
        let m = match m.shape() {
            [a, b] if *a == l && *b == s => m,
            [nh, a, b] if *nh == n * h && *a == l && *b == s => m.reshape(&[n, h, l, s])?,
            other => {
                return Err(Error::shape(
                    OP,
                    format!(
                        "attn_mask must be ({l}, {s}) or ({}, {l}, {s}), got {other:?}",
                        n * h
                    ),
                ))
            }
        };
        mask = Some(m);
    }
    if let Some(kp) = args.key_padding_mask {
        if kp.shape() != [n, s] {
            return Err(Error::shape(
                OP,
                format!("key_padding_mask must be ({n}, {s}), got {:?}", kp.shape()),
            ));
        }
        let kp = additive(kp)?.reshape(&[n, 1, 1, s])?;
        mask = Some(match mask {
            Some(m) => m.add(&kp)?,
            None => kp,
        });
    }
    Ok(mask)
}

/// `softmax(q k^T / sqrt(d) + mask)` (what `need_weights` returns), averaged over heads
/// unless `per_head`.
fn attention_weights(
    qh: &Tensor,
    kh: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    dropout: f64,
    per_head: bool,
    unbatched: bool,
) -> Result<Tensor> {
    let hd = qh.shape()[3] as f64;
    let scores = masked_scores(qh, kh, mask, causal, 1.0 / hd.sqrt())?;
    let mut w = scores.softmax(-1)?;
    if dropout > 0.0 {
        w = super::functional::dropout(&w, dropout, true)?;
    }
    if !per_head {
        w = w.mean(&[1], false)?;
    }
    if unbatched {
        w = w.squeeze_dim(0)?;
    }
    Ok(w)
}

impl Module for MultiheadAttention {
    /// Self-attention of `x` without masks.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.attend(x, x, x, AttentionArgs::default())?.0)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![("in_proj_weight".to_string(), self.in_proj_weight.clone())];
        if let Some(b) = &self.in_proj_bias {
            out.push(("in_proj_bias".to_string(), b.clone()));
        }
        out.extend(prefixed("out_proj", self.out_proj.named_parameters()));
        out
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![("out_proj".into(), &self.out_proj)]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.out_proj.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
