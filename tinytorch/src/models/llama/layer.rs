//! `LlamaDecoderLayer`: one pre-norm block, `h = x + attn(norm_1(x))`,
//! `out = h + mlp(norm_2(h))` with RMSNorm and the SwiGLU MLP, and Llama's RMSNorm.

use super::attention::LlamaAttention;
use super::weights::{Kind, Weights};
use super::LlamaConfig;
use super::LlamaKvCache;
use crate::error::Result;
use crate::nn::functional::rms_norm;
use crate::nn::{prefixed, Module, SwiGlu};
use crate::tensor::{DType, Tensor};

/// `LlamaRMSNorm`: `weight * x / sqrt(mean(x^2) + eps)` over the last dim. Half-precision
/// inputs are normalised in f32 and rounded back before the weight is applied, as in
/// Hugging Face; f32 and f64 inputs go straight through `rms_norm`.
pub(super) struct LlamaRmsNorm {
    weight: Tensor,
    eps: f64,
}

impl LlamaRmsNorm {
    /// The norm `name` (`name.weight`) of `dim` features.
    pub(super) fn new(name: &str, dim: usize, eps: f64, weights: &mut Weights) -> Result<Self> {
        Ok(LlamaRmsNorm {
            weight: weights.take(&format!("{name}.weight"), &[dim], Kind::Norm)?,
            eps,
        })
    }

    /// x: `(..., dim)`.
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dim = [self.weight.shape()[0]];
        match x.dtype() {
            DType::F16 | DType::BF16 => {
                rms_norm(&x.to_dtype(DType::F32)?, &dim, None, Some(self.eps))?
                    .to_dtype(x.dtype())?
                    .mul(&self.weight)
            }
            _ => rms_norm(x, &dim, Some(&self.weight), Some(self.eps)),
        }
    }

    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![("weight".into(), self.weight.clone())]
    }
}

/// One decoder layer (`transformers.models.llama.modeling_llama.LlamaDecoderLayer`).
pub struct LlamaDecoderLayer {
    input_layernorm: LlamaRmsNorm,
    self_attn: LlamaAttention,
    post_attention_layernorm: LlamaRmsNorm,
    mlp: SwiGlu,
}

impl LlamaDecoderLayer {
    /// Layer `index` of `config` from `weights`.
    pub(super) fn new(c: &LlamaConfig, index: usize, weights: &mut Weights) -> Result<Self> {
        let p = format!("model.layers.{index}");
        let (h, i, eps) = (c.hidden_size, c.intermediate_size, c.rms_norm_eps);
        Ok(LlamaDecoderLayer {
            input_layernorm: LlamaRmsNorm::new(&format!("{p}.input_layernorm"), h, eps, weights)?,
            self_attn: LlamaAttention::new(c, &format!("{p}.self_attn"), weights)?,
            post_attention_layernorm: LlamaRmsNorm::new(
                &format!("{p}.post_attention_layernorm"),
                h,
                eps,
                weights,
            )?,
            mlp: SwiGlu {
                gate_proj: weights.linear(&format!("{p}.mlp.gate_proj"), h, i, c.mlp_bias)?,
                up_proj: weights.linear(&format!("{p}.mlp.up_proj"), h, i, c.mlp_bias)?,
                down_proj: weights.linear(&format!("{p}.mlp.down_proj"), i, h, c.mlp_bias)?,
            },
        })
    }

    /// x: `(B, T, hidden)`; cos, sin: rotary tables of the T positions; `cache`: this layer's
    /// slot in the key/value cache.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        cache: Option<(&mut LlamaKvCache, usize)>,
        training: bool,
    ) -> Result<Tensor> {
        let attn =
            self.self_attn
                .forward(&self.input_layernorm.forward(x)?, cos, sin, cache, training)?;
        // h, m: (B, T, hidden), the residual stream after attention and the MLP's output.
        let h = x.add(&attn)?;
        let m = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        h.add(&m)
    }

    /// Hugging Face's names relative to `model.layers.N`.
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("self_attn", self.self_attn.named_parameters());
        out.extend(prefixed("mlp", self.mlp.named_parameters()));
        out.extend(prefixed(
            "input_layernorm",
            self.input_layernorm.named_parameters(),
        ));
        out.extend(prefixed(
            "post_attention_layernorm",
            self.post_attention_layernorm.named_parameters(),
        ));
        out
    }
}
