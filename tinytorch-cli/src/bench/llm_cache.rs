//! The KV cache's cost per generated token as the context grows, for the Llama family: a
//! Llama (full attention: the cache grows with the context) and a Mistral (sliding window of
//! 128: its rolling cache holds 127 positions) of the same size (4 layers, hidden 512, MLP
//! 1376, 8 query and 2 key/value heads, vocabulary 512, random weights: 11.3M weight
//! multiply-adds per token, against 4.2M for attention over 1024 positions: the Llama does
//! 1.37x the arithmetic per token at context 1024 as at 64). For contexts 64, 256 and
//! 1024: prefill the context (not timed), then time 32 new tokens one at a time; the median
//! of 5 such runs, in ms per token.

use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::models::llama::{LlamaConfig, LlamaForCausalLM};
use tinytorch::{manual_seed, DType, Result, Tensor};

/// Contexts measured.
pub const CONTEXTS: [usize; 3] = [64, 256, 1024];
/// New tokens timed after each context.
const NEW: usize = 32;

/// One row: family, context, median ms per new token.
pub fn rows() -> Result<Vec<(&'static str, usize, f64)>> {
    let mut out = Vec::new();
    for (family, window) in [("llama", None), ("mistral", Some(128))] {
        manual_seed(0);
        let mut config = LlamaConfig::new(512, 512, 1376, 4, 8, 2);
        config.max_position_embeddings = 1024 + NEW;
        if window.is_some() {
            config.model_type = Some("mistral".into());
            config.sliding_window = window;
        }
        let model = LlamaForCausalLM::new(config, DType::F32)?;
        let _guard = no_grad();
        for context in CONTEXTS {
            let prompt: Vec<i64> = (0..context as i64).map(|i| (i * 7) % 512).collect();
            let mut per_token = Vec::new();
            for _ in 0..5 {
                let mut cache = model.new_cache(1, context + NEW)?;
                model.logits_cached(
                    &Tensor::from_vec(prompt.clone(), &[1, context])?,
                    &mut cache,
                )?;
                let t0 = Instant::now();
                for i in 0..NEW {
                    let id = Tensor::from_vec(vec![(i * 13 % 512) as i64], &[1, 1])?;
                    model.logits_cached(&id, &mut cache)?;
                }
                per_token.push(t0.elapsed().as_secs_f64() * 1e3 / NEW as f64);
            }
            per_token.sort_by(|a, b| a.total_cmp(b));
            out.push((family, context, per_token[per_token.len() / 2]));
        }
    }
    Ok(out)
}
