//! A training run under way: what set-up builds and the epoch loop advances, its
//! checkpoint, and the evaluation with the weight average swapped in that the epoch loop
//! and the final report share.

use crate::train::checkpoint::{self, Position};
use crate::train::config::RunConfig;
use crate::train::data::{on_device, LoadedSplit};
use crate::train::distributed::Replica;
use serde_json::Value;
use std::path::Path;
use tinytorch::data::DataLoader;
use tinytorch::distributed::ProcessGroup;
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::train::{evaluate_with_predictions, Ema, Prediction, Trainer};
use tinytorch::{Device, Result};

/// A training run under way: what set-up built, and what the epoch loop advances.
pub(super) struct Run {
    /// The run's configuration (a resumed run's is its checkpoint's).
    pub(super) config: RunConfig,
    /// The process group of a `--distributed` run.
    pub(super) group: Option<ProcessGroup>,
    /// Processes in the run (1 without `--distributed`).
    pub(super) world: usize,
    /// Rank 0: it alone evaluates, writes checkpoints and metrics and shows the progress bar.
    pub(super) lead: bool,
    /// Where the model trains.
    pub(super) device: Device,
    /// The model, wrapped in DDP for a distributed run.
    pub(super) model: Replica,
    pub(super) opt: Box<dyn Optimizer>,
    pub(super) loader: DataLoader,
    /// The test split (rank 0, unless `--no-eval`).
    pub(super) test: Option<LoadedSplit>,
    /// Steps with the recipe's options, schedule and weight average.
    pub(super) trainer: Trainer,
    /// Where the run stands; what a checkpoint saves.
    pub(super) pos: Position,
    /// The step this invocation started at (a resumed run's is its checkpoint's).
    pub(super) start_step: u64,
    /// Whether this invocation continues a checkpoint (`--resume`).
    pub(super) resumed: bool,
    /// The dashboard's layer table (model.json), for a fresh run that evaluates.
    pub(super) model_doc: Option<Value>,
}

impl Run {
    /// Checkpoint the run where it stands (rank 0 alone writes checkpoints).
    pub(super) fn save(&self, path: &Path) -> Result<()> {
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

/// Evaluate `model` on `test`, with its weight average in place of its weights when there
/// is one (swapped in for the evaluation and back after it).
pub(super) fn evaluate_averaged(
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
