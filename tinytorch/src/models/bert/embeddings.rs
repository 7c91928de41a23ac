//! `BertEmbeddings`: word + token type + absolute position embeddings, then LayerNorm
//! (dropout is the identity at inference and is left out).

use super::parts::{add_into, Init, Norm};
use super::BertConfig;
use crate::error::{Error, Result};
use crate::nn::functional::embedding;
use crate::nn::prefixed;
use crate::tensor::Tensor;

/// The embedding block of BERT (`transformers.models.bert.modeling_bert.BertEmbeddings`).
pub struct BertEmbeddings {
    /// `(vocab_size, hidden)`.
    word_embeddings: Tensor,
    /// `(max_position_embeddings, hidden)`.
    position_embeddings: Tensor,
    /// `(type_vocab_size, hidden)`.
    token_type_embeddings: Tensor,
    layer_norm: Norm,
}

impl BertEmbeddings {
    /// The tables and LayerNorm for `config`.
    pub fn new(config: &BertConfig, init: Init) -> Result<BertEmbeddings> {
        let h = config.hidden_size;
        Ok(BertEmbeddings {
            word_embeddings: init.weight(&[config.vocab_size, h])?,
            position_embeddings: init.weight(&[config.max_position_embeddings, h])?,
            token_type_embeddings: init.weight(&[config.type_vocab_size, h])?,
            layer_norm: Norm::new(h, config.layer_norm_eps, init)?,
        })
    }

    /// input_ids, token_type_ids: (B, T) i64 -> (B, T, hidden). Token `t` gets position `t`;
    /// errors when `T` exceeds the position table or an id is out of its table's range.
    pub fn forward(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        if input_ids.ndim() != 2 || token_type_ids.shape() != input_ids.shape() {
            return Err(Error::shape(
                "BertEmbeddings",
                format!(
                    "expected input_ids and token_type_ids of one shape (batch, seq), got {:?} \
                     and {:?}",
                    input_ids.shape(),
                    token_type_ids.shape()
                ),
            ));
        }
        let seq = input_ids.shape()[1];
        let max = self.position_embeddings.shape()[0];
        if seq > max {
            return Err(Error::invalid(
                "BertEmbeddings",
                format!(
                    "sequence of {seq} tokens is longer than the {max} positions the model \
                     has (max_position_embeddings); truncate the input"
                ),
            ));
        }
        let words = embedding(input_ids, &self.word_embeddings, None)?;
        let types = embedding(token_type_ids, &self.token_type_embeddings, None)?;
        // Positions 0..T are the first T rows of the table: a view, no lookup needed.
        // (T, hidden) broadcasts over the batch. Summed in Hugging Face's order.
        let positions = self.position_embeddings.narrow(0, 0, seq)?;
        let x = add_into(add_into(words, &types)?, &positions)?;
        self.layer_norm.forward(&x)
    }

    /// Hugging Face's names (`word_embeddings.weight`, ..., `LayerNorm.bias`).
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![
            (
                "word_embeddings.weight".into(),
                self.word_embeddings.clone(),
            ),
            (
                "position_embeddings.weight".into(),
                self.position_embeddings.clone(),
            ),
            (
                "token_type_embeddings.weight".into(),
                self.token_type_embeddings.clone(),
            ),
        ];
        out.extend(prefixed("LayerNorm", self.layer_norm.named_parameters()));
        out
    }
}
