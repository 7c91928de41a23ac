//! `tinytorch generate`: continue a prompt with a `train-lm` checkpoint, or with a Hugging
//! Face model directory of the Llama family (Llama, Qwen2, Mistral: config.json, safetensors
//! weights, tokenizer.json), sampling with temperature, top-k and top-p, using the KV cache
//! (or recomputing, with `--no-cache`), and printing tokens/s.

use super::checkpoint::load_lm;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::models::gpt::{sample_next, Gpt, Sampling};
use tinytorch::models::llama::LlamaForCausalLM;
use tinytorch::nn::Module;
use tinytorch::text::hf_tokenizer::HfTokenizer;
use tinytorch::{manual_seed, Error, Result, Tensor};

/// Arguments of `tinytorch generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// A checkpoint written by `train-lm`.
    #[arg(
        long,
        value_name = "CKPT",
        required_unless_present = "model_dir",
        conflicts_with = "model_dir"
    )]
    pub checkpoint: Option<PathBuf>,
    /// A Hugging Face model directory of the Llama family (model_type llama, qwen2 or
    /// mistral): config.json, model.safetensors (or shards) and tokenizer.json.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// The text to continue (at least one token).
    #[arg(long, default_value = "\n")]
    pub prompt: String,
    /// Tokens to generate.
    #[arg(long, default_value_t = 200)]
    pub max_new_tokens: usize,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f64,
    /// Sample among the k most likely tokens.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Sample among the most likely tokens whose probability reaches p.
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Seed of the sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Recompute the whole context for every token instead of using the KV cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// Generate `n` tokens after `prompt` (ids, at least one). The model conditions on the last
/// `block_size` tokens; with `cache`, the KV cache holds the window's keys and values and
/// each new token costs one position, until the window slides (then the cache is rebuilt).
pub fn generate_ids(
    model: &Gpt,
    prompt: &[usize],
    n: usize,
    s: &Sampling,
    cache: bool,
) -> Result<Vec<usize>> {
    if prompt.is_empty() {
        return Err(Error::invalid(
            "generate",
            "the prompt must contain at least one token",
        ));
    }
    let _guard = no_grad();
    let block = model.config().block_size;
    let mut ids = prompt.to_vec();
    let as_tensor = |ids: &[usize]| {
        Tensor::from_vec(
            ids.iter().map(|&i| i as i64).collect::<Vec<_>>(),
            &[1, ids.len()],
        )
    };
    let mut kv = model.new_cache(1)?;
    // The cache holds positions ids[cache_start..cache_start + kv.len()].
    let mut cache_start = 0;
    for _ in 0..n {
        let window = ids.len().saturating_sub(block);
        let logits = if cache {
            if window > cache_start {
                kv.clear();
                cache_start = window;
            }
            model.logits_cached(&as_tensor(&ids[cache_start + kv.len()..])?, &mut kv)?
        } else {
            model.logits(&as_tensor(&ids[window..])?)?
        };
        let t = logits.shape()[1];
        let last = logits.select(0, 0)?.select(0, t as isize - 1)?;
        ids.push(sample_next(&last, s)?);
    }
    Ok(ids[prompt.len()..].to_vec())
}

/// The sampling options of the command line.
fn sampling(a: &GenerateArgs) -> Sampling {
    Sampling {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
    }
}

/// Run `tinytorch generate`.
pub fn generate(a: &GenerateArgs) -> Result<()> {
    // Bad sampling options are refused before a model is loaded.
    sampling(a).check()?;
    let Some(checkpoint) = &a.checkpoint else {
        let dir = a.model_dir.as_ref().expect("clap requires one of the two");
        return generate_hf(dir, a);
    };
    let (_, mut model, tokenizer) = load_lm(checkpoint)?;
    model.eval();
    manual_seed(a.seed);
    let prompt = tokenizer.encode(&a.prompt)?;
    let s = sampling(a);
    let t0 = Instant::now();
    let out = generate_ids(&model, &prompt, a.max_new_tokens, &s, !a.no_cache)?;
    let secs = t0.elapsed().as_secs_f64();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}{}", a.prompt, tokenizer.decode(&out)?)?;
    eprintln!(
        "{} tokens in {secs:.2} s ({:.1} tokens/s)",
        out.len(),
        out.len() as f64 / secs
    );
    Ok(())
}

/// `generate --model-dir`: a Llama-family model and its tokenizer.json. The text printed is
/// the prompt followed by the decoded new tokens (special tokens left out).
fn generate_hf(dir: &std::path::Path, a: &GenerateArgs) -> Result<()> {
    if a.no_cache {
        return Err(Error::invalid(
            "generate",
            "--no-cache applies to train-lm checkpoints only",
        ));
    }
    let model = LlamaForCausalLM::from_pretrained(dir)?;
    let tokenizer = HfTokenizer::from_file(dir.join("tokenizer.json"))?;
    manual_seed(a.seed);
    let prompt: Vec<usize> = tokenizer
        .encode(&a.prompt)?
        .into_iter()
        .map(|i| i as usize)
        .collect();
    let s = sampling(a);
    let t0 = Instant::now();
    let tokens = model.generate(&prompt, a.max_new_tokens, &s)?;
    let secs = t0.elapsed().as_secs_f64();
    let new: Vec<u32> = tokens[prompt.len()..].iter().map(|&t| t as u32).collect();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}{}", a.prompt, tokenizer.decode(&new, true)?)?;
    eprintln!(
        "{} tokens in {secs:.2} s ({:.1} tokens/s; {} prompt tokens, {:?})",
        new.len(),
        new.len() as f64 / secs,
        prompt.len(),
        model.config().family()?
    );
    Ok(())
}
