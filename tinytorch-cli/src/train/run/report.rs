//! Phase four of `tinytorch train`: the final report. The run's last figures (of the last
//! whole epoch, or of the partial one a step limit cut short, evaluated now), the test
//! accuracy, the gradient communication of a distributed run and, with `--json`, the
//! summary line that scripts read.

use super::epochs::Throughput;
use super::state::{evaluate_averaged, Run};
use crate::train::args::TrainArgs;
use crate::train::eval::percent;
use serde_json::json;
use std::time::Instant;
use tinytorch::train::EpochMetrics;
use tinytorch::Result;

/// The run's final figures.
struct Figures {
    train_loss: f64,
    train_acc: f64,
    test_loss: Option<f64>,
    test_acc: Option<f64>,
}

/// The figures of the last completed epoch, or of the partial one a step limit cut short
/// (evaluated now: an epoch is evaluated only when it completes).
fn final_figures(run: &mut Run, history: &[EpochMetrics]) -> Result<Figures> {
    if let Some(m) = history.last().filter(|_| run.pos.batch_in_epoch == 0) {
        return Ok(Figures {
            train_loss: m.train_loss,
            train_acc: m.train_acc,
            test_loss: m.test_loss,
            test_acc: m.test_acc,
        });
    }
    let (test_loss, test_acc) = match &run.test {
        Some(t) => {
            let ema = run.trainer.ema.as_mut();
            let (l, a, _) = evaluate_averaged(run.model.module_mut(), ema, t, run.device)?;
            (Some(l), Some(a))
        }
        None => (None, None),
    };
    Ok(Figures {
        train_loss: run.pos.partial.mean_loss(),
        train_acc: run.pos.partial.accuracy(),
        test_loss,
        test_acc,
    })
}

/// Print the final report (rank 0 alone prints; the other ranks have no test split to
/// evaluate).
pub(super) fn finish(
    args: &TrainArgs,
    run: &mut Run,
    history: &[EpochMetrics],
    started: Instant,
    throughput: &Throughput,
) -> Result<()> {
    let f = final_figures(run, history)?;
    if !run.lead {
        return Ok(());
    }
    if let Some(a) = f.test_acc {
        println!("test accuracy: {}", percent(a));
    }
    let comm_per_step = run
        .model
        .communication_s_per_step(run.pos.step - run.start_step);
    if let Some(c) = comm_per_step {
        println!(
            "distributed: {} processes, {:.2} ms of gradient communication per step",
            run.world,
            c * 1e3
        );
    }
    if args.json {
        let summary = json!({
            "train_loss": f.train_loss,
            "train_acc": f.train_acc,
            "test_loss": f.test_loss,
            "test_acc": f.test_acc,
            "epochs": run.pos.epoch,
            "steps": run.pos.step,
            "wall_s": started.elapsed().as_secs_f64(),
            "samples_per_s": throughput.samples_per_s(),
            "world_size": run.world,
            "comm_s_per_step": comm_per_step,
        });
        println!("{summary}");
    }
    Ok(())
}
