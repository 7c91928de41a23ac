//! What every training command builds from a run configuration: the model, its optimizer,
//! the training loader and the test split, seeded so that one configuration always starts
//! from the same weights and sees the same batches (`train`, `prune`'s fine-tuning and
//! `distill`'s students share it).

use super::config::RunConfig;
use super::data::{load_split, LoadedSplit, Split};
use std::sync::Arc;
use tinytorch::data::{DataLoader, DataLoaderOptions, DistributedSampler};
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::{manual_seed, Result};

/// Everything a run needs, built from the configuration.
pub(super) struct Session {
    /// The model, freshly initialised from the run's seed.
    pub model: Box<dyn Module>,
    /// Its optimizer.
    pub opt: Box<dyn Optimizer>,
    /// The training batches (this rank's share in a distributed run).
    pub loader: DataLoader,
    /// The test split, when asked for.
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
