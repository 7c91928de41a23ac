//! `tinytorch train`: train a model on an image classification data set with a progress
//! bar, per-epoch metrics (CSV, JSON lines), a curves PNG, the files `tinytorch dashboard`
//! shows, and atomic checkpoints that resume bit-identically, even in the middle of an epoch.

mod config;
mod data;
mod distill;
mod distributed;
mod latency;
mod prune;
mod quantize;
mod run;
mod run_files;

pub use config::{DatasetKind, OptimizerKind, RunConfig};
pub use distill::{distill, DistillArgs};
pub use prune::{prune, PruneArgs};
pub use quantize::{quantize, QuantizeArgs};
pub use run::{eval_checkpoint, load_trained_model, train};

use clap::Args;
use std::path::PathBuf;
use tinytorch::models::ModelKind;
use tinytorch::Result;

/// Arguments of `tinytorch train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// Data set.
    #[arg(long, value_enum, default_value = "fashion-mnist")]
    pub dataset: DatasetKind,
    /// Model: mlp, seed-cnn, lenet5 or resnet20.
    #[arg(long, default_value = "seed-cnn")]
    pub model: ModelKind,
    /// Epochs to train (a resumed run continues up to this many in total).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
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
    /// Threads that build batches ahead of the model (0: build them in the training thread).
    #[arg(long, default_value_t = 1)]
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

impl TrainArgs {
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
        })
    }
}
