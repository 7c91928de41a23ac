//! The training run: build everything from the configuration (or a checkpoint), train epoch
//! by epoch, evaluate, log, plot, checkpoint; and the evaluation of a checkpoint.

use super::data::{load_split, LoadedSplit, Split};
use super::distributed::{any_rank, global_totals, join, replica};
use super::latency::Latency;
use super::quantize::load_int8_model;
use super::run_files::{model_json, write_eval_json, StepLogger};
use super::{EvalArgs, RunConfig, TrainArgs};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tinytorch::data::{DataLoader, DataLoaderOptions, DistributedSampler};
use tinytorch::io::{
    load_checkpoint, load_module, save_checkpoint, serialize_safetensors, Checkpoint,
};
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::quant::{file_metadata, quantized_parameter_count, INT8_FORMAT};
use tinytorch::tensor::{get_rng_state, set_rng_state, GeneratorState};
use tinytorch::train::run_log::{drop_torn_line, write_json_atomic};
use tinytorch::train::{
    cross_entropy_loss, evaluate, evaluate_with_predictions, plot_curves, EarlyStopping, Ema,
    EpochMetrics, EpochTotals, MetricsLog, Prediction, Progress, StepLimit, Trainer,
};
use tinytorch::{manual_seed, Device, Error, Result, Tensor};

/// Where a run stands: what a checkpoint records beyond the model and optimizer.
#[derive(Clone, Debug, Default)]
struct Position {
    /// Completed epochs.
    epoch: usize,
    /// Optimizer steps taken since the start of training.
    step: u64,
    /// Batches of the current epoch already trained on.
    batch_in_epoch: u64,
    /// Sums over those batches.
    partial: EpochTotals,
    /// The shuffle generator's state when the current epoch began (it draws the epoch's order).
    loader_epoch_start: Option<GeneratorState>,
    /// Processes that trained (a distributed run resumes only with as many).
    world_size: usize,
    /// The early-stopping watcher's state, when the recipe stops early.
    early: Option<EarlyStopping>,
    /// Early stopping ended the run (a resumed run has nothing left to do).
    stopped: bool,
}

pub(super) const CONFIG_KEY: &str = "config";

fn totals_to_extra(t: &EpochTotals, extra: &mut BTreeMap<String, String>) {
    // `f64::to_string` prints the shortest string that parses back to the same bits.
    extra.insert("partial.loss_sum".into(), t.loss_sum.to_string());
    extra.insert("partial.correct".into(), t.correct.to_string());
    extra.insert("partial.samples".into(), t.samples.to_string());
    extra.insert("partial.steps".into(), t.steps.to_string());
    extra.insert("partial.timed_s".into(), t.timed_s.to_string());
    extra.insert("partial.timed_samples".into(), t.timed_samples.to_string());
}

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

const EMA_UPDATES_KEY: &str = "ema.updates";

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

fn save(
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

fn config_of(ckpt: &Checkpoint, path: &Path) -> Result<RunConfig> {
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
fn trained_model(config: &RunConfig, ckpt: Checkpoint) -> Result<Box<dyn Module>> {
    let model = config.build_model(config.dataset.image_shape(), 10)?;
    let weights = if ckpt.ema.is_empty() {
        ckpt.model
    } else {
        ckpt.ema
    };
    model.load_state_dict(&weights.into_iter().collect(), true)?;
    Ok(model)
}

fn percent(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// Everything a run needs, built from the configuration.
pub(super) struct Session {
    pub model: Box<dyn Module>,
    pub opt: Box<dyn Optimizer>,
    pub loader: DataLoader,
    pub test: Option<LoadedSplit>,
}

/// Seed the global generator with the run's seed, then build the model, its optimizer, the
/// training loader and (with `eval`) the test split: two runs of one configuration start
/// from the same weights and see the same batches. With `shard` (rank, world size), the
/// loader takes that rank's share of every epoch (a `DistributedSampler`).
pub(super) fn build(
    config: &RunConfig,
    eval: bool,
    workers: usize,
    shard: Option<(usize, usize)>,
) -> Result<Session> {
    manual_seed(config.seed);
    let train = load_split(config, Split::Train)?;
    let test = if eval {
        Some(load_split(config, Split::Test)?)
    } else {
        None
    };
    let model = config.build_model(train.shape, train.classes)?;
    let opt = config.build_optimizer(model.parameters())?;
    let mut options = DataLoaderOptions::default()
        .batch_size(config.batch_size)
        .shuffle(config.shuffle)
        .drop_last(true)
        .seed(config.seed)
        .num_workers(workers);
    if let Some(t) = config.recipe.train_transform(train.shape) {
        options = options.transform(t);
    }
    if let Some((rank, world)) = shard {
        let sampler = DistributedSampler::new(world, rank, config.shuffle, config.seed, false)?;
        options = options.shuffle(false).sampler(Arc::new(sampler));
    }
    let loader = DataLoader::new(train.dataset, options)?;
    Ok(Session {
        model,
        opt,
        loader,
        test,
    })
}

/// Run `tinytorch train`.
pub fn train(args: &TrainArgs) -> Result<()> {
    let started = Instant::now();
    let epochs = args.epochs as usize;
    let resumed = args
        .resume
        .as_ref()
        .map(|p| load_checkpoint(p).map(|c| (c, p)))
        .transpose()?;
    let mut config = match &resumed {
        Some((ckpt, path)) => {
            let config = config_of(ckpt, path)?;
            args.check_resume_flags(&config)?;
            config
        }
        None => args.config()?,
    };
    if resumed.is_some() && args.data.is_some() {
        config.data = args.data.clone();
    }
    config.recipe.check(!args.no_eval)?;
    let group = join(args)?;
    let (rank, world) = group
        .as_ref()
        .map_or((0, 1), |g| (g.rank(), g.world_size()));
    // Rank 0 alone evaluates, writes checkpoints and metrics and shows the progress bar.
    let lead = rank == 0;
    let Session {
        model,
        mut opt,
        mut loader,
        test,
    } = build(
        &config,
        !args.no_eval && lead,
        args.workers,
        group.as_ref().map(|_| (rank, world)),
    )?;
    // A distributed CUDA run trains on the GPU of this process's local rank.
    let device = match &group {
        Some(g) if args.device.is_cuda() => g.device(),
        _ => args.device,
    };
    if device.is_cuda() && resumed.is_some() {
        return Err(Error::NotImplemented {
            op: "train --resume",
            what: "resuming on CUDA (resume on the CPU)".into(),
        });
    }
    // The trainer takes its base learning rates from the fresh optimizer, before a
    // checkpoint's scheduled rates are loaded into it.
    let mut trainer = Trainer::new(opt.as_ref());
    trainer.options = config.recipe.step_options();
    trainer.options.allow_nonfinite_loss = args.allow_nonfinite_loss;
    trainer.schedule = config.recipe.lr_schedule(loader.len())?;
    trainer.ema = config.recipe.ema()?;
    let mut pos = Position {
        early: config.recipe.early_stopping()?,
        ..Default::default()
    };
    match &resumed {
        Some((ckpt, _)) => {
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
            pos = Position {
                epoch: ckpt.epoch as usize,
                step: ckpt.step,
                batch_in_epoch: extra_num(&ckpt.extra, "batch_in_epoch")?,
                partial: totals_from_extra(&ckpt.extra)?,
                loader_epoch_start: ckpt.rng.get("loader_epoch_start").copied(),
                world_size: world,
                ..pos
            };
            if let Some(e) = &mut pos.early {
                pos.stopped = early_from_extra(e, &ckpt.extra)?;
            }
            if let Some(ema) = &mut trainer.ema {
                let updates = extra_num(&ckpt.extra, EMA_UPDATES_KEY)?;
                if updates > 0 {
                    ema.load_state_dict(model.as_ref(), &ckpt.ema, updates)?;
                }
            }
        }
        None => {
            if let Some(init) = &args.init {
                load_module(init, model.as_ref(), true)?;
            }
        }
    }

    model.to_device(device)?;
    pos.world_size = world;
    let start_step = pos.step;
    // The dashboard's layer table, of the model before DDP wraps it.
    let model_doc = match (&test, &resumed) {
        (Some(t), None) => Some(model_json(model.as_ref(), t, device, config.to_json())?),
        _ => None,
    };
    let mut model = replica(model, group.as_ref(), args.sync_bn)?;

    std::fs::create_dir_all(&args.out)?;
    let ckpt_path = args.out.join("checkpoint.safetensors");
    if lead {
        tinytorch::io::remove_torn_saves(&ckpt_path);
    }
    let jsonl = args.out.join("metrics.jsonl");
    if resumed.is_some() && lead {
        // A crash while a log line was being appended leaves it torn: cut it before
        // reading the history back and appending to the logs.
        for f in [
            "metrics.jsonl",
            "metrics.csv",
            "steps.jsonl",
            "histograms.jsonl",
        ] {
            drop_torn_line(&args.out.join(f))?;
        }
    }
    let mut history = if resumed.is_some() && jsonl.exists() {
        MetricsLog::read_jsonl(&jsonl)?
            .into_iter()
            .filter(|m| m.epoch <= pos.epoch)
            .collect()
    } else {
        // A fresh run in an old run's directory starts every log anew. (A resumed run appends;
        // the dashboard keeps the last line of each step.)
        for f in [
            "metrics.jsonl",
            "metrics.csv",
            "steps.jsonl",
            "histograms.jsonl",
            "model.json",
            "eval.json",
        ] {
            let _ = std::fs::remove_file(args.out.join(f));
        }
        Vec::new()
    };
    let mut log = MetricsLog::open(&args.out)?;
    // The dashboard's files: steps and histograms while training, the layer table once.
    let mut steps = if lead {
        Some(StepLogger::open(
            &args.out,
            args.log_every,
            args.log_histograms,
            loader.len() as u64,
        )?)
    } else {
        None
    };
    if let Some(doc) = &model_doc {
        write_json_atomic(&args.out.join("model.json"), doc)?;
    }
    let visible = lead && !args.json && std::io::stderr().is_terminal();
    trainer.step = pos.step;
    trainer.limit = StepLimit(args.max_steps.map(|m| m.saturating_sub(pos.step)));
    let batches_per_epoch = loader.len() as u64;
    if pos.stopped {
        println!("early stopping had ended this run at epoch {}", pos.epoch);
    }
    // Run-level throughput leaves out only the first step of this invocation.
    let (mut run_s, mut run_samples, mut first_epoch) = (0.0, 0u64, true);

    while pos.epoch < epochs && !trainer.limit.exhausted() && !pos.stopped {
        let epoch = pos.epoch + 1;
        match pos.loader_epoch_start {
            Some(s) => loader.set_generator_state(&s),
            None => pos.loader_epoch_start = Some(loader.generator_state()),
        }
        let lr = match &trainer.schedule {
            Some(s) => s.lr_at(pos.step, trainer.base_lrs[0]),
            None => opt.lrs()[0],
        };
        if let Some(sampler) = &loader.options().sampler {
            sampler.set_epoch(epoch as u64);
        }
        let bar = Progress::new(epoch, epochs, batches_per_epoch, visible);
        bar.set_position(pos.batch_in_epoch);
        let batches = on_device(loader.iter_from(pos.batch_in_epoch as usize)?, device);
        let t0 = Instant::now();
        let (step0, batch0) = (pos.step, pos.batch_in_epoch);
        if let Some(s) = &mut steps {
            s.start_epoch();
        }
        let done = trainer.train_epoch(
            model.as_mut(),
            opt.as_mut(),
            batches,
            &bar,
            &cross_entropy_loss,
            &mut |d| match &mut steps {
                Some(s) => s.after_step(d, step0 + d.totals.steps, epoch, batch0 + d.totals.steps),
                None => Ok(()),
            },
        )?;
        // Every rank's samples, so that all ranks (and the checkpoint) hold the run's figures.
        let done = global_totals(group.as_ref(), &done)?;
        let wall = t0.elapsed().as_secs_f64();
        run_s += if first_epoch { done.timed_s } else { wall };
        run_samples += if first_epoch {
            done.timed_samples
        } else {
            done.samples
        };
        first_epoch = false;
        pos.partial.merge(&done);
        pos.step += done.steps;
        pos.batch_in_epoch += done.steps;
        if pos.batch_in_epoch < batches_per_epoch {
            // Stopped by --max-steps inside the epoch: keep the position for --resume.
            bar.finish(&format!("epoch {epoch}: stopped after step {}", pos.step));
            if lead {
                let ema = trainer.ema.as_ref();
                save(&ckpt_path, &config, model.module(), opt.as_ref(), &pos, ema)?;
            }
            break;
        }
        let (test_loss, test_acc) = match &test {
            Some(t) => {
                let (l, a, predictions) =
                    evaluate_averaged(model.module_mut(), trainer.ema.as_mut(), t, device)?;
                let at = (epoch, pos.step);
                write_eval_json(&args.out, t, config.dataset, &predictions, at)?;
                (Some(l), Some(a))
            }
            None => (None, None),
        };
        let m = EpochMetrics {
            epoch,
            steps: pos.step,
            train_loss: pos.partial.mean_loss(),
            train_acc: pos.partial.accuracy(),
            test_loss,
            test_acc,
            lr,
            train_s: wall,
            samples_per_s: pos.partial.samples_per_s(),
        };
        let test_part = match (test_loss, test_acc) {
            (Some(l), Some(a)) => format!(" | test loss {l:.4} acc {}", percent(a)),
            _ => String::new(),
        };
        let line = format!(
            "epoch {epoch}/{}: train loss {:.4} acc {}{test_part} | {:.1} s, {:.0} samples/s",
            epochs,
            m.train_loss,
            percent(m.train_acc),
            m.train_s,
            m.samples_per_s
        );
        bar.finish("");
        let stop = match (&mut pos.early, test_loss) {
            (Some(e), Some(l)) => e.update(epoch as u64, l),
            _ => false,
        };
        let stop = any_rank(group.as_ref(), stop)?;
        pos.stopped = stop;
        pos.epoch = epoch;
        pos.batch_in_epoch = 0;
        pos.partial = EpochTotals::default();
        // The shuffle generator has drawn this epoch's order: its state now is where the next
        // epoch starts, and the checkpoint must say so, or a run resumed at this epoch
        // boundary would shuffle as a fresh run does.
        pos.loader_epoch_start = Some(loader.generator_state());
        if lead {
            println!("{line}");
            if let Some(e) = pos.early.as_ref().filter(|_| stop) {
                println!(
                    "early stopping: no better test loss for {} epochs (best {:.4} after epoch {})",
                    e.bad_epochs, e.best, e.best_epoch
                );
            }
            log.write(&m)?;
            history.push(m);
            let ema = trainer.ema.as_ref();
            save(&ckpt_path, &config, model.module(), opt.as_ref(), &pos, ema)?;
            if let Err(e) = plot_curves(&args.out.join("curves.png"), &history) {
                eprintln!("warning: no curves.png: {e}");
            }
        }
    }

    // The final figures: the last completed epoch, or the partial one a step limit cut short
    // (evaluated now).
    let last = history.last().filter(|_| pos.batch_in_epoch == 0);
    let (train_loss, train_acc, mut test_loss, mut test_acc) = match last {
        Some(m) => (m.train_loss, m.train_acc, m.test_loss, m.test_acc),
        None => (pos.partial.mean_loss(), pos.partial.accuracy(), None, None),
    };
    if last.is_none() {
        if let Some(t) = &test {
            let (l, a, _) = evaluate_averaged(model.module_mut(), trainer.ema.as_mut(), t, device)?;
            (test_loss, test_acc) = (Some(l), Some(a));
        }
    }
    if !lead {
        return Ok(());
    }
    if let Some(a) = test_acc {
        println!("test accuracy: {}", percent(a));
    }
    let comm_per_step = model.communication_s_per_step(pos.step - start_step);
    if let Some(c) = comm_per_step {
        println!(
            "distributed: {world} processes, {:.2} ms of gradient communication per step",
            c * 1e3
        );
    }
    if args.json {
        let summary = json!({
            "train_loss": train_loss,
            "train_acc": train_acc,
            "test_loss": test_loss,
            "test_acc": test_acc,
            "epochs": pos.epoch,
            "steps": pos.step,
            "wall_s": started.elapsed().as_secs_f64(),
            "samples_per_s": if run_s > 0.0 { run_samples as f64 / run_s } else { 0.0 },
            "world_size": world,
            "comm_s_per_step": comm_per_step,
        });
        println!("{summary}");
    }
    Ok(())
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

/// The batches of `batches`, copied to `device`.
pub(super) fn on_device<I>(
    batches: I,
    device: Device,
) -> impl Iterator<Item = Result<(Tensor, Tensor)>>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    batches.into_iter().map(move |b| {
        let (x, y) = b?;
        Ok((x.to_device(device)?, y.to_device(device)?))
    })
}

/// Parameters that are not zero (after unstructured pruning, fewer than all), int8 layers'
/// weights counted whole.
fn nonzero_parameters(model: &dyn Module) -> Result<usize> {
    let mut count = quantized_parameter_count(model);
    for p in model.parameters() {
        let values = p
            .detach()
            .to_dtype(tinytorch::DType::F32)?
            .to_vec::<f32>()?;
        count += values.iter().filter(|v| **v != 0.0).count();
    }
    Ok(count)
}

/// Bytes of a float model's state dict stored alone as a safetensors file (a training
/// checkpoint also holds the optimizer's state): how big the model is on disk.
pub(super) fn state_dict_bytes(model: &dyn Module) -> Result<u64> {
    Ok(serialize_safetensors(&model.state_dict(), &BTreeMap::new())?.len() as u64)
}

/// Run `tinytorch eval`: the test loss and accuracy of a checkpoint's model, or of an int8
/// model written by `tinytorch quantize`.
pub fn eval_checkpoint(args: &EvalArgs) -> Result<()> {
    let metadata = file_metadata(&args.checkpoint)?;
    let int8 = metadata.get("format").map(String::as_str) == Some(INT8_FORMAT);
    // The model, what it is (for the message) and the same as JSON fields.
    let (mut config, mut model, what, fields) = if int8 {
        let (config, model, scheme) = load_int8_model(&args.checkpoint, &metadata)?;
        (
            config,
            model,
            format!("int8, {scheme}"),
            json!({"int8": scheme}),
        )
    } else {
        let ckpt = load_checkpoint(&args.checkpoint)?;
        let config = config_of(&ckpt, &args.checkpoint)?;
        let (epochs, steps, averaged) = (ckpt.epoch, ckpt.step, !ckpt.ema.is_empty());
        let model = trained_model(&config, ckpt)?;
        let average = if averaged { ", weight average" } else { "" };
        let what = format!("after {epochs} epochs ({steps} steps{average})");
        (
            config,
            model,
            what,
            json!({"epochs": epochs, "steps": steps, "ema": averaged}),
        )
    };
    if args.data.is_some() {
        config.data = args.data.clone();
    }
    let test = load_split(&config, Split::Test)?;
    let (loss, acc) = evaluate(model.as_mut(), test.batches(1000)?)?;
    let latency = if args.latency {
        Some(Latency::measure(model.as_ref(), &test)?)
    } else {
        None
    };
    if args.json {
        let parameters = model.num_parameters() + quantized_parameter_count(model.as_ref());
        // The model alone on disk: an int8 file is that already.
        let model_bytes = if int8 {
            std::fs::metadata(&args.checkpoint)?.len()
        } else {
            state_dict_bytes(model.as_ref())?
        };
        let mut out = json!({"test_loss": loss, "test_acc": acc, "parameters": parameters,
                             "nonzero_parameters": nonzero_parameters(model.as_ref())?,
                             "model_bytes": model_bytes});
        let fields = [Some(fields), latency.as_ref().map(Latency::to_json)];
        for more in fields.into_iter().flatten() {
            if let serde_json::Value::Object(more) = more {
                out.as_object_mut().expect("an object").extend(more);
            }
        }
        println!("{out}");
    } else {
        println!(
            "{} {what}: test loss {loss:.4}, test accuracy {}",
            config.model,
            percent(acc)
        );
        if let Some(latency) = latency {
            println!("{}", latency.describe());
        }
    }
    Ok(())
}
