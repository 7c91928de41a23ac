//! `tinytorch train` as its phases, one file each: [`setup`] (the configuration, the model,
//! optimizer and loader, and a resumed run's state), [`directory`] (the run's files: kept or
//! started anew), [`epochs`] (the epoch loop, which checkpoints as it goes) and [`report`]
//! (the final figures). [`state`] holds the run they hand on from one to the next. The
//! checkpoint format itself is `train/checkpoint.rs`.

mod directory;
mod epochs;
mod report;
mod setup;
mod state;

use super::args::TrainArgs;
use std::time::Instant;
use tinytorch::Result;

/// Run `tinytorch train`.
pub fn train(args: &TrainArgs) -> Result<()> {
    let started = Instant::now();
    let mut run = setup::start(args)?;
    let mut files = directory::open(args, &run)?;
    let throughput = epochs::train_epochs(args, &mut run, &mut files)?;
    report::finish(args, &mut run, &files.history, started, &throughput)
}
