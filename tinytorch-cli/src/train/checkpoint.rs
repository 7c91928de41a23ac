//! The checkpoints of `tinytorch train`, written and read in this one place: what a run's
//! checkpoint records beyond the model and optimizer (its [`Position`]), saving it, putting a
//! resumed run back where it stopped, and loading the trained model that `eval`, `quantize`,
//! `prune`, `distill`, `profile` and the dashboard start from (float, or int8 from
//! `quantize`).

use super::config::RunConfig;
use std::collections::BTreeMap;
use std::path::Path;
use tinytorch::io::{load_checkpoint, save_checkpoint, Checkpoint};
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::quant::load_quantized;
use tinytorch::tensor::{get_rng_state, set_rng_state, GeneratorState};
use tinytorch::train::{EarlyStopping, Ema, EpochTotals};
use tinytorch::{Error, Result};

/// The key of the run configuration (as JSON) in a checkpoint's and an int8 file's metadata:
/// what lets `eval` and the others rebuild the model without the original flags.
pub(super) const CONFIG_KEY: &str = "config";

/// The key of the moving average's update count (the average's weights are the checkpoint's
/// `ema` tensors).
const EMA_UPDATES_KEY: &str = "ema.updates";

/// Where a run stands: what a checkpoint records beyond the model and optimizer.
#[derive(Clone, Debug, Default)]
pub(super) struct Position {
    /// Completed epochs.
    pub epoch: usize,
    /// Optimizer steps taken since the start of training.
    pub step: u64,
    /// Batches of the current epoch already trained on.
    pub batch_in_epoch: u64,
    /// Sums over those batches.
    pub partial: EpochTotals,
    /// The shuffle generator's state when the current epoch began (it draws the epoch's order).
    pub loader_epoch_start: Option<GeneratorState>,
    /// Processes that trained (a distributed run resumes only with as many).
    pub world_size: usize,
    /// The early-stopping watcher's state, when the recipe stops early.
    pub early: Option<EarlyStopping>,
    /// Early stopping ended the run (a resumed run has nothing left to do).
    pub stopped: bool,
}

// The metadata's values are strings: `f64::to_string` prints the shortest string that parses
// back to the same bits, so a resumed run's sums are the interrupted run's exactly.

fn totals_to_extra(t: &EpochTotals, extra: &mut BTreeMap<String, String>) {
    extra.insert("partial.loss_sum".into(), t.loss_sum.to_string());
    extra.insert("partial.correct".into(), t.correct.to_string());
    extra.insert("partial.samples".into(), t.samples.to_string());
    extra.insert("partial.steps".into(), t.steps.to_string());
    extra.insert("partial.timed_s".into(), t.timed_s.to_string());
    extra.insert("partial.timed_samples".into(), t.timed_samples.to_string());
}

/// The sums saved by [`totals_to_extra`].
fn totals_from_extra(extra: &BTreeMap<String, String>) -> Result<EpochTotals> {
    Ok(EpochTotals {
        loss_sum: extra_num(extra, "partial.loss_sum")?,
        correct: extra_num(extra, "partial.correct")?,
        samples: extra_num(extra, "partial.samples")?,
        steps: extra_num(extra, "partial.steps")?,
        timed_s: extra_num(extra, "partial.timed_s")?,
        timed_samples: extra_num(extra, "partial.timed_samples")?,
    })
}

/// The number stored under `key`, or an error naming the key.
fn extra_num<T: std::str::FromStr>(extra: &BTreeMap<String, String>, key: &str) -> Result<T> {
    extra
        .get(key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::invalid("resume", format!("checkpoint lacks a valid '{key}'")))
}

fn early_to_extra(e: &EarlyStopping, stopped: bool, extra: &mut BTreeMap<String, String>) {
    extra.insert("early_stopping.best".into(), e.best.to_string());
    extra.insert("early_stopping.best_epoch".into(), e.best_epoch.to_string());
    extra.insert("early_stopping.bad_epochs".into(), e.bad_epochs.to_string());
    extra.insert("early_stopping.stopped".into(), stopped.to_string());
}

/// The watcher's state saved by [`early_to_extra`] into `e`; whether the run had stopped.
fn early_from_extra(e: &mut EarlyStopping, extra: &BTreeMap<String, String>) -> Result<bool> {
    e.best = extra_num(extra, "early_stopping.best")?;
    e.best_epoch = extra_num(extra, "early_stopping.best_epoch")?;
    e.bad_epochs = extra_num(extra, "early_stopping.bad_epochs")?;
    extra_num(extra, "early_stopping.stopped")
}

/// Save a finished run (`epochs` epochs, `steps` steps) as a checkpoint that `eval`,
/// `profile` and `--resume` read.
pub(super) fn save_finished(
    path: &Path,
    config: &RunConfig,
    model: &dyn Module,
    opt: &dyn Optimizer,
    epochs: usize,
    steps: u64,
) -> Result<()> {
    let pos = Position {
        epoch: epochs,
        step: steps,
        ..Default::default()
    };
    save(path, config, model, opt, &pos, None)
}

/// Save a run at `pos` (atomically: a killed save leaves the previous checkpoint whole), with
/// the global generator's state so that a resumed run draws what this one would have.
pub(super) fn save(
    path: &Path,
    config: &RunConfig,
    model: &dyn Module,
    opt: &dyn Optimizer,
    pos: &Position,
    ema: Option<&Ema>,
) -> Result<()> {
    let mut extra = BTreeMap::from([
        (CONFIG_KEY.to_string(), config.to_json().to_string()),
        ("batch_in_epoch".to_string(), pos.batch_in_epoch.to_string()),
        ("world_size".to_string(), pos.world_size.max(1).to_string()),
    ]);
    totals_to_extra(&pos.partial, &mut extra);
    if let Some(e) = &pos.early {
        early_to_extra(e, pos.stopped, &mut extra);
    }
    if let Some(ema) = ema {
        extra.insert(EMA_UPDATES_KEY.into(), ema.updates().to_string());
    }
    let mut rng = BTreeMap::from([("global".to_string(), get_rng_state())]);
    if let Some(s) = pos.loader_epoch_start {
        rng.insert("loader_epoch_start".to_string(), s);
    }
    let ckpt = Checkpoint {
        model: model.state_dict(),
        ema: ema.map_or(Ok(BTreeMap::new()), |e| e.state_dict(model))?,
        optimizer: Some(opt.state_dict()),
        rng,
        epoch: pos.epoch as u64,
        step: pos.step,
        extra,
        ..Default::default()
    };
    save_checkpoint(path, &ckpt)
}

/// Put a run back where `ckpt` left it: the model's weights, the optimizer's state, the
/// global generator and the weight average (`ema`, when the recipe keeps one). `fresh` is
/// where a new run would start (it holds the recipe's early-stopping watcher, whose state is
/// restored into it); `world` is this run's number of processes, which must be the
/// interrupted run's. Returns the interrupted run's position.
pub(super) fn resume(
    ckpt: &Checkpoint,
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    ema: Option<&mut Ema>,
    fresh: Position,
    world: usize,
) -> Result<Position> {
    let weights = ckpt.model.clone().into_iter().collect();
    model.load_state_dict(&weights, true)?;
    let state = ckpt
        .optimizer
        .as_ref()
        .ok_or_else(|| Error::invalid("resume", "the checkpoint has no optimizer state"))?;
    opt.load_state_dict(state)?;
    if let Some(g) = ckpt.rng.get("global") {
        set_rng_state(g);
    }
    // Checkpoints from before distributed training have no world size: 1.
    let trained_on: usize = extra_num(&ckpt.extra, "world_size").unwrap_or(1);
    if trained_on != world {
        return Err(Error::invalid(
            "train --resume",
            format!(
                "the checkpoint was written by a run of {trained_on} process(es); \
                 resume it with as many (this run has {world})"
            ),
        ));
    }
    let mut pos = Position {
        epoch: ckpt.epoch as usize,
        step: ckpt.step,
        batch_in_epoch: extra_num(&ckpt.extra, "batch_in_epoch")?,
        partial: totals_from_extra(&ckpt.extra)?,
        loader_epoch_start: ckpt.rng.get("loader_epoch_start").copied(),
        world_size: world,
        ..fresh
    };
    if let Some(e) = &mut pos.early {
        pos.stopped = early_from_extra(e, &ckpt.extra)?;
    }
    if let Some(ema) = ema {
        let updates = extra_num(&ckpt.extra, EMA_UPDATES_KEY)?;
        // An average that had not started yet has no weights in the checkpoint.
        if updates > 0 {
            ema.load_state_dict(model, &ckpt.ema, updates)?;
        }
    }
    Ok(pos)
}

/// The run configuration a `tinytorch train` checkpoint (read from `path`) was written with.
pub(super) fn config_of(ckpt: &Checkpoint, path: &Path) -> Result<RunConfig> {
    let text = ckpt.extra.get(CONFIG_KEY).ok_or_else(|| {
        Error::invalid(
            "checkpoint",
            format!(
                "'{}' has no run configuration; was it written by `tinytorch train`?",
                path.display()
            ),
        )
    })?;
    RunConfig::from_json(text)
}

/// The model a `tinytorch train` checkpoint holds, its weights loaded, with the run's
/// configuration (10 classes, as every supported data set has). A run that kept a moving
/// average of its weights yields the average: the model the run evaluated.
pub fn load_trained_model(path: &Path) -> Result<(RunConfig, Box<dyn Module>)> {
    let ckpt = load_checkpoint(path)?;
    let config = config_of(&ckpt, path)?;
    let model = trained_model(&config, ckpt)?;
    Ok((config, model))
}

/// The model of `ckpt` (its weight average if it kept one).
pub(super) fn trained_model(config: &RunConfig, ckpt: Checkpoint) -> Result<Box<dyn Module>> {
    let model = config.build_model(config.dataset.image_shape(), 10)?;
    let weights = if ckpt.ema.is_empty() {
        ckpt.model
    } else {
        ckpt.ema
    };
    model.load_state_dict(&weights.into_iter().collect(), true)?;
    Ok(model)
}

/// The model of an int8 file written by `tinytorch quantize` (whose safetensors metadata is
/// `metadata`), with its run configuration and how it was quantized.
pub(super) fn load_int8_model(
    path: &Path,
    metadata: &BTreeMap<String, String>,
) -> Result<(RunConfig, Box<dyn Module>, String)> {
    let config = RunConfig::from_json(metadata.get(CONFIG_KEY).ok_or_else(|| {
        Error::invalid(
            "eval",
            format!(
                "'{}' has no run configuration; was it written by `tinytorch quantize`?",
                path.display()
            ),
        )
    })?)?;
    let float = config.build_model(config.dataset.image_shape(), 10)?;
    let (model, metadata) = load_quantized(path, float)?;
    let scheme = metadata.get("scheme").cloned().unwrap_or_default();
    Ok((config, model, scheme))
}
