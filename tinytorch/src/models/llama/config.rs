//! `LlamaConfig`: the hyperparameters of a Llama-family model, read from a Hugging Face
//! `config.json` (the fields `transformers.LlamaConfig`, `Qwen2Config` and `MistralConfig`
//! write; unknown fields are ignored). The families differ in two places: Qwen2 has biases
//! on the q/k/v projections (not on o_proj), Mistral attends within a sliding window.
//! What this implementation does not compute (another activation, another model type, RoPE
//! types other than default / linear / llama3) is rejected here, with the field named, rather
//! than silently computed differently.

use super::rope::Rope;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::Path;

/// The hyperparameters of a Llama model (`transformers.LlamaConfig`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LlamaConfig {
    /// `llama` (also when absent), `qwen2` or `mistral`; other model types are rejected.
    #[serde(default)]
    pub model_type: Option<String>,
    /// Rows of the token embedding table (and outputs of the LM head).
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Width of the SwiGLU feed-forward layer.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads per layer.
    pub num_attention_heads: usize,
    /// Key/value heads per layer (grouped-query attention); `num_attention_heads` when absent.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Features per head; `hidden_size / num_attention_heads` when absent.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// The MLP's activation; only `silu` is supported.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// The longest sequence (positions of the rotary embedding).
    #[serde(default = "default_max_position_embeddings")]
    pub max_position_embeddings: usize,
    /// RMSNorm's epsilon.
    #[serde(default = "default_rms_norm_eps")]
    pub rms_norm_eps: f64,
    /// The LM head is the token embedding.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Biases on the q/k/v/o projections.
    #[serde(default)]
    pub attention_bias: bool,
    /// Biases on the MLP's projections.
    #[serde(default)]
    pub mlp_bias: bool,
    /// Dropout on the attention weights in training mode.
    #[serde(default)]
    pub attention_dropout: f64,
    /// Standard deviation of the normal initialisation of weights and embeddings.
    #[serde(default = "default_initializer_range")]
    pub initializer_range: f64,
    /// The padding token, whose embedding row gets no gradient (negative counts from the end,
    /// as `nn.Embedding`'s `padding_idx` does).
    #[serde(default)]
    pub pad_token_id: Option<i64>,
    /// The RoPE base of older config files (newer ones put it in `rope_parameters`).
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// The RoPE scaling of older config files (`null` or a dict with `rope_type` or `type`).
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
    /// The RoPE parameters of transformers 5 (`rope_type`, `rope_theta`, scaling fields).
    #[serde(default)]
    pub rope_parameters: Option<serde_json::Value>,
    /// Mistral: each position attends to itself and the `sliding_window - 1` positions before
    /// it (`null`: to every earlier position). Qwen2 files carry it too, used only with
    /// `use_sliding_window`.
    #[serde(default)]
    pub sliding_window: Option<usize>,
    /// Qwen2: whether layers attend within `sliding_window` (not supported here: rejected).
    #[serde(default)]
    pub use_sliding_window: bool,
}

/// The model families that share Llama's architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `LlamaForCausalLM`.
    Llama,
    /// `Qwen2ForCausalLM`: q/k/v biases.
    Qwen2,
    /// `MistralForCausalLM`: sliding-window attention.
    Mistral,
}

fn default_hidden_act() -> String {
    "silu".into()
}
fn default_max_position_embeddings() -> usize {
    2048
}
fn default_rms_norm_eps() -> f64 {
    1e-6
}
fn default_initializer_range() -> f64 {
    0.02
}

impl LlamaConfig {
    /// A config of the given sizes with every other field at `transformers`' default
    /// (no biases, untied head, RoPE base 10000, epsilon 1e-6).
    pub fn new(
        vocab_size: usize,
        hidden_size: usize,
        intermediate_size: usize,
        num_hidden_layers: usize,
        num_attention_heads: usize,
        num_key_value_heads: usize,
    ) -> LlamaConfig {
        LlamaConfig {
            model_type: Some("llama".into()),
            vocab_size,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads: Some(num_key_value_heads),
            head_dim: None,
            hidden_act: default_hidden_act(),
            max_position_embeddings: default_max_position_embeddings(),
            rms_norm_eps: default_rms_norm_eps(),
            tie_word_embeddings: false,
            attention_bias: false,
            mlp_bias: false,
            attention_dropout: 0.0,
            initializer_range: default_initializer_range(),
            pad_token_id: None,
            rope_theta: None,
            rope_scaling: None,
            rope_parameters: None,
            sliding_window: None,
            use_sliding_window: false,
        }
    }

    /// Read and check a `config.json`. Errors name the file and the field at fault.
    pub fn from_file(path: impl AsRef<Path>) -> Result<LlamaConfig> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(
                "LlamaConfig::from_file",
                format!("cannot read '{}': {e}", path.display()),
            )
        })?;
        Self::from_json(&text).map_err(|e| {
            Error::invalid(
                "LlamaConfig::from_file",
                format!("'{}': {e}", path.display()),
            )
        })
    }

    /// Parse and check the text of a `config.json`.
    pub fn from_json(text: &str) -> Result<LlamaConfig> {
        let config: LlamaConfig = serde_json::from_str(text)
            .map_err(|e| Error::invalid("LlamaConfig::from_json", e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// The family `model_type` names (Llama when absent).
    pub fn family(&self) -> Result<Family> {
        match self.model_type.as_deref() {
            None | Some("llama") => Ok(Family::Llama),
            Some("qwen2") => Ok(Family::Qwen2),
            Some("mistral") => Ok(Family::Mistral),
            Some(t) => Err(Error::invalid(
                "LlamaConfig",
                format!(
                    "model_type '{t}' is not supported (llama, qwen2 and mistral are); its architecture may differ"
                ),
            )),
        }
    }

    /// Biases on the q/k/v projections: Qwen2's always, Llama's with `attention_bias`.
    pub fn qkv_bias(&self) -> bool {
        self.attention_bias || self.model_type.as_deref() == Some("qwen2")
    }

    /// Bias on the output projection (`attention_bias`; never in Qwen2).
    pub fn o_bias(&self) -> bool {
        self.attention_bias
    }

    /// How many positions (itself included) a position attends to, if limited: Mistral's
    /// `sliding_window`.
    pub fn attention_window(&self) -> Option<usize> {
        match self.model_type.as_deref() {
            Some("mistral") => self.sliding_window,
            _ => None,
        }
    }

    /// Key/value heads (`num_key_value_heads`, or one per query head).
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Features per head (`head_dim`, or `hidden_size / num_attention_heads`).
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// The padding row of the embedding, negative ids counted from the end.
    pub fn padding_idx(&self) -> Option<usize> {
        self.pad_token_id
            .map(|p| if p < 0 { p + self.vocab_size as i64 } else { p } as usize)
    }

    /// The rotary embedding's parameters, from `rope_parameters` (transformers 5) or
    /// `rope_theta` and `rope_scaling` (older files).
    pub fn rope(&self) -> Result<Rope> {
        Rope::from_config(self)
    }

    /// Check what the model relies on: positive sizes, heads that group evenly, an even
    /// head width, SiLU, a supported model type and RoPE.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::invalid("LlamaConfig", msg));
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.kv_heads()),
            ("head_dim", self.head_dim()),
            ("max_position_embeddings", self.max_position_embeddings),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return bad(format!("{name} must be positive, got 0"));
        }
        let family = self.family()?;
        if family == Family::Qwen2 && self.use_sliding_window {
            return bad(
                "use_sliding_window: Qwen2's per-layer sliding windows are not supported".into(),
            );
        }
        if self.attention_window() == Some(0) {
            return bad("sliding_window must be positive, got 0".into());
        }
        if self.head_dim.is_none() && !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {} (and no head_dim is given)",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !self.num_attention_heads.is_multiple_of(self.kv_heads()) {
            return bad(format!(
                "num_attention_heads {} is not a multiple of num_key_value_heads {}",
                self.num_attention_heads,
                self.kv_heads()
            ));
        }
        if !self.head_dim().is_multiple_of(2) {
            return bad(format!(
                "head_dim {} must be even for the rotary embedding",
                self.head_dim()
            ));
        }
        if self.hidden_act != "silu" {
            return bad(format!(
                "hidden_act '{}' is not supported (only 'silu')",
                self.hidden_act
            ));
        }
        if self.rms_norm_eps.is_nan() || self.rms_norm_eps <= 0.0 {
            return bad(format!(
                "rms_norm_eps must be positive, got {}",
                self.rms_norm_eps
            ));
        }
        if !(0.0..1.0).contains(&self.attention_dropout) {
            return bad(format!(
                "attention_dropout must be in [0, 1), got {}",
                self.attention_dropout
            ));
        }
        if let Some(p) = self.pad_token_id {
            let v = self.vocab_size as i64;
            if p >= v || p < -v {
                return bad(format!(
                    "pad_token_id {p} is outside the vocabulary of {}",
                    self.vocab_size
                ));
            }
        }
        self.rope().map(|_| ())
    }
}
