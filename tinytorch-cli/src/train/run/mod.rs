//! `tinytorch train` as its phases, one file each: [`setup`] (the configuration, the model,
//! optimizer and loader, and a resumed run's state), [`directory`] (the run's files: kept or
//! started anew), [`epochs`] (the epoch loop, which checkpoints as it goes) and [`report`]
//! (the final figures). The checkpoint format itself is `train/checkpoint.rs`.

mod directory;
mod epochs;
mod report;
mod setup;

use super::args::TrainArgs;
use super::checkpoint::{self, Position};
use super::config::RunConfig;
use super::data::{on_device, LoadedSplit};
use super::distributed::Replica;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;
use tinytorch::data::DataLoader;
use tinytorch::distributed::ProcessGroup;
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::train::{evaluate_with_predictions, Ema, Prediction, Trainer};
use tinytorch::{Device, Result};

/// A training run under way: what set-up built, and what the epoch loop advances.
struct Run {
    /// The run's configuration (a resumed run's is its checkpoint's).
    config: RunConfig,
    /// The process group of a `--distributed` run.
    group: Option<ProcessGroup>,
    /// Processes in the run (1 without `--distributed`).
    world: usize,
    /// Rank 0: it alone evaluates, writes checkpoints and metrics and shows the progress bar.
    lead: bool,
    /// Where the model trains.
    device: Device,
    /// The model, wrapped in DDP for a distributed run.
    model: Replica,
    opt: Box<dyn Optimizer>,
    loader: DataLoader,
    /// The test split (rank 0, unless `--no-eval`).
    test: Option<LoadedSplit>,
    /// Steps with the recipe's options, schedule and weight average.
    trainer: Trainer,
    /// Where the run stands; what a checkpoint saves.
    pos: Position,
    /// The step this invocation started at (a resumed run's is its checkpoint's).
    start_step: u64,
    /// Whether this invocation continues a checkpoint (`--resume`).
    resumed: bool,
    /// The dashboard's layer table (model.json), for a fresh run that evaluates.
    model_doc: Option<Value>,
}

impl Run {
    /// Checkpoint the run where it stands (rank 0 alone writes checkpoints).
    fn save(&self, path: &Path) -> Result<()> {
        let ema = self.trainer.ema.as_ref();
        checkpoint::save(
            path,
            &self.config,
            self.model.module(),
            self.opt.as_ref(),
            &self.pos,
            ema,
        )
    }
}

/// Run `tinytorch train`.
pub fn train(args: &TrainArgs) -> Result<()> {
    let started = Instant::now();
    let mut run = setup::start(args)?;
    let mut files = directory::open(args, &run)?;
    let throughput = epochs::train_epochs(args, &mut run, &mut files)?;
    report::finish(args, &mut run, &files.history, started, &throughput)
}

/// Evaluate `model` on `test`, with its weight average in place of its weights when there
/// is one (swapped in for the evaluation and back after it).
fn evaluate_averaged(
    model: &mut dyn Module,
    ema: Option<&mut Ema>,
    test: &LoadedSplit,
    device: Device,
) -> Result<(f64, f64, Vec<Prediction>)> {
    let mut ema = ema.filter(|e| e.updates() > 0);
    if let Some(e) = &mut ema {
        e.swap(model)?;
    }
    let result = evaluate_with_predictions(model, on_device(test.batches(1000)?, device));
    if let Some(e) = ema {
        e.swap(model)?;
    }
    result
}
