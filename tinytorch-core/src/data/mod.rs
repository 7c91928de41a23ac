//! Datasets, loaders, transforms and readers of the classic image data sets
//! (`torch.utils.data` and a little of `torchvision`).
//!
//! A [`Dataset`] maps an index to an `(input, target)` pair; [`TensorDataset`] holds two
//! tensors and answers a whole batch with one `index_select` per tensor, which is the hot path
//! of an epoch. [`DataLoader`] batches, shuffles (with its own [`Generator`], whose state can be
//! saved and restored) and can build batches on background threads. [`transforms`] has
//! `Normalize`, `RandomCrop`, `RandomHorizontalFlip` and `ToTensor`'s scaling; [`idx`],
//! [`mnist`] and [`cifar10`] read the files of MNIST, Fashion-MNIST and CIFAR-10.
//!
//! ```
//! use std::sync::Arc;
//! use tinytorch_core::data::{DataLoader, DataLoaderOptions, TensorDataset};
//! use tinytorch_core::{DType, Device, Tensor};
//!
//! # fn main() -> tinytorch_core::Result<()> {
//! let x = Tensor::randn(&[10, 3], DType::F32, Device::Cpu)?;
//! let y = Tensor::arange(0.0, 10.0, 1.0, DType::I64, Device::Cpu)?;
//! let opts = DataLoaderOptions::default().batch_size(4).shuffle(true).seed(0);
//! let mut loader = DataLoader::new(Arc::new(TensorDataset::new(x, y)?), opts)?;
//! assert_eq!(loader.len(), 3);
//! for batch in loader.iter()? {
//!     let (inputs, targets) = batch?;
//!     assert_eq!(inputs.shape()[0], targets.shape()[0]);
//! }
//! # Ok(())
//! # }
//! ```

pub mod cifar10;
mod distributed_sampler;
mod gzip;
pub mod idx;
mod images;
mod loader;
pub mod mnist;
pub mod transforms;

pub use distributed_sampler::DistributedSampler;
pub use images::U8Images;
pub use loader::{CollateFn, DataLoader, DataLoaderIter, DataLoaderOptions};
pub use transforms::{Compose, Transform};

use crate::error::{Error, Result};
use crate::tensor::{Device, Generator};
use crate::Tensor;
use std::sync::Arc;

/// A map-style data set of `(input, target)` pairs (`torch.utils.data.Dataset`).
///
/// `Send + Sync` so that a [`DataLoader`] can share it (in an `Arc`) with its worker threads.
pub trait Dataset: Send + Sync {
    /// Number of samples (`__len__`).
    fn len(&self) -> usize;

    /// Whether the data set has no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sample `index` as `(input, target)` (`__getitem__`).
    fn get(&self, index: usize) -> Result<(Tensor, Tensor)>;

    /// The samples at `indices`, collated along a new first dimension
    /// (`__getitems__` + `default_collate`). The default stacks [`Dataset::get`]s; data sets
    /// that can gather a batch at once override it.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let samples = indices
            .iter()
            .map(|&i| self.get(i))
            .collect::<Result<Vec<_>>>()?;
        default_collate(samples)
    }
}

/// Stack the inputs and the targets of `samples` along a new first dimension
/// (`torch.utils.data.default_collate` for `(tensor, tensor)` pairs).
pub fn default_collate(samples: Vec<(Tensor, Tensor)>) -> Result<(Tensor, Tensor)> {
    if samples.is_empty() {
        return Err(Error::invalid(
            "default_collate",
            "cannot collate an empty batch",
        ));
    }
    let inputs: Vec<&Tensor> = samples.iter().map(|(x, _)| x).collect();
    let targets: Vec<&Tensor> = samples.iter().map(|(_, y)| y).collect();
    Ok((Tensor::stack(&inputs, 0)?, Tensor::stack(&targets, 0)?))
}

/// Error unless `index < len`, naming the data set kind.
fn check_index(op: &'static str, index: usize, len: usize) -> Result<()> {
    if index >= len {
        return Err(Error::index(
            op,
            format!("index {index} is out of range for a dataset of size {len}"),
        ));
    }
    Ok(())
}

/// A 1-D i64 index tensor on `device`.
fn index_tensor(indices: &[usize], device: Device) -> Result<Tensor> {
    let values: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
    Tensor::from_vec(values, &[indices.len()])?.to_device(device)
}

/// `inputs` and `targets` of a data set of `op`: at least one dimension each and the same
/// number of samples (the first dimension).
fn check_samples(op: &'static str, inputs: &Tensor, targets: &Tensor) -> Result<()> {
    if inputs.ndim() == 0 || targets.ndim() == 0 {
        return Err(Error::shape(
            op,
            format!(
                "tensors need at least one dimension, got inputs {:?} and targets {:?}",
                inputs.shape(),
                targets.shape()
            ),
        ));
    }
    if inputs.shape()[0] != targets.shape()[0] {
        return Err(Error::shape(
            op,
            format!(
                "size mismatch between tensors: inputs {:?} and targets {:?} differ in the first dimension",
                inputs.shape(),
                targets.shape()
            ),
        ));
    }
    Ok(())
}

/// Inputs and targets stored as two tensors whose first dimension indexes the samples
/// (`torch.utils.data.TensorDataset` with two tensors).
#[derive(Clone)]
pub struct TensorDataset {
    inputs: Tensor,
    targets: Tensor,
}

impl TensorDataset {
    /// Pair `inputs` and `targets`; both need at least one dimension and the same size of
    /// the first one.
    pub fn new(inputs: Tensor, targets: Tensor) -> Result<TensorDataset> {
        check_samples("TensorDataset", &inputs, &targets)?;
        Ok(TensorDataset { inputs, targets })
    }

    /// The input tensor (`tensors[0]`).
    pub fn inputs(&self) -> &Tensor {
        &self.inputs
    }

    /// The target tensor (`tensors[1]`).
    pub fn targets(&self) -> &Tensor {
        &self.targets
    }
}

impl Dataset for TensorDataset {
    fn len(&self) -> usize {
        self.inputs.shape()[0]
    }

    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        check_index("TensorDataset::get", index, self.len())?;
        let i = index as isize;
        Ok((self.inputs.select(0, i)?, self.targets.select(0, i)?))
    }

    /// One `index_select` of contiguous rows per tensor.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let len = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= len) {
            check_index("TensorDataset::get_batch", bad, len)?;
        }
        let x_idx = index_tensor(indices, self.inputs.device())?;
        let y_idx = if self.targets.device() == self.inputs.device() {
            x_idx.clone()
        } else {
            index_tensor(indices, self.targets.device())?
        };
        Ok((
            self.inputs.index_select(0, &x_idx)?,
            self.targets.index_select(0, &y_idx)?,
        ))
    }
}

/// The samples of `dataset` at `indices`, in that order (`torch.utils.data.Subset`).
#[derive(Clone)]
pub struct Subset {
    dataset: Arc<dyn Dataset>,
    indices: Vec<usize>,
}

impl Subset {
    /// A view of `dataset` restricted to `indices`; every index must be in range.
    pub fn new(dataset: Arc<dyn Dataset>, indices: Vec<usize>) -> Result<Subset> {
        let len = dataset.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= len) {
            check_index("Subset", bad, len)?;
        }
        Ok(Subset { dataset, indices })
    }

    /// The indices into the underlying data set.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The underlying data set.
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.dataset
    }
}

impl Dataset for Subset {
    fn len(&self) -> usize {
        self.indices.len()
    }

    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        check_index("Subset::get", index, self.len())?;
        self.dataset.get(self.indices[index])
    }

    /// Maps the indices and keeps the underlying data set's batch fast path.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let len = self.len();
        let mapped = indices
            .iter()
            .map(|&i| {
                check_index("Subset::get_batch", i, len)?;
                Ok(self.indices[i])
            })
            .collect::<Result<Vec<_>>>()?;
        self.dataset.get_batch(&mapped)
    }
}

impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        (**self).get(index)
    }
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        (**self).get_batch(indices)
    }
}

/// `n` random 64-bit words from `gen`, drawn in one call (the generator keeps its u64
/// stream private; `randint` over `[0, 2^63 - 1)` exposes 63 uniform bits per draw).
fn random_words(n: usize, gen: &mut Generator) -> Result<Vec<u64>> {
    let t = Tensor::randint_with(0, i64::MAX, &[n], Device::Cpu, gen)?;
    Ok(t.to_vec::<i64>()?.into_iter().map(|v| v as u64).collect())
}

/// A uniformly random permutation of `0..n` drawn from `gen` (`torch.randperm(n,
/// generator=gen)`; the order differs from PyTorch's, whose generator differs). Fisher-Yates,
/// each swap position taken from 63 random bits by a multiply-shift, so the bias is below
/// `n / 2^63`.
pub fn randperm(n: usize, gen: &mut Generator) -> Result<Vec<usize>> {
    let words = random_words(n, gen)?;
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = ((words[i] as u128 * (i as u128 + 1)) >> 63) as usize;
        perm.swap(i, j);
    }
    Ok(perm)
}

/// Sizes of the parts for [`random_split`]: absolute lengths or fractions of the data set.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitLengths<'a> {
    /// Lengths that must add up to the data set's length.
    Counts(&'a [usize]),
    /// Fractions that must add up to 1; the remainder of the rounding down goes one sample at
    /// a time to the first parts, as in PyTorch.
    Fractions(&'a [f64]),
}

/// The part lengths for `lengths` over `n` samples, checked as `random_split` does.
fn split_counts(lengths: &SplitLengths, n: usize) -> Result<Vec<usize>> {
    const OP: &str = "random_split";
    match lengths {
        SplitLengths::Counts(c) => {
            let total: usize = c.iter().sum();
            if total != n {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "sum of input lengths {c:?} = {total} does not equal the length of the input dataset {n}"
                    ),
                ));
            }
            Ok(c.to_vec())
        }
        SplitLengths::Fractions(f) => {
            if f.iter().any(|x| !(0.0..=1.0).contains(x)) {
                return Err(Error::invalid(
                    OP,
                    format!("fractions {f:?} must all be between 0 and 1"),
                ));
            }
            let sum: f64 = f.iter().sum();
            if (sum - 1.0).abs() > 1e-6 {
                return Err(Error::invalid(
                    OP,
                    format!("fractions {f:?} sum to {sum}, expected 1"),
                ));
            }
            let mut counts: Vec<usize> =
                f.iter().map(|x| (x * n as f64).floor() as usize).collect();
            let rest = n - counts.iter().sum::<usize>().min(n);
            let parts = counts.len();
            for k in 0..rest {
                counts[k % parts] += 1;
            }
            Ok(counts)
        }
    }
}

/// Split `dataset` into non-overlapping random subsets of the given sizes
/// (`torch.utils.data.random_split(dataset, lengths, generator)`). The same generator state
/// gives the same split.
pub fn random_split(
    dataset: Arc<dyn Dataset>,
    lengths: SplitLengths,
    gen: &mut Generator,
) -> Result<Vec<Subset>> {
    let n = dataset.len();
    let counts = split_counts(&lengths, n)?;
    let perm = randperm(n, gen)?;
    let mut start = 0;
    let mut parts = Vec::with_capacity(counts.len());
    for c in counts {
        parts.push(Subset {
            dataset: dataset.clone(),
            indices: perm[start..start + c].to_vec(),
        });
        start += c;
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randperm_is_a_permutation_and_deterministic() {
        let mut g = Generator::new(3);
        let p = randperm(1000, &mut g).unwrap();
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_eq!(p, randperm(1000, &mut Generator::new(3)).unwrap());
        assert_ne!(p, randperm(1000, &mut g).unwrap());
        assert!(randperm(0, &mut g).unwrap().is_empty());
    }

    #[test]
    fn fractions_distribute_the_remainder_to_the_first_parts() {
        // Sizes from PyTorch: random_split(range(11), [0.3, 0.3, 0.4]) -> [4, 3, 4],
        // random_split(range(10), [0.25, 0.25, 0.5]) -> [3, 2, 5].
        let c = split_counts(&SplitLengths::Fractions(&[0.3, 0.3, 0.4]), 11).unwrap();
        assert_eq!(c, vec![4, 3, 4]);
        let c = split_counts(&SplitLengths::Fractions(&[0.25, 0.25, 0.5]), 10).unwrap();
        assert_eq!(c, vec![3, 2, 5]);
    }
}
