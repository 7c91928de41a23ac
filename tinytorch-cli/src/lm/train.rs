//! `tinytorch train-lm`: train a GPT on a text file with AdamW, a progress bar, metrics
//! (CSV + JSON lines), a curves PNG, a checkpoint that `generate` reads, and for the
//! dashboard a line every `--log-every` steps and a sampled text at every checkpoint.

use super::checkpoint::config_json;
use super::data::{batch, TokenData};
use super::generate::generate_ids;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
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

/// Read the corpus and tokenize it (fitting the tokenizer to it), split off the validation
/// tokens, and check that both parts hold a context window.
fn tokenize_corpus(a: &TrainLmArgs) -> Result<(Box<dyn Tokenizer>, TokenData)> {
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
    Ok((tokenizer, data))
}

/// The files a train-lm run writes as it trains.
struct LmFiles {
    /// metrics.csv and metrics.jsonl: a row per validation.
    log: MetricsLog,
    /// steps.jsonl: the dashboard's line per `--log-every` steps.
    steps: JsonLines,
    /// samples.jsonl: the dashboard's sampled text per checkpoint.
    samples: JsonLines,
}

impl LmFiles {
    /// Create `dir` and open its logs, first removing an earlier run's (a train-lm run always
    /// starts anew).
    fn open(dir: &Path) -> Result<LmFiles> {
        std::fs::create_dir_all(dir)?;
        for f in [
            "metrics.jsonl",
            "metrics.csv",
            "steps.jsonl",
            "samples.jsonl",
            "model.json",
        ] {
            // A file that is not there is what this wants.
            let _ = std::fs::remove_file(dir.join(f));
        }
        Ok(LmFiles {
            log: MetricsLog::open(dir)?,
            steps: JsonLines::append(&dir.join("steps.jsonl"))?,
            samples: JsonLines::append(&dir.join("samples.jsonl"))?,
        })
    }
}

/// model.json: the profiler's layer table of one context window (the validation text's
/// first), with the model's configuration, for the dashboard's model view.
fn write_model_json(a: &TrainLmArgs, model: &Gpt, config: &GptConfig, val: &[i64]) -> Result<()> {
    let ids: Vec<i64> = val[..a.block_size].to_vec();
    // The profiler draws random numbers (its machine peaks, dropout): the training draws
    // stay those of a run without it.
    let rng = get_rng_state();
    let profile = tinytorch::profile::summary(model, &Tensor::from_vec(ids, &[1, a.block_size])?);
    set_rng_state(&rng);
    let mut doc = profile?.to_json();
    doc["config"] = serde_json::from_str(&config_json(config)).unwrap_or_default();
    doc["input_shape"] = serde_json::json!([1, a.block_size]);
    write_json_atomic(&a.out.join("model.json"), &doc)
}

/// The steps since the last line of steps.jsonl. Its clock runs only while steps do:
/// validation, checkpoints and sampling between intervals are left out.
#[derive(Debug, Default)]
struct StepWindow {
    loss_sum: f64,
    steps: u64,
    busy_s: f64,
}

/// A train-lm run under way.
struct LmRun {
    model: Gpt,
    opt: AdamW,
    /// Draws the training batches.
    gen: Generator,
    /// Draws the validation batches, apart so that validating leaves the training batches
    /// as they would be without it.
    val_gen: Generator,
    files: LmFiles,
    window: StepWindow,
    /// Tokens in one batch.
    tokens_per_step: u64,
}

impl LmRun {
    /// Seed the global generator, then build the model (of `vocab_size` tokens), AdamW
    /// (betas 0.9/0.95, weight decay 0.1, as nanoGPT) and the run's files.
    fn new(a: &TrainLmArgs, vocab_size: usize) -> Result<(LmRun, GptConfig)> {
        manual_seed(a.seed);
        let config = GptConfig {
            vocab_size,
            block_size: a.block_size,
            n_layer: a.n_layer,
            n_head: a.n_head,
            n_embd: a.n_embd,
            dropout: a.dropout,
            bias: true,
        };
        let model = Gpt::new(config)?;
        let opts = AdamOptions {
            lr: a.lr,
            betas: (0.9, 0.95),
            weight_decay: 0.1,
            ..Default::default()
        };
        let opt = AdamW::new(model.parameters(), opts)?;
        let run = LmRun {
            model,
            opt,
            gen: Generator::new(a.seed),
            val_gen: Generator::new(a.seed ^ 0x5eed),
            files: LmFiles::open(&a.out)?,
            window: StepWindow::default(),
            tokens_per_step: (a.batch_size * a.block_size) as u64,
        };
        Ok((run, config))
    }

    /// Train `steps` steps of interval `interval` (steps `first_step + 1` on) on `train`;
    /// its figures.
    fn train_interval(
        &mut self,
        a: &TrainLmArgs,
        train: &[i64],
        (interval, first_step, steps): (usize, u64, u64),
        bar: &Progress,
    ) -> Result<EpochTotals> {
        let mut totals = EpochTotals::default();
        let t0 = Instant::now();
        self.model.train();
        let mut last = Instant::now();
        for _ in 0..steps {
            let (x, y) = batch(train, a.batch_size, a.block_size, &mut self.gen)?;
            let (model, opt) = (&self.model, &mut self.opt);
            // The step on a compute thread when the model is on the CPU (`parallel`).
            let (loss, logits) = tinytorch::parallel::run_for(x.device(), || {
                opt.zero_grad();
                let (loss, logits) = model.loss(&x, &y)?;
                loss.backward()?;
                opt.step()?;
                Ok::<_, tinytorch::Error>((loss, logits))
            })?;
            let l = loss.item_f64()?;
            let tokens = self.tokens_per_step;
            totals.loss_sum += l * tokens as f64;
            totals.correct +=
                (token_accuracy(&logits.detach(), &y)? * tokens as f64).round() as u64;
            totals.samples += tokens;
            totals.steps += 1;
            totals.timed_s = t0.elapsed().as_secs_f64();
            totals.timed_samples += tokens;
            bar.step(l, &totals);
            self.window.loss_sum += l;
            self.window.steps += 1;
            self.window.busy_s += last.elapsed().as_secs_f64();
            last = Instant::now();
            let done = first_step + totals.steps;
            if a.log_every > 0 && done.is_multiple_of(a.log_every) {
                let progress = (interval - 1) as f64 + totals.steps as f64 / steps as f64;
                self.write_step_line(a, done, interval, progress)?;
            }
        }
        Ok(totals)
    }

    /// A line of steps.jsonl for the window ending at step `step`; the window starts anew.
    fn write_step_line(
        &mut self,
        a: &TrainLmArgs,
        step: u64,
        interval: usize,
        epoch_progress: f64,
    ) -> Result<()> {
        let w = std::mem::take(&mut self.window);
        let record = StepRecord {
            step,
            epoch: interval,
            epoch_progress,
            loss: w.loss_sum / w.steps as f64,
            acc: f64::NAN, // no accuracy per step: null in the JSON
            lr: a.lr,
            samples_per_s: (w.steps * self.tokens_per_step) as f64 / w.busy_s.max(1e-9),
        };
        self.files.steps.write(&record.to_json())
    }

    /// The checkpoint `generate` reads: the weights, the optimizer's state, and (as metadata)
    /// the model's configuration, the tokenizer and the corpus.
    fn save(
        &self,
        a: &TrainLmArgs,
        config: &GptConfig,
        tokenizer: &dyn Tokenizer,
        step: u64,
    ) -> Result<()> {
        let mut extra = std::collections::BTreeMap::new();
        extra.insert("gpt_config".to_string(), config_json(config));
        extra.insert("tokenizer".to_string(), tokenizer.to_json());
        extra.insert("corpus".to_string(), a.corpus.display().to_string());
        let ckpt = Checkpoint {
            model: self.model.state_dict(),
            optimizer: Some(self.opt.state_dict()),
            step,
            extra,
            ..Default::default()
        };
        save_checkpoint(a.out.join("checkpoint.safetensors"), &ckpt)
    }
}

/// Run `tinytorch train-lm`: `--max-steps` steps in intervals of `--eval-every`, each
/// followed by a validation (one metrics row), a checkpoint and a sampled text.
pub fn train_lm(a: &TrainLmArgs) -> Result<()> {
    let started = Instant::now();
    let (tokenizer, data) = tokenize_corpus(a)?;
    let (mut run, config) = LmRun::new(a, tokenizer.vocab_size())?;
    write_model_json(a, &run.model, &config, &data.val)?;
    let mut history = Vec::new();
    let visible = !a.json && std::io::stderr().is_terminal();
    let intervals = a.max_steps.div_ceil(a.eval_every) as usize;
    let mut step = 0u64;
    for interval in 1..=intervals {
        let steps = a.eval_every.min(a.max_steps - step);
        let bar = Progress::new(interval, intervals, steps, visible);
        let totals = run.train_interval(a, &data.train, (interval, step, steps), &bar)?;
        step += steps;
        run.model.eval();
        let (val_loss, val_acc) = validate(&run.model, &data.val, a, &mut run.val_gen)?;
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
        run.files.log.write(&m)?;
        history.push(m);
        run.save(a, &config, tokenizer.as_ref(), step)?;
        let text = sample_text(&run.model, tokenizer.as_ref(), &data.val, a.seed)?;
        let sample = serde_json::json!({"step": step, "val_loss": val_loss, "text": text});
        run.files.samples.write(&sample)?;
    }
    plot_curves(&a.out.join("curves.png"), &history)?;
    report(
        a,
        &history,
        step,
        started.elapsed().as_secs_f64(),
        &config,
        &run.model,
    );
    Ok(())
}

/// The final line (or, with `--json`, the summary object) of a run of `step` steps that took
/// `wall` seconds.
fn report(
    a: &TrainLmArgs,
    history: &[EpochMetrics],
    step: u64,
    wall: f64,
    config: &GptConfig,
    model: &Gpt,
) {
    let last = history.last().expect("at least one interval");
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
}
