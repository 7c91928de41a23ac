//! The arguments of `tinytorch train` and `tinytorch eval`, and the run configuration the
//! train flags describe (a resumed run's flags are checked against its checkpoint's).

use super::config::{DatasetKind, OptimizerKind, RunConfig};
use super::recipe::{parse_float_list, AmpDtype, FloatList, Recipe, ScheduleName};
use clap::Args;
use std::path::PathBuf;
use tinytorch::models::ModelKind;
use tinytorch::Result;

/// Arguments of `tinytorch train`. A flag given twice takes its last value, which is how
/// the command line overrides a `--config` recipe file.
#[derive(Args, Debug)]
#[command(args_override_self = true)]
pub struct TrainArgs {
    /// A recipe: a TOML file of this command's flags (`lr-schedule = "cosine"`,
    /// `augment-flip = true`, lists for per-channel values); flags on the command line win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data set.
    #[arg(long, value_enum, default_value = "fashion-mnist")]
    pub dataset: DatasetKind,
    /// Model: mlp, seed-cnn, lenet5 or resnet20.
    #[arg(long, default_value = "seed-cnn")]
    pub model: ModelKind,
    /// Epochs to train (a resumed run continues up to this many in total).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub epochs: u64,
    /// Samples per batch (the last partial batch is dropped).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// Optimizer.
    #[arg(long, value_enum, default_value = "sgd")]
    pub optimizer: OptimizerKind,
    /// Learning rate.
    #[arg(long, default_value_t = 0.05)]
    pub lr: f64,
    /// Momentum (SGD, RMSprop).
    #[arg(long, default_value_t = 0.0)]
    pub momentum: f64,
    /// Weight decay (default: the optimizer's own, 0.01 for AdamW and 0 otherwise).
    #[arg(long)]
    pub weight_decay: Option<f64>,
    /// Seed of the initialisation and of the shuffling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory of the data set's files (default: /usr/share/datasets/fashion-mnist for
    /// fashion-mnist).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Resume from this checkpoint (model, optimizer, generators, position in the epoch).
    #[arg(long, value_name = "CKPT")]
    pub resume: Option<PathBuf>,
    /// Directory for checkpoint.safetensors, metrics.csv, metrics.jsonl, curves.png and the
    /// dashboard's files (steps.jsonl, histograms.jsonl, model.json, eval.json).
    #[arg(long, default_value = "runs/latest")]
    pub out: PathBuf,
    /// Steps between lines of steps.jsonl (mean loss, accuracy, learning rate and samples/s
    /// over those steps); 0 for none.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub log_every: u64,
    /// Steps between histograms of every parameter's values and gradients
    /// (histograms.jsonl, for `tinytorch dashboard`); 0 (the default) for none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub log_histograms: u64,
    /// Stop after this many optimizer steps in total.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Skip the test-set evaluation after each epoch.
    #[arg(long)]
    pub no_eval: bool,
    /// Print the final metrics as one JSON object on the last line of stdout (no progress bar).
    #[arg(long)]
    pub json: bool,
    /// Initial weights: a safetensors state dict with PyTorch's key names.
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Keep the training set in file order.
    #[arg(long)]
    pub no_shuffle: bool,
    /// Threads that build batches ahead of the model (0, PyTorch's default: build them in
    /// the training thread, between steps, on all the compute threads). A loader thread
    /// competes with the compute threads for the cores: on 2 cores it made the mlp step
    /// 0.29 -> 0.37 ms; it pays where batches are expensive and cores are spare.
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Where to train: cpu, cuda or cuda:N (CUDA needs a build with `--features cuda`).
    #[arg(long, default_value = "cpu")]
    pub device: tinytorch::Device,
    /// Data-parallel training over the processes `mpirun` started (one model replica each,
    /// gradients averaged every step; `--batch-size` is per process). Needs a build with
    /// the `mpi` feature.
    #[arg(long)]
    pub distributed: bool,
    /// With --distributed: BatchNorm statistics over the global batch (SyncBatchNorm)
    /// instead of each process's own.
    #[arg(long, requires = "distributed")]
    pub sync_bn: bool,
    /// Augmentation: zero-pad every side by this many pixels, then crop a random window of
    /// the image's size (`RandomCrop(size, padding)`).
    #[arg(long, value_name = "PAD")]
    pub augment_crop: Option<usize>,
    /// Augmentation: mirror images left-right with probability 0.5.
    #[arg(long)]
    pub augment_flip: bool,
    /// Normalise inputs (training and test) by these per-channel means (comma-separated;
    /// with --normalize-std).
    #[arg(long, value_name = "M,..", value_parser = parse_float_list, requires = "normalize_std")]
    pub normalize_mean: Option<FloatList>,
    /// The per-channel standard deviations of --normalize-mean.
    #[arg(long, value_name = "S,..", value_parser = parse_float_list, requires = "normalize_mean")]
    pub normalize_std: Option<FloatList>,
    /// Learning-rate schedule over the --epochs of the run, stepped every optimizer step.
    #[arg(long, value_enum, default_value = "constant")]
    pub lr_schedule: ScheduleName,
    /// Epochs of linear warm-up before the schedule (fractions allowed).
    #[arg(long, default_value_t = 0.0, value_name = "E")]
    pub warmup_epochs: f64,
    /// The warm-up's first learning rate as a fraction of --lr.
    #[arg(long, default_value_t = 0.01, value_name = "F")]
    pub warmup_start_factor: f64,
    /// Cosine schedule: the learning rate at the last step.
    #[arg(long, default_value_t = 0.0)]
    pub min_lr: f64,
    /// Step schedule: epochs between decays.
    #[arg(long, default_value_t = 30, value_name = "E")]
    pub lr_step_epochs: usize,
    /// Step schedule: the decay factor.
    #[arg(long, default_value_t = 0.1)]
    pub lr_gamma: f64,
    /// One-cycle schedule: the fraction of the run spent rising to --lr.
    #[arg(long, default_value_t = 0.3)]
    pub pct_start: f64,
    /// Clip the gradients' global 2-norm to this before every step.
    #[arg(long, value_name = "MAX")]
    pub clip_grad_norm: Option<f64>,
    /// Gradient accumulation: compute each --batch-size batch in this many micro-batches
    /// (the same step in a fraction of the activation memory).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub accumulate: usize,
    /// Mixed precision: the forward pass in this dtype, weights and optimizer in f32.
    #[arg(long, value_enum)]
    pub amp: Option<AmpDtype>,
    /// Keep an exponential moving average of the weights with this decay (e.g. 0.999);
    /// evaluation, checkpoints' `eval` and the exported model use the average.
    #[arg(long, value_name = "DECAY")]
    pub ema: Option<f64>,
    /// Stop when the test loss has not improved for this many epochs.
    #[arg(long, value_name = "PATIENCE")]
    pub early_stopping: Option<u64>,
    /// Early stopping: the least decrease of the test loss that counts as an improvement.
    #[arg(long, default_value_t = 0.0)]
    pub min_delta: f64,
    /// Go on training when the loss is NaN or infinite (by default such a step is an error,
    /// raised before it changes the weights).
    #[arg(long)]
    pub allow_nonfinite_loss: bool,
    /// The flags given on the command line (or by --config) rather than defaulted, by id.
    #[arg(skip)]
    pub given: Vec<String>,
    /// With --distributed: seconds a collective waits for the other processes before it
    /// fails (a process that died or hangs).
    #[arg(long, default_value_t = 1800, value_name = "S")]
    pub dist_timeout: u64,
}

/// Arguments of `tinytorch eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The checkpoint to evaluate (or an int8 model written by `tinytorch quantize`).
    #[arg(long, value_name = "CKPT")]
    pub checkpoint: PathBuf,
    /// Directory of the data set's files (default: the one recorded in the checkpoint).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Print the metrics as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also time the forward pass at batch 1 and 64 (median and 95% confidence interval)
    /// and measure the memory a batch-64 forward takes at its peak.
    #[arg(long)]
    pub latency: bool,
}

/// The flags of `train` that define a run (stored in its checkpoint): a resumed run cannot
/// change them.
const RUN_FLAGS: &[&str] = &[
    "config",
    "dataset",
    "model",
    "batch_size",
    "optimizer",
    "lr",
    "momentum",
    "weight_decay",
    "seed",
    "init",
    "no_shuffle",
    "augment_crop",
    "augment_flip",
    "normalize_mean",
    "normalize_std",
    "lr_schedule",
    "warmup_epochs",
    "warmup_start_factor",
    "min_lr",
    "lr_step_epochs",
    "lr_gamma",
    "pct_start",
    "clip_grad_norm",
    "accumulate",
    "amp",
    "ema",
    "early_stopping",
    "min_delta",
];

impl TrainArgs {
    /// An error naming the run-defining flags given beside `--resume`, which would otherwise
    /// be ignored in favour of the checkpoint's.
    pub fn check_resume_flags(&self, checkpoint_run: &RunConfig) -> Result<()> {
        let clash: Vec<String> = self
            .given
            .iter()
            .filter(|id| RUN_FLAGS.contains(&id.as_str()))
            .map(|id| format!("--{}", id.replace('_', "-")))
            .collect();
        if clash.is_empty() {
            return Ok(());
        }
        Err(tinytorch::Error::invalid(
            "train --resume",
            format!(
                "{} cannot change a resumed run: the checkpoint fixes its model ({}), data set,                  optimizer and recipe; drop them, or start a new run without --resume",
                clash.join(", "),
                checkpoint_run.model
            ),
        ))
    }

    /// The run configuration these flags describe.
    pub fn config(&self) -> Result<RunConfig> {
        Ok(RunConfig {
            model: self.model,
            dataset: self.dataset,
            data: self.data.clone(),
            batch_size: self.batch_size as usize,
            optimizer: self.optimizer,
            lr: self.lr,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            seed: self.seed,
            shuffle: !self.no_shuffle,
            widths: None,
            recipe: self.recipe(),
        })
    }

    /// The recipe these flags describe.
    pub fn recipe(&self) -> Recipe {
        Recipe {
            epochs: self.epochs as usize,
            crop_padding: self.augment_crop,
            flip: self.augment_flip,
            normalize: self
                .normalize_mean
                .clone()
                .zip(self.normalize_std.clone())
                .map(|(m, s)| (m.0, s.0)),
            schedule: self.lr_schedule,
            warmup_epochs: self.warmup_epochs,
            warmup_start_factor: self.warmup_start_factor,
            min_lr: self.min_lr,
            step_epochs: self.lr_step_epochs,
            gamma: self.lr_gamma,
            pct_start: self.pct_start,
            clip_grad_norm: self.clip_grad_norm,
            accumulate: self.accumulate,
            amp: self.amp,
            ema: self.ema,
            early_stopping: self.early_stopping,
            min_delta: self.min_delta,
        }
    }
}
