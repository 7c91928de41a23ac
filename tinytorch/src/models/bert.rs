//! BERT encoders (Devlin et al. 2018) with Hugging Face's parameter names, so that a
//! `model.safetensors` written by `transformers` loads directly, and sentence embeddings as
//! sentence-transformers computes them (mean pooling, L2 normalisation).
//!
//! ```no_run
//! use tinytorch::models::bert::SentenceEncoder;
//!
//! # fn main() -> tinytorch::Result<()> {
//! // A sentence-transformers model directory: config.json, model.safetensors,
//! // tokenizer.json, and optionally modules.json, sentence_bert_config.json, 1_Pooling/.
//! let encoder = SentenceEncoder::from_dir("all-MiniLM-L6-v2")?;
//! let vectors = encoder.encode(&["A man is eating food.", "A man is riding a horse."], 32)?;
//! assert_eq!(vectors[0].len(), 384);
//! # Ok(())
//! # }
//! ```
//!
//! Files: `bert/config.rs` (config.json), `bert/parts.rs` (dense and LayerNorm pieces),
//! `bert/embeddings.rs`, `bert/attention.rs`, `bert/layer.rs`, `bert/pooling.rs`,
//! `bert/sentence.rs` (the sentence-transformers pipeline), `bert/sentence_config.rs` (its
//! config files); this file
//! holds the encoder and its loading.

mod attention;
mod config;
mod embeddings;
mod layer;
mod parts;
mod pooling;
mod sentence;
mod sentence_config;

pub use config::BertConfig;
pub use embeddings::BertEmbeddings;
pub use layer::BertLayer;
pub use parts::Init;
pub use pooling::{l2_normalize, mean_pooling};
pub use sentence::SentenceEncoder;
pub use sentence_config::SentenceConfig;

use crate::error::{Error, Result};
use crate::io::load_safetensors;
use crate::nn::{prefixed, Module};
use crate::tensor::{DType, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// Keys of Hugging Face BERT checkpoints that this encoder does not use: the pooler (a dense
/// layer on `[CLS]` for classification heads, unused by mean pooling) and the `position_ids`
/// buffer (always `0..max_position_embeddings`).
fn is_unused_key(key: &str) -> bool {
    key.starts_with("pooler.") || key == "embeddings.position_ids"
}

/// A BERT encoder: embeddings and `num_hidden_layers` post-norm transformer layers
/// (`transformers.BertModel` without the pooler). The output is the last hidden state.
pub struct BertModel {
    config: BertConfig,
    embeddings: BertEmbeddings,
    layers: Vec<BertLayer>,
    training: bool,
}

impl BertModel {
    /// A model of `config`'s sizes with parameters filled by `init`
    /// ([`Init::Normal`] for BERT's own initialisation).
    pub fn new(config: BertConfig, init: Init) -> Result<BertModel> {
        config.validate()?;
        let embeddings = BertEmbeddings::new(&config, init)?;
        let layers = (0..config.num_hidden_layers)
            .map(|_| BertLayer::new(&config, init))
            .collect::<Result<Vec<_>>>()?;
        Ok(BertModel {
            config,
            embeddings,
            layers,
            training: true,
        })
    }

    /// A model of `config` with the weights of a Hugging Face `model.safetensors`. Every
    /// parameter must be in the file with its shape; keys the encoder does not use other than
    /// the pooler and `position_ids` are errors too, since they mean a different model.
    pub fn from_safetensors(config: BertConfig, path: impl AsRef<Path>) -> Result<BertModel> {
        let path = path.as_ref();
        let state: HashMap<String, Tensor> = load_safetensors(path)?
            .into_iter()
            .filter(|(k, _)| !is_unused_key(k))
            .collect();
        let model = BertModel::new(config, Init::Zeros)?;
        if let Some((name, t)) = state.iter().find(|(_, t)| t.dtype() != DType::F32) {
            return Err(Error::dtype(
                "BertModel::from_safetensors",
                format!(
                    "'{}': tensor '{name}' is {}, only F32 checkpoints are supported",
                    path.display(),
                    t.dtype()
                ),
            ));
        }
        model.load_state_dict(&state, true).map_err(|e| {
            Error::invalid(
                "BertModel::from_safetensors",
                format!("'{}' does not fit the config: {e}", path.display()),
            )
        })?;
        Ok(model)
    }

    /// `config.json` and `model.safetensors` from a Hugging Face model directory
    /// (`BertModel.from_pretrained(dir)`), in evaluation mode.
    pub fn from_pretrained(dir: impl AsRef<Path>) -> Result<BertModel> {
        let dir = dir.as_ref();
        let config = BertConfig::from_file(dir.join("config.json"))?;
        let mut model = BertModel::from_safetensors(config, dir.join("model.safetensors"))?;
        model.eval();
        Ok(model)
    }

    /// The hyperparameters.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The last hidden state, (B, T, hidden).
    ///
    /// input_ids: (B, T) i64; token_type_ids: (B, T) i64, zeros when `None`;
    /// attention_mask: (B, T), 1 on tokens and 0 on padding (any dtype), all ones when `None`.
    /// Padded positions do not influence the others; their own outputs are meaningless.
    pub fn forward_with_mask(
        &self,
        input_ids: &Tensor,
        token_type_ids: Option<&Tensor>,
        attention_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        const OP: &str = "BertModel::forward";
        let shape = input_ids.shape();
        if shape.len() != 2 || shape[0] == 0 || shape[1] == 0 {
            return Err(Error::shape(
                OP,
                format!("input_ids must be (batch, seq) with both positive, got {shape:?}"),
            ));
        }
        for (name, t) in [
            ("token_type_ids", token_type_ids),
            ("attention_mask", attention_mask),
        ] {
            if let Some(t) = t.filter(|t| t.shape() != shape) {
                return Err(Error::shape(
                    OP,
                    format!(
                        "{name} {:?} must have the shape of input_ids {shape:?}",
                        t.shape()
                    ),
                ));
            }
        }
        let zeros;
        let token_type_ids = match token_type_ids {
            Some(t) => t,
            None => {
                zeros = input_ids.zeros_like()?;
                &zeros
            }
        };
        let mask = match attention_mask {
            Some(m) => attention::additive_mask(m)?,
            None => None,
        };
        let mut h = self.embeddings.forward(input_ids, token_type_ids)?;
        for layer in &self.layers {
            h = layer.forward(&h, mask.as_ref())?;
        }
        Ok(h)
    }
}

impl Module for BertModel {
    /// The last hidden state of unpadded `input_ids` (B, T): every token attended, segment 0.
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        self.forward_with_mask(input_ids, None, None)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("embeddings", self.embeddings.named_parameters());
        for (i, layer) in self.layers.iter().enumerate() {
            out.extend(prefixed(
                &format!("encoder.layer.{i}"),
                layer.named_parameters(),
            ));
        }
        out
    }

    fn set_training(&mut self, training: bool) {
        // Dropout is not modelled, so the mode changes nothing in the computation.
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
