//! `BertLayer`: one post-norm transformer encoder block,
//! `h = LN(x + W_o attn(x)); out = LN(h + W_2 gelu(W_1 h))` (dropout, the identity at
//! inference, is left out).

use super::attention::SelfAttention;
use super::parts::{add_into, Dense, Init, Norm};
use super::BertConfig;
use crate::error::{Error, Result};
use crate::nn::prefixed;
use crate::tensor::Tensor;

/// One encoder layer (`transformers.models.bert.modeling_bert.BertLayer`).
pub struct BertLayer {
    attention: SelfAttention,
    /// `attention.output.dense`: projects the concatenated heads.
    attention_output: Dense,
    /// `attention.output.LayerNorm`.
    attention_norm: Norm,
    /// `intermediate.dense`: hidden -> intermediate.
    intermediate: Dense,
    /// `output.dense`: intermediate -> hidden.
    output: Dense,
    /// `output.LayerNorm`.
    output_norm: Norm,
}

impl BertLayer {
    /// A layer of `config`'s sizes.
    pub fn new(config: &BertConfig, init: Init) -> Result<BertLayer> {
        let (h, i, eps) = (
            config.hidden_size,
            config.intermediate_size,
            config.layer_norm_eps,
        );
        Ok(BertLayer {
            attention: SelfAttention::new(config, init)?,
            attention_output: Dense::new(h, h, init)?,
            attention_norm: Norm::new(h, eps, init)?,
            intermediate: Dense::new(h, i, init)?,
            output: Dense::new(i, h, init)?,
            output_norm: Norm::new(h, eps, init)?,
        })
    }

    /// x: (B, T, hidden), mask: (B, 1, 1, T) additive (see `attention.rs`), `None` without
    /// padding -> (B, T, hidden).
    pub fn forward(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let hidden = self.attention_norm.dim();
        if x.ndim() != 3 || x.shape()[2] != hidden {
            return Err(Error::shape(
                "BertLayer",
                format!(
                    "expected x of shape (batch, seq, {hidden}), got {:?}",
                    x.shape()
                ),
            ));
        }
        let attended = self.attention.forward(x, mask)?;
        let projected = self.attention_output.forward(&attended)?;
        let h = self.attention_norm.forward(&add_into(projected, x)?)?;
        // Hugging Face's "gelu" is the exact, erf-based GELU.
        let inner = self.intermediate.forward(&h)?.gelu()?; // (B, T, intermediate)
        let out = self.output.forward(&inner)?;
        self.output_norm.forward(&add_into(out, &h)?)
    }

    /// Hugging Face's names, relative to `encoder.layer.N`.
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("attention.self", self.attention.named_parameters());
        out.extend(prefixed(
            "attention.output.dense",
            self.attention_output.named_parameters(),
        ));
        out.extend(prefixed(
            "attention.output.LayerNorm",
            self.attention_norm.named_parameters(),
        ));
        out.extend(prefixed(
            "intermediate.dense",
            self.intermediate.named_parameters(),
        ));
        out.extend(prefixed("output.dense", self.output.named_parameters()));
        out.extend(prefixed(
            "output.LayerNorm",
            self.output_norm.named_parameters(),
        ));
        out
    }
}
