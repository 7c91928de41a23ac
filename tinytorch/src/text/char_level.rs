//! A character-level tokenizer: one id per distinct character of the training text, in
//! sorted order (as in nanoGPT's shakespeare_char).

use super::Tokenizer;
use crate::error::{Error, Result};
use std::collections::{BTreeSet, HashMap};

/// Characters to ids and back.
#[derive(Clone, Debug, PartialEq)]
pub struct CharTokenizer {
    chars: Vec<char>,
    ids: HashMap<char, usize>,
}

impl CharTokenizer {
    /// The vocabulary of `text`: its distinct characters, sorted.
    pub fn fit(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect::<BTreeSet<_>>().into_iter().collect();
        CharTokenizer::from_chars(chars)
    }

    fn from_chars(chars: Vec<char>) -> Self {
        let ids = chars.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        CharTokenizer { chars, ids }
    }

    pub(super) fn from_json(v: &serde_json::Value) -> Result<Self> {
        let s = v["chars"]
            .as_str()
            .ok_or_else(|| Error::invalid("tokenizer", "char tokenizer JSON lacks \"chars\""))?;
        Ok(CharTokenizer::from_chars(s.chars().collect()))
    }
}

impl Tokenizer for CharTokenizer {
    fn vocab_size(&self) -> usize {
        self.chars.len()
    }

    fn encode(&self, text: &str) -> Result<Vec<usize>> {
        text.chars()
            .map(|c| {
                self.ids.get(&c).copied().ok_or_else(|| {
                    Error::invalid(
                        "encode",
                        format!("character {c:?} is not in the vocabulary"),
                    )
                })
            })
            .collect()
    }

    fn decode(&self, ids: &[usize]) -> Result<String> {
        ids.iter()
            .map(|&i| {
                self.chars.get(i).copied().ok_or_else(|| {
                    Error::index(
                        "decode",
                        format!("token {i} >= vocab size {}", self.chars.len()),
                    )
                })
            })
            .collect()
    }

    fn to_json(&self) -> String {
        serde_json::json!({"kind": "char", "chars": self.chars.iter().collect::<String>()})
            .to_string()
    }
}
