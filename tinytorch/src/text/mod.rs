//! Text for the language models: tokenizers that turn strings into token ids and back, and
//! Hugging Face tokenizer.json files through the `tokenizers` crate (`hf_tokenizer`).

mod bpe;
mod char_level;
pub mod hf_tokenizer;

pub use bpe::BpeTokenizer;
pub use char_level::CharTokenizer;

use crate::error::Result;

/// Strings to token ids and back.
pub trait Tokenizer {
    /// Number of distinct token ids.
    fn vocab_size(&self) -> usize;
    /// The token ids of `text`.
    fn encode(&self, text: &str) -> Result<Vec<usize>>;
    /// The text of token ids.
    fn decode(&self, ids: &[usize]) -> Result<String>;
    /// The tokenizer as JSON (stored in checkpoints).
    fn to_json(&self) -> String;
}

/// A tokenizer from the JSON of [`Tokenizer::to_json`] (either kind).
pub fn tokenizer_from_json(json: &str) -> Result<Box<dyn Tokenizer>> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| crate::Error::invalid("tokenizer", format!("bad tokenizer JSON: {e}")))?;
    match v["kind"].as_str() {
        Some("char") => Ok(Box::new(CharTokenizer::from_json(&v)?)),
        Some("bpe") => Ok(Box::new(BpeTokenizer::from_json(&v)?)),
        other => Err(crate::Error::invalid(
            "tokenizer",
            format!("unknown tokenizer kind {other:?}"),
        )),
    }
}
