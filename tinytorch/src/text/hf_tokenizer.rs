//! Hugging Face tokenizers (`tokenizer.json`, as written by `tokenizers` and `transformers`)
//! through the `tokenizers` crate: text in, padded `(batch, seq)` tensors of token ids, token
//! type ids and attention mask out, ready for a BERT-style encoder.
//!
//! A `tokenizer.json` carries its own truncation and padding settings, which the Python
//! libraries override at call time (sentence-transformers truncates to the model's
//! `max_seq_length` and pads to the longest text of the batch). [`HfTokenizer`] does the same:
//! the file's settings are replaced by [`HfTokenizer::with_max_length`] and batch-longest
//! padding, keeping only the file's pad token.

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::path::Path;
use tokenizers::{
    PaddingDirection, PaddingParams, PaddingStrategy, PostProcessor, Tokenizer, TruncationParams,
    TruncationStrategy,
};

/// A batch of tokenized texts, right-padded to the longest: each tensor is `(batch, seq)` i64.
#[derive(Debug, Clone)]
pub struct TokenBatch {
    /// Token ids; padding positions hold the tokenizer's pad id.
    pub input_ids: Tensor,
    /// Segment ids (0 for a single text); 0 on padding.
    pub token_type_ids: Tensor,
    /// 1 on real tokens (including the special ones), 0 on padding.
    pub attention_mask: Tensor,
    /// The number of real tokens of each text, special tokens included.
    pub lengths: Vec<usize>,
}

/// A tokenizer loaded from a Hugging Face `tokenizer.json`.
pub struct HfTokenizer {
    inner: Tokenizer,
}

impl HfTokenizer {
    /// Load `tokenizer.json` at `path`. Truncation is switched off (see
    /// [`HfTokenizer::with_max_length`]) and padding set to the longest text of each batch,
    /// with the pad token of the file (id 0 when the file names none).
    pub fn from_file(path: impl AsRef<Path>) -> Result<HfTokenizer> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::invalid(
                "HfTokenizer::from_file",
                format!("cannot read tokenizer '{}': {e}", path.display()),
            )
        })?;
        Self::parse(&bytes).map_err(|msg| {
            Error::invalid(
                "HfTokenizer::from_file",
                format!("'{}': {msg}", path.display()),
            )
        })
    }

    /// [`HfTokenizer::from_file`] for the bytes of a `tokenizer.json`.
    pub fn from_bytes(bytes: &[u8]) -> Result<HfTokenizer> {
        Self::parse(bytes).map_err(|msg| Error::invalid("HfTokenizer::from_bytes", msg))
    }

    /// The tokenizer of a `tokenizer.json`'s bytes; the error is a message.
    fn parse(bytes: &[u8]) -> std::result::Result<HfTokenizer, String> {
        // The crate panics (`expect("Helper")`) when its decoder section fails to parse as
        // JSON (a syntax error, invalid UTF-8 in a string); a file that is not wholly valid
        // JSON is turned away here first. (`IgnoredAny` would skip strings unchecked.)
        let json = serde_json::from_slice::<serde_json::Value>(bytes)
            .map_err(|e| format!("not a tokenizer.json: invalid JSON: {e}"))?;
        check_bpe_merges(&json["model"])?;
        let mut inner =
            Tokenizer::from_bytes(bytes).map_err(|e| format!("cannot load tokenizer: {e}"))?;
        // Checked in the crate's own serialised form, where every template is a list of
        // tagged pieces (the file may spell them as strings such as "[CLS]:0 $A").
        if let Some(processor) = inner.get_post_processor() {
            let canonical = serde_json::to_value(processor)
                .map_err(|e| format!("cannot load tokenizer: post_processor: {e}"))?;
            check_templates(&canonical)?;
        }
        let file_padding = inner.get_padding().cloned().unwrap_or_default();
        inner.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            direction: PaddingDirection::Right,
            pad_to_multiple_of: None,
            ..file_padding
        }));
        inner
            .with_truncation(None)
            .map_err(|e| format!("truncation: {e}"))?;
        Ok(HfTokenizer { inner })
    }

    /// Truncate every text to at most `max_length` tokens, special tokens included, cutting
    /// from the end (`tokenizer(..., truncation=True, max_length=max_length)`). Errors when
    /// `max_length` leaves no room beside the special tokens.
    pub fn with_max_length(mut self, max_length: usize) -> Result<HfTokenizer> {
        let special = self.special_tokens();
        if max_length <= special {
            return Err(Error::invalid(
                "HfTokenizer::with_max_length",
                format!(
                    "max_length {max_length} leaves no room for text beside the {special} \
                     special tokens the tokenizer adds"
                ),
            ));
        }
        let params = TruncationParams {
            max_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            ..Default::default()
        };
        self.inner.with_truncation(Some(params)).map_err(|e| {
            Error::invalid(
                "HfTokenizer::with_max_length",
                format!("max_length {max_length}: {e}"),
            )
        })?;
        Ok(self)
    }

    /// The truncation length, `None` when texts are not truncated.
    pub fn max_length(&self) -> Option<usize> {
        self.inner.get_truncation().map(|t| t.max_length)
    }

    /// The number of special tokens added to a single text (2 for BERT's `[CLS] ... [SEP]`).
    pub fn special_tokens(&self) -> usize {
        self.inner
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(false))
    }

    /// The id of `token` in the vocabulary, `None` when it has none.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The token ids of one text, special tokens added and truncation applied.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .inner
            .encode(text, true)
            .map_err(|e| encode_error(text, e))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text of token ids (`tokenizer.decode(ids, skip_special_tokens=...)`); an id
    /// outside the vocabulary is an error.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let vocab = self.inner.get_vocab_size(true) as u32;
        if let Some(bad) = ids.iter().find(|&&i| i >= vocab) {
            return Err(Error::invalid(
                "HfTokenizer::decode",
                format!("token id {bad} is outside the vocabulary of {vocab}"),
            ));
        }
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| Error::invalid("HfTokenizer::decode", e.to_string()))
    }

    /// Tokenize `texts` and pad them to the longest. Errors on an empty slice.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<TokenBatch> {
        if texts.is_empty() {
            return Err(Error::invalid(
                "HfTokenizer::encode_batch",
                "no texts to encode (empty batch)",
            ));
        }
        let encodings = self
            .inner
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::invalid("HfTokenizer::encode_batch", e.to_string()))?;
        let seq = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let batch = encodings.len();
        let mut ids = Vec::with_capacity(batch * seq);
        let mut types = Vec::with_capacity(batch * seq);
        let mut mask = Vec::with_capacity(batch * seq);
        let mut lengths = Vec::with_capacity(batch);
        for e in &encodings {
            // Batch-longest padding makes every encoding `seq` long; checked because the
            // tensors below rely on it.
            if e.len() != seq {
                return Err(Error::invalid(
                    "HfTokenizer::encode_batch",
                    format!(
                        "encodings of unequal length {} and {seq} after padding",
                        e.len()
                    ),
                ));
            }
            ids.extend(e.get_ids().iter().map(|&i| i64::from(i)));
            types.extend(e.get_type_ids().iter().map(|&i| i64::from(i)));
            mask.extend(e.get_attention_mask().iter().map(|&i| i64::from(i)));
            lengths.push(e.get_attention_mask().iter().filter(|&&m| m != 0).count());
        }
        let shape = [batch, seq];
        Ok(TokenBatch {
            input_ids: Tensor::from_vec(ids, &shape)?,
            token_type_ids: Tensor::from_vec(types, &shape)?,
            attention_mask: Tensor::from_vec(mask, &shape)?,
            lengths,
        })
    }
}

/// Check that every special token a `TemplateProcessing` post-processor (alone or inside a
/// `Sequence`) places is one it defines: the crate loads such a template unchecked and
/// panics on the first text it encodes.
fn check_templates(processor: &serde_json::Value) -> std::result::Result<(), String> {
    match processor["type"].as_str() {
        Some("Sequence") => processor["processors"]
            .as_array()
            .into_iter()
            .flatten()
            .try_for_each(check_templates),
        Some("TemplateProcessing") => {
            let defined = &processor["special_tokens"];
            for template in ["single", "pair"] {
                for piece in processor[template].as_array().into_iter().flatten() {
                    if let Some(id) = piece["SpecialToken"]["id"].as_str() {
                        if defined.get(id).is_none() {
                            return Err(format!(
                                "post_processor template '{template}' uses the special token \
                                 {id:?}, which its special_tokens do not define"
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Check that every merge `(a, b)` of a BPE model yields a token of its vocabulary: the crate
/// copies `a` and `b` (less the continuing-subword prefix) into a buffer as long as the
/// longest token before it looks the merged token up, and panics when they do not fit (or
/// slices `b` inside a character when `b` is shorter than the prefix). Merges the crate
/// would refuse anyway (a token not in the vocabulary, a malformed entry) are left to it.
fn check_bpe_merges(model: &serde_json::Value) -> std::result::Result<(), String> {
    let is_bpe = match model["type"].as_str() {
        Some(t) => t == "BPE",
        None => model.get("merges").is_some(),
    };
    let (Some(vocab), Some(merges)) = (model["vocab"].as_object(), model["merges"].as_array())
    else {
        return Ok(());
    };
    if !is_bpe {
        return Ok(());
    }
    let prefix = model["continuing_subword_prefix"].as_str().unwrap_or("");
    // (entry number, a, b) of each well-formed entry: "a b" (exactly one space) or [a, b].
    let pairs = merges.iter().enumerate().filter_map(|(i, m)| match m {
        serde_json::Value::String(line) if !line.starts_with("#version") => {
            let mut parts = line.split(' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), None) => Some((i + 1, a, b)),
                _ => None,
            }
        }
        serde_json::Value::Array(pair) if pair.len() == 2 => {
            Some((i + 1, pair[0].as_str()?, pair[1].as_str()?))
        }
        _ => None,
    });
    for (entry, a, b) in pairs {
        if !vocab.contains_key(a) || !vocab.contains_key(b) {
            continue;
        }
        let rest = b.get(prefix.len()..).ok_or_else(|| {
            format!(
                "BPE merge {entry} ({a:?}, {b:?}): {b:?} is shorter than the continuing-subword \
                 prefix {prefix:?}"
            )
        })?;
        let merged = format!("{a}{rest}");
        if !vocab.contains_key(&merged) {
            return Err(format!(
                "BPE merge {entry} ({a:?}, {b:?}) makes {merged:?}, which is not in the vocabulary"
            ));
        }
    }
    Ok(())
}

/// An encoding failure, naming the start of the text.
fn encode_error(text: &str, e: tokenizers::Error) -> Error {
    let start: String = text.chars().take(40).collect();
    Error::invalid("HfTokenizer::encode", format!("text '{start}': {e}"))
}
