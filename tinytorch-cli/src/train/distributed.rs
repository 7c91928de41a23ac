//! `tinytorch train --distributed`: joining the MPI job, wrapping the model in
//! DistributedDataParallel, and summing the ranks' training figures.

use super::args::TrainArgs;
use std::time::Duration;
use tinytorch::distributed::{
    convert_sync_batchnorm, init_process_group_with, Backend, DdpOptions, DistributedDataParallel,
    ProcessGroup, ReduceOp,
};
use tinytorch::nn::Module;
use tinytorch::train::EpochTotals;
use tinytorch::{Result, Tensor};

/// The process group of a `--distributed` run (MPI; NCCL for `--device cuda`), or `None`.
pub(super) fn join(args: &TrainArgs) -> Result<Option<ProcessGroup>> {
    if !args.distributed {
        return Ok(None);
    }
    let backend = if args.device.is_cuda() {
        Backend::Nccl
    } else {
        Backend::Mpi
    };
    let timeout = Duration::from_secs(args.dist_timeout.max(1));
    init_process_group_with(backend, timeout).map(Some)
}

/// The model being trained: alone, or one replica of a data-parallel job.
pub(super) enum Replica {
    /// A single-process run.
    Alone(Box<dyn Module>),
    /// One rank of a `--distributed` run.
    Data(Box<DistributedDataParallel>),
}

/// `model` as this run trains it: wrapped in DDP (its BatchNorms synchronised with
/// `sync_bn`) when there is a group.
pub(super) fn replica(
    model: Box<dyn Module>,
    group: Option<&ProcessGroup>,
    sync_bn: bool,
) -> Result<Replica> {
    Ok(match group {
        None => Replica::Alone(model),
        Some(g) => {
            let model = if sync_bn {
                convert_sync_batchnorm(model, g)
            } else {
                model
            };
            Replica::Data(Box::new(DistributedDataParallel::new(
                model,
                g,
                DdpOptions::default(),
            )?))
        }
    })
}

impl Replica {
    /// What the training step runs (DDP's forward, which checks and syncs).
    pub(super) fn as_mut(&mut self) -> &mut dyn Module {
        match self {
            Replica::Alone(m) => m.as_mut(),
            Replica::Data(d) => d.as_mut(),
        }
    }
    /// The model itself: what checkpoints store (no `module.` prefix) and rank 0 evaluates.
    pub(super) fn module(&self) -> &dyn Module {
        match self {
            Replica::Alone(m) => m.as_ref(),
            Replica::Data(d) => d.module(),
        }
    }
    /// The model itself, mutably.
    pub(super) fn module_mut(&mut self) -> &mut dyn Module {
        match self {
            Replica::Alone(m) => m.as_mut(),
            Replica::Data(d) => d.module_mut(),
        }
    }
    /// Seconds of gradient communication per step over `steps` steps (distributed only).
    pub(super) fn communication_s_per_step(&self, steps: u64) -> Option<f64> {
        match self {
            Replica::Alone(_) => None,
            Replica::Data(d) => {
                Some(d.take_communication_time().as_secs_f64() / steps.max(1) as f64)
            }
        }
    }
}

/// This rank's epoch figures summed over the ranks (the slowest rank's time); the step count
/// is every rank's own.
pub(super) fn global_totals(group: Option<&ProcessGroup>, t: &EpochTotals) -> Result<EpochTotals> {
    let Some(g) = group else {
        return Ok(*t);
    };
    let sums = Tensor::from_vec(
        vec![
            t.loss_sum,
            t.correct as f64,
            t.samples as f64,
            t.timed_samples as f64,
        ],
        &[4],
    )?;
    g.all_reduce(&sums, ReduceOp::Sum)?;
    let time = Tensor::from_vec(vec![t.timed_s], &[1])?;
    g.all_reduce(&time, ReduceOp::Max)?;
    let s = sums.to_vec::<f64>()?;
    Ok(EpochTotals {
        loss_sum: s[0],
        correct: s[1] as u64,
        samples: s[2] as u64,
        steps: t.steps,
        timed_s: time.to_vec::<f64>()?[0],
        timed_samples: s[3] as u64,
    })
}

/// Whether any rank decided to stop (rank 0 alone evaluates, so it alone runs early
/// stopping): every rank leaves the epoch loop together instead of waiting on a collective
/// that rank 0 never joins.
pub(super) fn any_rank(group: Option<&ProcessGroup>, decided: bool) -> Result<bool> {
    let Some(g) = group else {
        return Ok(decided);
    };
    let flag = Tensor::from_vec(vec![decided as u8 as f64], &[1])?;
    g.all_reduce(&flag, ReduceOp::Max)?;
    Ok(flag.to_vec::<f64>()?[0] > 0.0)
}
