//! Generation speed with and without the KV cache at contexts 64, 256 and 1024: a GPT of the
//! transformers issue's size (4 layers, d=128, 4 heads, vocabulary 512, random weights),
//! tokens/s of 32 new tokens after a context of each length (the context's own pass is not
//! timed on the cached side; median of 5 runs there, one run uncached).

use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::nn::Module;
use tinytorch::{manual_seed, Result, Tensor};

/// One row: (context, tokens/s with the cache, tokens/s without).
pub fn rows() -> Result<Vec<(usize, f64, f64)>> {
    manual_seed(0);
    let config = GptConfig {
        vocab_size: 512,
        block_size: 1024 + 32,
        n_layer: 4,
        n_head: 4,
        n_embd: 128,
        dropout: 0.0,
        bias: true,
    };
    let mut model = Gpt::new(config)?;
    model.eval();
    let new = 32;
    let mut out = Vec::new();
    let _guard = no_grad();
    for context in [64usize, 256, 1024] {
        let prompt: Vec<i64> = (0..context as i64).map(|i| (i * 7) % 512).collect();
        let ids = |t: &[i64]| Tensor::from_vec(t.to_vec(), &[1, t.len()]);
        // Cached: prefill the context (not timed), then one position per new token; the
        // median of 5 such runs (32 tokens take only ~15 ms, too short for one sample on a
        // shared machine).
        let mut rates = Vec::new();
        for _ in 0..5 {
            let mut cache = model.new_cache(1)?;
            model.logits_cached(&ids(&prompt)?, &mut cache)?;
            let t0 = Instant::now();
            for i in 0..new {
                model.logits_cached(&ids(&[(i * 13 % 512) as i64])?, &mut cache)?;
            }
            rates.push(new as f64 / t0.elapsed().as_secs_f64());
        }
        rates.sort_by(|a, b| a.total_cmp(b));
        let cached = rates[rates.len() / 2];
        // Uncached: the whole context again for every new token.
        let mut seq = prompt.clone();
        let t0 = Instant::now();
        for i in 0..new {
            model.logits(&ids(&seq)?)?;
            seq.push((i * 13 % 512) as i64);
        }
        let uncached = new as f64 / t0.elapsed().as_secs_f64();
        out.push((context, cached, uncached));
    }
    Ok(out)
}
