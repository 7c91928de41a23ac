//! Phase one of `tinytorch train`: set-up and resume. The run's configuration (from the
//! flags, or from the checkpoint `--resume` names), the process group, the model, optimizer,
//! loader and trainer, and for a resumed run the weights, optimizer state, generators and
//! position it had reached.

use super::state::Run;
use crate::train::args::TrainArgs;
use crate::train::checkpoint::{config_of, resume, Position};
use crate::train::config::RunConfig;
use crate::train::distributed::{join, replica};
use crate::train::run_files::model_json;
use crate::train::session::{build, Session};
use std::path::PathBuf;
use tinytorch::data::DataLoader;
use tinytorch::io::{load_checkpoint, load_module, Checkpoint};
use tinytorch::optim::Optimizer;
use tinytorch::train::Trainer;
use tinytorch::{Error, Result};

/// Build the run `args` ask for, or put back the one `--resume` names.
pub(super) fn start(args: &TrainArgs) -> Result<Run> {
    let resumed = args
        .resume
        .as_ref()
        .map(|p| load_checkpoint(p).map(|c| (c, p)))
        .transpose()?;
    let config = run_config(args, resumed.as_ref())?;
    let group = join(args)?;
    let (rank, world) = group
        .as_ref()
        .map_or((0, 1), |g| (g.rank(), g.world_size()));
    // Rank 0 alone evaluates, writes checkpoints and metrics and shows the progress bar.
    let lead = rank == 0;
    let Session {
        model,
        mut opt,
        loader,
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
    let mut trainer = trainer_for(args, &config, opt.as_ref(), &loader)?;
    let fresh = Position {
        early: config.recipe.early_stopping()?,
        ..Default::default()
    };
    let mut pos = match &resumed {
        Some((ckpt, _)) => {
            let ema = trainer.ema.as_mut();
            resume(ckpt, model.as_ref(), opt.as_mut(), ema, fresh, world)?
        }
        None => {
            if let Some(init) = &args.init {
                load_module(init, model.as_ref(), true)?;
            }
            fresh
        }
    };
    model.to_device(device)?;
    pos.world_size = world;
    // The dashboard's layer table, of the model before DDP wraps it.
    let model_doc = match (&test, &resumed) {
        (Some(t), None) => Some(model_json(model.as_ref(), t, device, config.to_json())?),
        _ => None,
    };
    let model = replica(model, group.as_ref(), args.sync_bn)?;
    Ok(Run {
        config,
        group,
        world,
        lead,
        device,
        model,
        opt,
        loader,
        test,
        trainer,
        start_step: pos.step,
        pos,
        resumed: resumed.is_some(),
        model_doc,
    })
}

/// The run's configuration: the flags' for a new run; for a resumed one its checkpoint's
/// (flags that would change it are an error), with only the data directory taken from the
/// flags, since data sets move between machines.
fn run_config(args: &TrainArgs, resumed: Option<&(Checkpoint, &PathBuf)>) -> Result<RunConfig> {
    let mut config = match resumed {
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
    Ok(config)
}

/// The trainer of the recipe: its step options, learning-rate schedule (over the loader's
/// batches per epoch) and weight average.
fn trainer_for(
    args: &TrainArgs,
    config: &RunConfig,
    opt: &dyn Optimizer,
    loader: &DataLoader,
) -> Result<Trainer> {
    // The trainer takes its base learning rates from the fresh optimizer, before a
    // checkpoint's scheduled rates are loaded into it.
    let mut trainer = Trainer::new(opt);
    trainer.options = config.recipe.step_options();
    trainer.options.allow_nonfinite_loss = args.allow_nonfinite_loss;
    trainer.schedule = config.recipe.lr_schedule(loader.len())?;
    trainer.ema = config.recipe.ema()?;
    Ok(trainer)
}
