//! `BertConfig`: the hyperparameters of a BERT encoder, read from a Hugging Face
//! `config.json` (the fields `transformers.BertConfig` writes; unknown fields are ignored).

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::Path;

/// The hyperparameters of a BERT encoder (`transformers.BertConfig`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BertConfig {
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; must divide `hidden_size`.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// The feed-forward activation; only `gelu` (exact, with erf) is supported.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// Rows of the position embedding table: the longest input the model accepts.
    pub max_position_embeddings: usize,
    /// Rows of the token type (segment) embedding table.
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    /// LayerNorm's epsilon.
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// Standard deviation of the normal initialisation of weights and embeddings.
    #[serde(default = "default_initializer_range")]
    pub initializer_range: f64,
    /// Id of the padding token.
    #[serde(default)]
    pub pad_token_id: usize,
    /// Only `absolute` position embeddings are supported.
    #[serde(default = "default_position_embedding_type")]
    pub position_embedding_type: String,
}

fn default_hidden_act() -> String {
    "gelu".into()
}
fn default_type_vocab_size() -> usize {
    2
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_initializer_range() -> f64 {
    0.02
}
fn default_position_embedding_type() -> String {
    "absolute".into()
}

impl BertConfig {
    /// Read and check a `config.json`. Errors name the file and the field at fault.
    pub fn from_file(path: impl AsRef<Path>) -> Result<BertConfig> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(
                "BertConfig::from_file",
                format!("cannot read '{}': {e}", path.display()),
            )
        })?;
        Self::from_json(&text).map_err(|e| {
            Error::invalid(
                "BertConfig::from_file",
                format!("'{}': {e}", path.display()),
            )
        })
    }

    /// Parse and check the text of a `config.json`.
    pub fn from_json(text: &str) -> Result<BertConfig> {
        let config: BertConfig = serde_json::from_str(text)
            .map_err(|e| Error::invalid("BertConfig::from_json", e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Check what the model relies on: positive sizes, heads dividing the width, and the
    /// supported activation and position embeddings.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::invalid("BertConfig", msg));
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return bad(format!("{name} must be positive, got 0"));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.hidden_act != "gelu" {
            return bad(format!(
                "hidden_act '{}' is not supported (only 'gelu')",
                self.hidden_act
            ));
        }
        if self.position_embedding_type != "absolute" {
            return bad(format!(
                "position_embedding_type '{}' is not supported (only 'absolute')",
                self.position_embedding_type
            ));
        }
        if self.layer_norm_eps.is_nan() || self.layer_norm_eps <= 0.0 {
            return bad(format!(
                "layer_norm_eps must be positive, got {}",
                self.layer_norm_eps
            ));
        }
        if self.pad_token_id >= self.vocab_size {
            return bad(format!(
                "pad_token_id {} is outside the vocabulary of {}",
                self.pad_token_id, self.vocab_size
            ));
        }
        Ok(())
    }
}
