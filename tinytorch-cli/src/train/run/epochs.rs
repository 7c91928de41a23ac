//! Phase three of `tinytorch train`: the epoch loop. Each epoch trains from where the
//! position stands (a resumed run's mid-epoch batch included), then evaluates, decides on
//! early stopping and, on rank 0, prints its line, logs its metrics, checkpoints and redraws
//! the curves. A step limit reached inside an epoch checkpoints the position and ends the
//! loop.

use super::directory::RunFiles;
use super::state::{evaluate_averaged, Run};
use crate::train::args::TrainArgs;
use crate::train::data::on_device;
use crate::train::distributed::{any_rank, global_totals};
use crate::train::eval::percent;
use crate::train::run_files::write_eval_json;
use std::io::IsTerminal;
use std::time::Instant;
use tinytorch::train::{
    cross_entropy_loss, plot_curves, EpochMetrics, EpochTotals, Progress, StepLimit,
};
use tinytorch::Result;

/// The samples per second of this invocation, leaving out only its first step (which pays
/// for first-use allocations and kernel compilation).
#[derive(Debug, Default)]
pub(super) struct Throughput {
    seconds: f64,
    samples: u64,
    past_first_epoch: bool,
}

impl Throughput {
    /// Count an epoch's figures `done`, trained in `wall` seconds: the first epoch's timed
    /// figures (without its first step), later epochs whole.
    fn add(&mut self, done: &EpochTotals, wall: f64) {
        if self.past_first_epoch {
            self.seconds += wall;
            self.samples += done.samples;
        } else {
            self.seconds += done.timed_s;
            self.samples += done.timed_samples;
        }
        self.past_first_epoch = true;
    }

    /// Samples per second (0 before any timed step).
    pub(super) fn samples_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.samples as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Train up to `--epochs` epochs in all (fewer with a step limit or early stopping).
pub(super) fn train_epochs(
    args: &TrainArgs,
    run: &mut Run,
    files: &mut RunFiles,
) -> Result<Throughput> {
    let epochs = args.epochs as usize;
    let visible = run.lead && !args.json && std::io::stderr().is_terminal();
    run.trainer.step = run.pos.step;
    run.trainer.limit = StepLimit(args.max_steps.map(|m| m.saturating_sub(run.pos.step)));
    let batches_per_epoch = run.loader.len() as u64;
    if run.pos.stopped {
        println!(
            "early stopping had ended this run at epoch {}",
            run.pos.epoch
        );
    }
    let mut throughput = Throughput::default();
    while run.pos.epoch < epochs && !run.trainer.limit.exhausted() && !run.pos.stopped {
        let epoch = run.pos.epoch + 1;
        let trained = train_epoch(run, files, epoch, epochs, visible)?;
        throughput.add(&trained.done, trained.wall);
        let pos = &mut run.pos;
        pos.partial.merge(&trained.done);
        pos.step += trained.done.steps;
        pos.batch_in_epoch += trained.done.steps;
        if pos.batch_in_epoch < batches_per_epoch {
            // Stopped by --max-steps inside the epoch: keep the position for --resume.
            let note = format!("epoch {epoch}: stopped after step {}", pos.step);
            trained.bar.finish(&note);
            if run.lead {
                run.save(&files.ckpt_path)?;
            }
            break;
        }
        end_epoch(args, run, files, epoch, trained)?;
    }
    Ok(throughput)
}

/// What training an epoch (or the part of it a step limit left) did.
struct Trained {
    /// Every rank's figures, summed.
    done: EpochTotals,
    /// The learning rate at the epoch's first step.
    lr: f64,
    /// Wall-clock seconds of the training.
    wall: f64,
    /// The epoch's progress bar, finished by the caller.
    bar: Progress,
}

/// Train epoch `epoch` (of `epochs`) from the batch the position stands at.
fn train_epoch(
    run: &mut Run,
    files: &mut RunFiles,
    epoch: usize,
    epochs: usize,
    visible: bool,
) -> Result<Trained> {
    let pos = &mut run.pos;
    // The epoch's shuffle is drawn from the generator state it began with: a resumed epoch
    // sees the order the interrupted one saw.
    match pos.loader_epoch_start {
        Some(s) => run.loader.set_generator_state(&s),
        None => pos.loader_epoch_start = Some(run.loader.generator_state()),
    }
    let lr = match &run.trainer.schedule {
        Some(s) => s.lr_at(pos.step, run.trainer.base_lrs[0]),
        None => run.opt.lrs()[0],
    };
    if let Some(sampler) = &run.loader.options().sampler {
        sampler.set_epoch(epoch as u64);
    }
    let bar = Progress::new(epoch, epochs, run.loader.len() as u64, visible);
    bar.set_position(pos.batch_in_epoch);
    let batches = on_device(
        run.loader.iter_from(pos.batch_in_epoch as usize)?,
        run.device,
    );
    let t0 = Instant::now();
    let (step0, batch0) = (pos.step, pos.batch_in_epoch);
    if let Some(s) = &mut files.steps {
        s.start_epoch();
    }
    let done = run.trainer.train_epoch(
        run.model.as_mut(),
        run.opt.as_mut(),
        batches,
        &bar,
        &cross_entropy_loss,
        &mut |d| match &mut files.steps {
            Some(s) => s.after_step(d, step0 + d.totals.steps, epoch, batch0 + d.totals.steps),
            None => Ok(()),
        },
    )?;
    // Every rank's samples, so that all ranks (and the checkpoint) hold the run's figures.
    let done = global_totals(run.group.as_ref(), &done)?;
    Ok(Trained {
        done,
        lr,
        wall: t0.elapsed().as_secs_f64(),
        bar,
    })
}

/// The end of whole epoch `epoch`: evaluate, decide on early stopping, move the position to
/// the next epoch and, on rank 0, record the epoch.
fn end_epoch(
    args: &TrainArgs,
    run: &mut Run,
    files: &mut RunFiles,
    epoch: usize,
    trained: Trained,
) -> Result<()> {
    let (test_loss, test_acc) = evaluate_epoch(args, run, epoch)?;
    let pos = &run.pos;
    let m = EpochMetrics {
        epoch,
        steps: pos.step,
        train_loss: pos.partial.mean_loss(),
        train_acc: pos.partial.accuracy(),
        test_loss,
        test_acc,
        lr: trained.lr,
        train_s: trained.wall,
        samples_per_s: pos.partial.samples_per_s(),
    };
    let line = epoch_line(&m, args.epochs);
    trained.bar.finish("");
    let stop = match (&mut run.pos.early, test_loss) {
        (Some(e), Some(l)) => e.update(epoch as u64, l),
        _ => false,
    };
    // Rank 0 alone evaluates; every rank must leave the loop with it.
    let stop = any_rank(run.group.as_ref(), stop)?;
    let pos = &mut run.pos;
    pos.stopped = stop;
    pos.epoch = epoch;
    pos.batch_in_epoch = 0;
    pos.partial = EpochTotals::default();
    // The shuffle generator has drawn this epoch's order: its state now is where the next
    // epoch starts, and the checkpoint must say so, or a run resumed at this epoch
    // boundary would shuffle as a fresh run does.
    pos.loader_epoch_start = Some(run.loader.generator_state());
    if run.lead {
        record_epoch(args, run, files, &line, m)?;
    }
    Ok(())
}

/// The test loss and accuracy after epoch `epoch`, with eval.json for the dashboard; `None`
/// without a test split (other ranks than 0, `--no-eval`).
fn evaluate_epoch(
    args: &TrainArgs,
    run: &mut Run,
    epoch: usize,
) -> Result<(Option<f64>, Option<f64>)> {
    let Some(t) = &run.test else {
        return Ok((None, None));
    };
    let ema = run.trainer.ema.as_mut();
    let (l, a, predictions) = evaluate_averaged(run.model.module_mut(), ema, t, run.device)?;
    let at = (epoch, run.pos.step);
    write_eval_json(&args.out, t, run.config.dataset, &predictions, at)?;
    Ok((Some(l), Some(a)))
}

/// The line printed after an epoch of `epochs`.
fn epoch_line(m: &EpochMetrics, epochs: u64) -> String {
    let test_part = match (m.test_loss, m.test_acc) {
        (Some(l), Some(a)) => format!(" | test loss {l:.4} acc {}", percent(a)),
        _ => String::new(),
    };
    format!(
        "epoch {}/{epochs}: train loss {:.4} acc {}{test_part} | {:.1} s, {:.0} samples/s",
        m.epoch,
        m.train_loss,
        percent(m.train_acc),
        m.train_s,
        m.samples_per_s
    )
}

/// Rank 0's record of a whole epoch: its line (and why early stopping ends the run), its
/// metrics, the checkpoint and the curves.
fn record_epoch(
    args: &TrainArgs,
    run: &Run,
    files: &mut RunFiles,
    line: &str,
    m: EpochMetrics,
) -> Result<()> {
    println!("{line}");
    if let Some(e) = run.pos.early.as_ref().filter(|_| run.pos.stopped) {
        println!(
            "early stopping: no better test loss for {} epochs (best {:.4} after epoch {})",
            e.bad_epochs, e.best, e.best_epoch
        );
    }
    files.log.write(&m)?;
    files.history.push(m);
    run.save(&files.ckpt_path)?;
    // The curves are a picture for people: a run goes on without them.
    if let Err(e) = plot_curves(&args.out.join("curves.png"), &files.history) {
        eprintln!("warning: no curves.png: {e}");
    }
    Ok(())
}
