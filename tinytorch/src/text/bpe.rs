//! A small byte-level BPE tokenizer (as GPT-2's, without its regex): the base vocabulary is
//! the 256 bytes; training repeatedly merges the most frequent adjacent pair into a new
//! token. Text is first cut into chunks at spaces (a space starts the next chunk), so merges
//! never cross words. Encoding applies the merges in the order they were learned.

use super::Tokenizer;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// Learned merges: token `256 + i` is the pair `merges[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BpeTokenizer {
    merges: Vec<(usize, usize)>,
    ranks: HashMap<(usize, usize), usize>,
    /// The bytes of every token.
    bytes: Vec<Vec<u8>>,
}

/// Chunks of `text`: words with the space before them attached.
fn chunks(text: &str) -> Vec<&[u8]> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..b.len() {
        if b[i] == b' ' && b[i - 1] != b' ' {
            out.push(&b[start..i]);
            start = i;
        }
    }
    if start < b.len() {
        out.push(&b[start..]);
    }
    out
}

/// Replace every occurrence of `pair` in `ids` by `new`.
fn merge(ids: &[usize], pair: (usize, usize), new: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(ids.len());
    let mut i = 0;
    while i < ids.len() {
        if i + 1 < ids.len() && (ids[i], ids[i + 1]) == pair {
            out.push(new);
            i += 2;
        } else {
            out.push(ids[i]);
            i += 1;
        }
    }
    out
}

/// The longest token a loaded BPE vocabulary may have, in bytes (GPT-2's longest is 128).
const MAX_TOKEN_BYTES: usize = 1 << 16;

impl BpeTokenizer {
    /// Learn merges on `text` until the vocabulary has `vocab_size` tokens (at least 256) or
    /// no pair occurs twice.
    pub fn train(text: &str, vocab_size: usize) -> Result<Self> {
        if vocab_size < 256 {
            return Err(Error::invalid(
                "BpeTokenizer::train",
                format!("vocab_size must be >= 256, got {vocab_size}"),
            ));
        }
        // Distinct chunks with their counts: the pair statistics of the whole text.
        let mut counts: HashMap<&[u8], usize> = HashMap::new();
        for c in chunks(text) {
            *counts.entry(c).or_default() += 1;
        }
        let mut words: Vec<(Vec<usize>, usize)> = counts
            .into_iter()
            .map(|(c, n)| (c.iter().map(|&b| b as usize).collect(), n))
            .collect();
        let mut merges = Vec::new();
        while 256 + merges.len() < vocab_size {
            let mut pairs: HashMap<(usize, usize), usize> = HashMap::new();
            for (ids, n) in &words {
                for w in ids.windows(2) {
                    *pairs.entry((w[0], w[1])).or_default() += n;
                }
            }
            // Most frequent; ties go to the smallest pair, so training is deterministic.
            let Some((&pair, &n)) = pairs.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            else {
                break;
            };
            if n < 2 {
                break;
            }
            let new = 256 + merges.len();
            merges.push(pair);
            for (ids, _) in &mut words {
                *ids = merge(ids, pair, new);
            }
        }
        Ok(BpeTokenizer::from_merges(merges))
    }

    fn from_merges(merges: Vec<(usize, usize)>) -> Self {
        let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for &(a, b) in &merges {
            let joined = [bytes[a].as_slice(), bytes[b].as_slice()].concat();
            bytes.push(joined);
        }
        let ranks = merges.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        BpeTokenizer {
            merges,
            ranks,
            bytes,
        }
    }

    pub(super) fn from_json(v: &serde_json::Value) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "tokenizer",
                "bpe tokenizer JSON needs \"merges\": [[a, b], ...]",
            )
        };
        let list = v["merges"].as_array().ok_or_else(bad)?;
        let mut merges = Vec::with_capacity(list.len());
        // Byte lengths of the merged tokens so far (token 256 + i has lens[i]).
        let mut lens: Vec<usize> = Vec::with_capacity(list.len());
        let token_len = |lens: &[usize], t: usize| if t < 256 { 1 } else { lens[t - 256] };
        for (i, m) in list.iter().enumerate() {
            let a = m[0].as_u64().ok_or_else(bad)? as usize;
            let b = m[1].as_u64().ok_or_else(bad)? as usize;
            if a >= 256 + i || b >= 256 + i {
                return Err(Error::invalid(
                    "tokenizer",
                    format!("merge {i} uses a token not yet defined"),
                ));
            }
            // Each merge can double a token's length: bound it before building the
            // vocabulary, so a few bytes of JSON cannot ask for gigabytes.
            let len = token_len(&lens, a) + token_len(&lens, b);
            if len > MAX_TOKEN_BYTES {
                return Err(Error::invalid(
                    "tokenizer",
                    format!(
                        "merge {i} makes a token of {len} bytes, more than the \
                         {MAX_TOKEN_BYTES} a BPE token may hold"
                    ),
                ));
            }
            lens.push(len);
            merges.push((a, b));
        }
        Ok(BpeTokenizer::from_merges(merges))
    }

    /// The learned merges, in order.
    pub fn merges(&self) -> &[(usize, usize)] {
        &self.merges
    }
}

impl Tokenizer for BpeTokenizer {
    fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    fn encode(&self, text: &str) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for c in chunks(text) {
            let mut ids: Vec<usize> = c.iter().map(|&b| b as usize).collect();
            // Apply the earliest-learned merge present, until none is.
            while let Some(pair) = ids
                .windows(2)
                .map(|w| (w[0], w[1]))
                .filter(|p| self.ranks.contains_key(p))
                .min_by_key(|p| self.ranks[p])
            {
                ids = merge(&ids, pair, 256 + self.ranks[&pair]);
            }
            out.extend(ids);
        }
        Ok(out)
    }

    fn decode(&self, ids: &[usize]) -> Result<String> {
        let mut bytes = Vec::new();
        for &i in ids {
            let b = self.bytes.get(i).ok_or_else(|| {
                Error::index(
                    "decode",
                    format!("token {i} >= vocab size {}", self.bytes.len()),
                )
            })?;
            bytes.extend_from_slice(b);
        }
        // Sampled ids may cut a multi-byte character: replace, as GPT-2's decoder does.
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn to_json(&self) -> String {
        let merges: Vec<[usize; 2]> = self.merges.iter().map(|&(a, b)| [a, b]).collect();
        serde_json::json!({"kind": "bpe", "merges": merges}).to_string()
    }
}
