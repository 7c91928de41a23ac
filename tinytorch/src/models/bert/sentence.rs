//! `SentenceEncoder`: text in, sentence embeddings out, as sentence-transformers'
//! `SentenceTransformer.encode` computes them: tokenize (truncating to `max_seq_length`),
//! run the encoder on length-sorted batches padded to their longest text, mean-pool over the
//! attention mask, L2-normalise when the model's pipeline says so.

use super::pooling::{l2_normalize, mean_pooling};
use super::sentence_config::SentenceConfig;
use super::{BertConfig, BertModel};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::text::hf_tokenizer::HfTokenizer;
use std::path::Path;

/// A BERT sentence-embedding model loaded from a sentence-transformers directory.
pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: HfTokenizer,
    normalize: bool,
}

impl SentenceEncoder {
    /// Load the model of a sentence-transformers (or plain Hugging Face BERT) directory:
    /// `config.json`, `model.safetensors`, `tokenizer.json` and the files read by
    /// [`SentenceConfig::from_dir`]. Texts are truncated to `max_seq_length` tokens, or to
    /// the model's `max_position_embeddings` when the directory does not say.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<SentenceEncoder> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(Error::invalid(
                "SentenceEncoder::from_dir",
                format!("model directory '{}' does not exist", dir.display()),
            ));
        }
        let st = SentenceConfig::from_dir(dir)?;
        let model = BertModel::from_pretrained(&st.transformer_dir)?;
        let config = model.config();
        let max_seq_length = resolve_max_seq_length(&st, config)?;
        if let Some(d) = st.embedding_dim.filter(|&d| d != config.hidden_size) {
            return Err(Error::invalid(
                "SentenceEncoder::from_dir",
                format!(
                    "the pooling config's word_embedding_dimension {d} differs from the \
                     model's hidden_size {}",
                    config.hidden_size
                ),
            ));
        }
        let tokenizer = HfTokenizer::from_file(st.transformer_dir.join("tokenizer.json"))?
            .with_max_length(max_seq_length)?;
        Ok(SentenceEncoder {
            model,
            tokenizer,
            normalize: st.normalize,
        })
    }

    /// The length of the embeddings (the model's hidden size).
    pub fn dim(&self) -> usize {
        self.model.config().hidden_size
    }

    /// The tokenizer, with its truncation set to the model's `max_seq_length`.
    pub fn tokenizer(&self) -> &HfTokenizer {
        &self.tokenizer
    }

    /// The encoder.
    pub fn model(&self) -> &BertModel {
        &self.model
    }

    /// True when embeddings are scaled to unit length.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// Embed `texts` in batches of at most `batch_size`, returning one vector per text in
    /// the input order. As in sentence-transformers, texts are sorted by length (longest
    /// first) before batching, so that each batch pads little.
    pub fn encode<S: AsRef<str>>(&self, texts: &[S], batch_size: usize) -> Result<Vec<Vec<f32>>> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "SentenceEncoder::encode",
                "batch_size must be positive, got 0",
            ));
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        // Characters, as sentence-transformers' `_text_length` counts; a stable sort keeps
        // equal lengths in input order.
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].as_ref().chars().count()));
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(batch_size) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_ref()).collect();
            let rows = self.embed_batch(&batch)?.to_vec::<f32>()?;
            for (&i, row) in chunk.iter().zip(rows.chunks_exact(self.dim())) {
                out[i] = row.to_vec();
            }
        }
        Ok(out)
    }

    /// Embed one batch, padded to its longest text: (len, hidden) f32.
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Tensor> {
        let _guard = no_grad();
        // sentence-transformers strips surrounding whitespace; BERT's tokenizer drops it too,
        // so this only keeps the two pipelines visibly the same.
        let stripped: Vec<&str> = texts.iter().map(|t| t.trim()).collect();
        let batch = self.tokenizer.encode_batch(&stripped)?;
        let hidden = self.model.forward_with_mask(
            &batch.input_ids,
            Some(&batch.token_type_ids),
            Some(&batch.attention_mask),
        )?;
        let pooled = mean_pooling(&hidden, &batch.attention_mask)?;
        if self.normalize {
            l2_normalize(&pooled, 1)
        } else {
            Ok(pooled)
        }
    }
}

/// The truncation length: the directory's `max_seq_length`, which must fit the position
/// table, or the table's size.
fn resolve_max_seq_length(st: &SentenceConfig, config: &BertConfig) -> Result<usize> {
    let positions = config.max_position_embeddings;
    match st.max_seq_length {
        None => Ok(positions),
        Some(n) if n <= positions => Ok(n),
        Some(n) => Err(Error::invalid(
            "SentenceEncoder::from_dir",
            format!("max_seq_length {n} exceeds the model's max_position_embeddings {positions}"),
        )),
    }
}
