//! `tinytorch train-lm`: train a GPT on a text file with AdamW, a progress bar, metrics
//! (CSV + JSON lines), a curves PNG and a checkpoint that `generate` reads.

use super::config_json;
use super::data::{batch, TokenData};
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::io::{save_checkpoint, Checkpoint};
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::nn::Module;
use tinytorch::optim::{AdamOptions, AdamW, Optimizer};
use tinytorch::text::{BpeTokenizer, CharTokenizer, Tokenizer};
use tinytorch::train::{plot_curves, EpochMetrics, EpochTotals, MetricsLog, Progress};
use tinytorch::{manual_seed, Error, Generator, Result};

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
                "the corpus is too short for block size {} (or --eval-every is 0)",
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
    for f in ["metrics.jsonl", "metrics.csv"] {
        let _ = std::fs::remove_file(a.out.join(f));
    }
    let mut log = MetricsLog::open(&a.out)?;
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
