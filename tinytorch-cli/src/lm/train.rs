//! `tinytorch train-lm`: train a GPT on a text file with AdamW, a progress bar, metrics
//! (CSV + JSON lines), a curves PNG, a checkpoint that `generate` reads, and for the
//! dashboard a line every `--log-every` steps and a sampled text at every checkpoint.

use super::config_json;
use super::data::{batch, TokenData};
use super::generate::generate_ids;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::io::{save_checkpoint, Checkpoint};
use tinytorch::models::gpt::{Gpt, GptConfig, Sampling};
use tinytorch::nn::Module;
use tinytorch::optim::{AdamOptions, AdamW, Optimizer};
use tinytorch::tensor::{get_rng_state, set_rng_state};
use tinytorch::text::{BpeTokenizer, CharTokenizer, Tokenizer};
use tinytorch::train::run_log::{write_json_atomic, JsonLines, StepRecord};
use tinytorch::train::{plot_curves, EpochMetrics, EpochTotals, MetricsLog, Progress};
use tinytorch::{manual_seed, Error, Generator, Result, Tensor};

/// Tokenizer kinds.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TokenizerKind {
    /// One token per character.
    Char,
    /// Byte-level BPE trained on the corpus (`--vocab-size` tokens).
    Bpe,
}

/// Arguments of `tinytorch train-lm`.
#[derive(Args, Debug)]
pub struct TrainLmArgs {
    /// The training text (UTF-8), e.g. /usr/share/games/fortunes/fortunes.
    #[arg(long)]
    pub corpus: PathBuf,
    /// Tokenizer.
    #[arg(long, value_enum, default_value = "char")]
    pub tokenizer: TokenizerKind,
    /// Vocabulary size of the BPE tokenizer.
    #[arg(long, default_value_t = 512)]
    pub vocab_size: usize,
    /// Transformer blocks.
    #[arg(long, default_value_t = 4)]
    pub n_layer: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 4)]
    pub n_head: usize,
    /// Embedding width.
    #[arg(long, default_value_t = 128)]
    pub n_embd: usize,
    /// Context length.
    #[arg(long, default_value_t = 64)]
    pub block_size: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 16)]
    pub batch_size: usize,
    /// Dropout.
    #[arg(long, default_value_t = 0.0)]
    pub dropout: f64,
    /// AdamW learning rate (betas 0.9/0.95, weight decay 0.1).
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// Optimizer steps.
    #[arg(long, default_value_t = 2000)]
    pub max_steps: u64,
    /// Steps between validation losses (one metrics row each).
    #[arg(long, default_value_t = 200)]
    pub eval_every: u64,
    /// Seed of the initialisation and of the batches.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory for checkpoint.safetensors, metrics and curves.png.
    #[arg(long, default_value = "runs/lm")]
    pub out: PathBuf,
    /// Print the final metrics as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// Steps between lines of steps.jsonl (for `tinytorch dashboard`); 0 for none.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub log_every: u64,
}

/// Mean loss and next-token accuracy over `n` random validation batches.
fn validate(model: &Gpt, ids: &[i64], a: &TrainLmArgs, g: &mut Generator) -> Result<(f64, f64)> {
    let _guard = no_grad();
    let (mut loss, mut acc) = (0.0, 0.0);
    let n = 10;
    for _ in 0..n {
        let (x, y) = batch(ids, a.batch_size, a.block_size, g)?;
        let (l, logits) = model.loss(&x, &y)?;
        loss += l.item_f64()?;
        acc += token_accuracy(&logits, &y)?;
    }
    Ok((loss / n as f64, acc / n as f64))
}

fn token_accuracy(logits: &tinytorch::Tensor, y: &tinytorch::Tensor) -> Result<f64> {
    let hits = logits
        .argmax(Some(-1), false)?
        .eq(y)?
        .to_dtype(tinytorch::DType::F64)?;
    hits.mean_all()?.item_f64()
}

/// Tokens of the text sampled at each checkpoint for the dashboard.
const SAMPLE_TOKENS: usize = 200;

/// A text the model writes after the validation text's first token (temperature 0.8, seeded
/// with `seed` so that checkpoints compare on the same draws); the global generator, which
/// dropout draws from, is left as it was.
fn sample_text(model: &Gpt, tokenizer: &dyn Tokenizer, val: &[i64], seed: u64) -> Result<String> {
    let saved = get_rng_state();
    manual_seed(seed);
    let sampling = Sampling {
        temperature: 0.8,
        ..Default::default()
    };
    let prompt = [val[0] as usize];
    let ids = generate_ids(model, &prompt, SAMPLE_TOKENS, &sampling, true);
    set_rng_state(&saved);
    tokenizer.decode(&[&prompt[..], &ids?[..]].concat())
}

/// Run `tinytorch train-lm`.
pub fn train_lm(a: &TrainLmArgs) -> Result<()> {
    let started = Instant::now();
    let text = std::fs::read_to_string(&a.corpus).map_err(|e| {
        Error::invalid(
            "train-lm",
            format!("cannot read corpus {}: {e}", a.corpus.display()),
        )
    })?;
    let tokenizer: Box<dyn Tokenizer> = match a.tokenizer {
        TokenizerKind::Char => Box::new(CharTokenizer::fit(&text)),
        TokenizerKind::Bpe => Box::new(BpeTokenizer::train(&text, a.vocab_size)?),
    };
    let data = TokenData::new(tokenizer.encode(&text)?);
    if data.val.len() <= a.block_size + 1 || a.eval_every == 0 {
        return Err(Error::invalid(
            "train-lm",
            format!(
                "the corpus {} ({} tokens, {} of them for validation) is too short for block \
                 size {} (or --eval-every is 0)",
                a.corpus.display(),
                data.train.len() + data.val.len(),
                data.val.len(),
                a.block_size
            ),
        ));
    }
    manual_seed(a.seed);
    let config = GptConfig {
        vocab_size: tokenizer.vocab_size(),
        block_size: a.block_size,
        n_layer: a.n_layer,
        n_head: a.n_head,
        n_embd: a.n_embd,
        dropout: a.dropout,
        bias: true,
    };
    let mut model = Gpt::new(config)?;
    let opts = AdamOptions {
        lr: a.lr,
        betas: (0.9, 0.95),
        weight_decay: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(model.parameters(), opts)?;
    let mut gen = Generator::new(a.seed);
    let mut val_gen = Generator::new(a.seed ^ 0x5eed);
    std::fs::create_dir_all(&a.out)?;
    for f in [
        "metrics.jsonl",
        "metrics.csv",
        "steps.jsonl",
        "samples.jsonl",
        "model.json",
    ] {
        let _ = std::fs::remove_file(a.out.join(f));
    }
    let mut log = MetricsLog::open(&a.out)?;
    // The dashboard's files: a line per `--log-every` steps and a sampled text per checkpoint.
    let mut step_lines = JsonLines::append(&a.out.join("steps.jsonl"))?;
    let mut sample_lines = JsonLines::append(&a.out.join("samples.jsonl"))?;
    // Loss sum, steps and training seconds since the last step line (validation, checkpoint
    // and sampling between intervals left out).
    let mut window = (0.0f64, 0u64, 0.0f64);
    // The layer table (profiler) of one context window, for the dashboard's model view.
    let ids: Vec<i64> = data.val[..a.block_size].to_vec();
    // The profiler draws random numbers (its machine peaks, dropout): the training draws
    // stay those of a run without it.
    let rng = get_rng_state();
    let profile = tinytorch::profile::summary(&model, &Tensor::from_vec(ids, &[1, a.block_size])?);
    set_rng_state(&rng);
    let profile = profile?;
    let mut doc = profile.to_json();
    doc["config"] = serde_json::from_str(&config_json(&config)).unwrap_or_default();
    doc["input_shape"] = serde_json::json!([1, a.block_size]);
    write_json_atomic(&a.out.join("model.json"), &doc)?;
    let mut history = Vec::new();
    let visible = !a.json && std::io::stderr().is_terminal();
    let intervals = a.max_steps.div_ceil(a.eval_every) as usize;
    let tokens_per_step = (a.batch_size * a.block_size) as u64;
    let mut step = 0u64;
    for interval in 1..=intervals {
        let steps = a.eval_every.min(a.max_steps - step);
        let bar = Progress::new(interval, intervals, steps, visible);
        let mut totals = EpochTotals::default();
        let t0 = Instant::now();
        model.train();
        let mut last = Instant::now();
        for _ in 0..steps {
            let (x, y) = batch(&data.train, a.batch_size, a.block_size, &mut gen)?;
            // The step on a compute thread when the model is on the CPU (`parallel`).
            let (loss, logits) = tinytorch::parallel::run_for(x.device(), || {
                opt.zero_grad();
                let (loss, logits) = model.loss(&x, &y)?;
                loss.backward()?;
                opt.step()?;
                Ok::<_, tinytorch::Error>((loss, logits))
            })?;
            let l = loss.item_f64()?;
            totals.loss_sum += l * tokens_per_step as f64;
            totals.correct +=
                (token_accuracy(&logits.detach(), &y)? * tokens_per_step as f64).round() as u64;
            totals.samples += tokens_per_step;
            totals.steps += 1;
            totals.timed_s = t0.elapsed().as_secs_f64();
            totals.timed_samples += tokens_per_step;
            bar.step(l, &totals);
            let done = step + totals.steps;
            window.0 += l;
            window.1 += 1;
            window.2 += last.elapsed().as_secs_f64();
            last = Instant::now();
            if a.log_every > 0 && done.is_multiple_of(a.log_every) {
                let record = StepRecord {
                    step: done,
                    epoch: interval,
                    epoch_progress: (interval - 1) as f64 + totals.steps as f64 / steps as f64,
                    loss: window.0 / window.1 as f64,
                    acc: f64::NAN, // no accuracy per step: null in the JSON
                    lr: a.lr,
                    samples_per_s: (window.1 * tokens_per_step) as f64 / window.2.max(1e-9),
                };
                step_lines.write(&record.to_json())?;
                window = (0.0, 0, 0.0);
            }
        }
        step += steps;
        model.eval();
        let (val_loss, val_acc) = validate(&model, &data.val, a, &mut val_gen)?;
        let m = EpochMetrics {
            epoch: interval,
            steps: step,
            train_loss: totals.mean_loss(),
            train_acc: totals.accuracy(),
            test_loss: Some(val_loss),
            test_acc: Some(val_acc),
            lr: a.lr,
            train_s: totals.timed_s,
            samples_per_s: totals.samples_per_s(),
        };
        bar.finish(&format!(
            "step {step}: train loss {:.4}, val loss {val_loss:.4}, {:.0} tokens/s",
            m.train_loss, m.samples_per_s
        ));
        log.write(&m)?;
        history.push(m);
        let mut extra = std::collections::BTreeMap::new();
        extra.insert("gpt_config".to_string(), config_json(&config));
        extra.insert("tokenizer".to_string(), tokenizer.to_json());
        extra.insert("corpus".to_string(), a.corpus.display().to_string());
        let ckpt = Checkpoint {
            model: model.state_dict(),
            optimizer: Some(opt.state_dict()),
            step,
            extra,
            ..Default::default()
        };
        save_checkpoint(a.out.join("checkpoint.safetensors"), &ckpt)?;
        let text = sample_text(&model, tokenizer.as_ref(), &data.val, a.seed)?;
        sample_lines
            .write(&serde_json::json!({"step": step, "val_loss": val_loss, "text": text}))?;
    }
    plot_curves(&a.out.join("curves.png"), &history)?;
    let last = history.last().expect("at least one interval");
    let wall = started.elapsed().as_secs_f64();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "train_loss": last.train_loss, "val_loss": last.test_loss, "val_acc": last.test_acc,
                "steps": step, "wall_s": wall, "tokens_per_s": last.samples_per_s,
                "vocab_size": config.vocab_size, "parameters": model.num_parameters(),
            })
        );
    } else {
        println!(
            "trained {} parameters for {step} steps: val loss {:.4}; wrote {}",
            model.num_parameters(),
            last.test_loss.unwrap_or(f64::NAN),
            a.out.display()
        );
    }
    Ok(())
}
