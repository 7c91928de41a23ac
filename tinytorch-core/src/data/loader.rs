//! `DataLoader`: batching, shuffling and background batch building
//! (`torch.utils.data.DataLoader`).
//!
//! Determinism: each epoch draws its sample order (and, with a transform, one seed) from the
//! loader's own [`Generator`]; batch `b` of the epoch is always built from the same indices and
//! with a generator derived from (epoch seed, `b`). So the batches are the same whatever the
//! number of workers, and restoring the generator state replays an epoch bit for bit.
//! Workers are assigned batches round-robin (as in PyTorch) and each hands its batches over a
//! bounded channel of `prefetch_factor` slots, which the iterator reads in batch order.

use super::transforms::Transform;
use super::{randperm, Dataset, DistributedSampler};
use crate::error::{Error, Result};
use crate::tensor::{Device, Generator, GeneratorState};
use crate::Tensor;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A custom collate function: turns the list of samples of a batch into one
/// `(inputs, targets)` pair (`collate_fn` of `torch.utils.data.DataLoader`).
pub type CollateFn = Arc<dyn Fn(Vec<(Tensor, Tensor)>) -> Result<(Tensor, Tensor)> + Send + Sync>;

/// Options of a [`DataLoader`], with PyTorch's defaults; set them with the builder methods.
#[derive(Clone)]
pub struct DataLoaderOptions {
    /// Samples per batch (`batch_size=1`).
    pub batch_size: usize,
    /// Draw a new random order every epoch (`shuffle=False`).
    pub shuffle: bool,
    /// Drop the last batch if it is smaller than `batch_size` (`drop_last=False`).
    pub drop_last: bool,
    /// Seed of the loader's generator (`generator=torch.Generator().manual_seed(seed)`);
    /// `None` draws one from the default generator, as PyTorch does.
    pub seed: Option<u64>,
    /// Background threads building batches; 0 builds them in the iterating thread
    /// (`num_workers=0`).
    pub num_workers: usize,
    /// Batches each worker may have ready ahead of the consumer (`prefetch_factor=2`).
    pub prefetch_factor: usize,
    /// Builds a batch from its samples instead of [`Dataset::get_batch`] (`collate_fn`).
    pub collate_fn: Option<CollateFn>,
    /// Applied to the inputs of every batch, with a per-batch generator.
    pub transform: Option<Arc<dyn Transform>>,
    /// Draws each epoch's indices instead of the loader (`sampler=`); excludes `shuffle`.
    pub sampler: Option<Arc<DistributedSampler>>,
}

impl Default for DataLoaderOptions {
    fn default() -> Self {
        DataLoaderOptions {
            batch_size: 1,
            shuffle: false,
            drop_last: false,
            seed: None,
            num_workers: 0,
            prefetch_factor: 2,
            collate_fn: None,
            transform: None,
            sampler: None,
        }
    }
}

impl DataLoaderOptions {
    /// Set `batch_size`.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }
    /// Set `shuffle`.
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// Set `drop_last`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }
    /// Seed the loader's generator.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Set `num_workers`.
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }
    /// Set `prefetch_factor`.
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = prefetch_factor;
        self
    }
    /// Set a custom collate function.
    pub fn collate_fn(mut self, collate_fn: CollateFn) -> Self {
        self.collate_fn = Some(collate_fn);
        self
    }
    /// Set a transform applied to each batch of inputs.
    pub fn transform(mut self, transform: Arc<dyn Transform>) -> Self {
        self.transform = Some(transform);
        self
    }
    /// See [`DataLoaderOptions::sampler`].
    pub fn sampler(mut self, sampler: Arc<DistributedSampler>) -> Self {
        self.sampler = Some(sampler);
        self
    }
}

/// Iterates a [`Dataset`] in batches (`torch.utils.data.DataLoader`).
pub struct DataLoader {
    dataset: Arc<dyn Dataset>,
    options: DataLoaderOptions,
    generator: Generator,
}

impl DataLoader {
    /// A loader over `dataset`; errors on `batch_size == 0` or `prefetch_factor == 0` with
    /// workers.
    pub fn new(dataset: Arc<dyn Dataset>, options: DataLoaderOptions) -> Result<DataLoader> {
        const OP: &str = "DataLoader";
        if options.batch_size == 0 {
            return Err(Error::invalid(
                OP,
                "batch_size should be a positive integer value, but got batch_size=0",
            ));
        }
        if options.sampler.is_some() && options.shuffle {
            return Err(Error::invalid(
                OP,
                "sampler option is mutually exclusive with shuffle",
            ));
        }
        if options.num_workers > 0 && options.prefetch_factor == 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "prefetch_factor must be at least 1 with num_workers={}",
                    options.num_workers
                ),
            ));
        }
        let seed = match options.seed {
            Some(s) => s,
            None => Tensor::randint(0, i64::MAX, &[], Device::Cpu)?.item::<i64>()? as u64,
        };
        Ok(DataLoader {
            dataset,
            options,
            generator: Generator::new(seed),
        })
    }

    /// Number of batches per epoch (`len(loader)`).
    pub fn len(&self) -> usize {
        let n = match &self.options.sampler {
            Some(s) => s.num_samples(self.dataset.len()),
            None => self.dataset.len(),
        };
        let b = self.options.batch_size;
        if self.options.drop_last {
            n / b
        } else {
            n.div_ceil(b)
        }
    }

    /// Whether an epoch yields no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data set being loaded.
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.dataset
    }

    /// The options the loader was built with.
    pub fn options(&self) -> &DataLoaderOptions {
        &self.options
    }

    /// The generator's state: what the next epoch will start from. Save it before an epoch
    /// (together with the batch index reached) to resume a run exactly.
    pub fn generator_state(&self) -> GeneratorState {
        self.generator.state()
    }

    /// Resume the generator from a state returned by [`DataLoader::generator_state`].
    pub fn set_generator_state(&mut self, state: &GeneratorState) {
        self.generator.set_state(state);
    }

    /// The indices of an epoch: the sampler's, or all of them (shuffled with `shuffle`).
    fn epoch_order(&mut self) -> Result<Vec<usize>> {
        let n = self.dataset.len();
        match (&self.options.sampler, self.options.shuffle) {
            (Some(sampler), _) => sampler.indices(n),
            (None, true) => randperm(n, &mut self.generator),
            (None, false) => Ok((0..n).collect()),
        }
    }

    /// Start an epoch: draws its order from the generator and yields its batches.
    pub fn iter(&mut self) -> Result<DataLoaderIter> {
        self.iter_from(0)
    }

    /// Start an epoch but skip its first `start_batch` batches without building them: with
    /// the generator state saved before the epoch, this resumes an interrupted epoch.
    pub fn iter_from(&mut self, start_batch: usize) -> Result<DataLoaderIter> {
        let order = self.epoch_order()?;
        let transform_seed = match self.options.transform {
            Some(_) => Tensor::randint_with(0, i64::MAX, &[], Device::Cpu, &mut self.generator)?
                .item::<i64>()? as u64,
            None => 0,
        };
        let plan = Arc::new(EpochPlan {
            dataset: self.dataset.clone(),
            order,
            batch_size: self.options.batch_size,
            num_batches: self.len(),
            collate_fn: self.options.collate_fn.clone(),
            transform: self.options.transform.clone(),
            transform_seed,
        });
        DataLoaderIter::start(
            plan,
            start_batch,
            self.options.num_workers,
            self.options.prefetch_factor,
        )
    }
}

/// Everything needed to build any batch of one epoch, shared with the workers.
struct EpochPlan {
    dataset: Arc<dyn Dataset>,
    order: Vec<usize>,
    batch_size: usize,
    num_batches: usize,
    collate_fn: Option<CollateFn>,
    transform: Option<Arc<dyn Transform>>,
    transform_seed: u64,
}

/// SplitMix64's finaliser: decorrelates the per-batch seeds of neighbouring batches.
fn mix_seed(seed: u64, batch: usize) -> u64 {
    let mut z = seed ^ (batch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl EpochPlan {
    /// Batch `b`: its samples collated, then the transform applied to the inputs.
    fn build(&self, b: usize) -> Result<(Tensor, Tensor)> {
        let start = b * self.batch_size;
        let end = (start + self.batch_size).min(self.order.len());
        let indices = &self.order[start..end];
        let (x, y) = match &self.collate_fn {
            Some(collate) => {
                let samples = indices
                    .iter()
                    .map(|&i| self.dataset.get(i))
                    .collect::<Result<Vec<_>>>()?;
                collate(samples)?
            }
            None => self.dataset.get_batch(indices)?,
        };
        match &self.transform {
            Some(t) => {
                let mut gen = Generator::new(mix_seed(self.transform_seed, b));
                Ok((t.apply(&x, &mut gen)?, y))
            }
            None => Ok((x, y)),
        }
    }
}

/// A batch (or the error building it) as a worker hands it over.
type BatchResult = Result<(Tensor, Tensor)>;

/// The batches of one epoch, in order (the iterator of `DataLoader`).
pub struct DataLoaderIter {
    plan: Arc<EpochPlan>,
    next: usize,
    start: usize,
    receivers: Vec<Receiver<BatchResult>>,
    workers: Vec<JoinHandle<()>>,
}

impl DataLoaderIter {
    fn start(
        plan: Arc<EpochPlan>,
        start: usize,
        num_workers: usize,
        prefetch: usize,
    ) -> Result<DataLoaderIter> {
        let start = start.min(plan.num_batches);
        let workers_needed = num_workers.min(plan.num_batches - start);
        let mut receivers = Vec::with_capacity(workers_needed);
        let mut workers = Vec::with_capacity(workers_needed);
        for w in 0..workers_needed {
            let (tx, rx) = sync_channel::<BatchResult>(prefetch);
            let plan = plan.clone();
            let handle = std::thread::Builder::new()
                .name(format!("tinytorch-loader-{w}"))
                .spawn(move || {
                    for b in (start + w..plan.num_batches).step_by(workers_needed) {
                        // A closed channel means the iterator was dropped: stop early.
                        if tx.send(plan.build(b)).is_err() {
                            break;
                        }
                    }
                })?;
            receivers.push(rx);
            workers.push(handle);
        }
        Ok(DataLoaderIter {
            plan,
            next: start,
            start,
            receivers,
            workers,
        })
    }

    /// Batches still to come.
    fn remaining(&self) -> usize {
        self.plan.num_batches - self.next
    }
}

impl Iterator for DataLoaderIter {
    type Item = Result<(Tensor, Tensor)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.plan.num_batches {
            return None;
        }
        let b = self.next;
        self.next += 1;
        if self.receivers.is_empty() {
            return Some(self.plan.build(b));
        }
        let rx = &self.receivers[(b - self.start) % self.receivers.len()];
        Some(rx.recv().unwrap_or_else(|_| {
            Err(Error::invalid(
                "DataLoader",
                format!("the worker building batch {b} stopped (it panicked)"),
            ))
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining(), Some(self.remaining()))
    }
}

impl ExactSizeIterator for DataLoaderIter {}

impl Drop for DataLoaderIter {
    fn drop(&mut self) {
        // Closing the channels first makes blocked workers stop, so the joins return.
        self.receivers.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
