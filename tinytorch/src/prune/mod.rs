//! Pruning: zero the weights that matter least and keep them zero while the model trains on,
//! or remove whole channels so the model itself shrinks.
//!
//! - [`magnitude`]: the masks, as `torch.nn.utils.prune` computes them (unstructured L1 per
//!   tensor or global, structured by Ln norm).
//! - [`PruneMasks`]: masks applied to a model's parameters, kept applied through training by
//!   [`MaskedOptimizer`] (gradients of pruned weights are zeroed before each step, as
//!   PyTorch's `weight = weight_orig * weight_mask` makes them, so momentum and Adam state stay
//!   zero there too), with a sparsity report.
//! - [`shrink`]: a structurally pruned model rebuilt without its pruned channels, its outputs
//!   those of the masked model.

pub mod magnitude;
mod shrink;

pub use magnitude::{global_unstructured, l1_unstructured, ln_structured};
pub use shrink::shrink;

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::optim::{Optimizer, OptimizerCore};
use crate::tensor::Tensor;
use std::fmt;

/// How much to prune: a fraction of what is still kept, or a count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    /// A fraction in `[0, 1]`; the count is `round(fraction * kept)` with Python's rounding
    /// (half to even), as `torch.nn.utils.prune` counts.
    Fraction(f64),
    /// An exact number of entries (or slices).
    Count(usize),
}

impl Amount {
    /// The number of entries to prune out of `kept`.
    pub fn count(self, op: &'static str, kept: usize) -> Result<usize> {
        let n = match self {
            Amount::Fraction(f) if (0.0..=1.0).contains(&f) => {
                (f * kept as f64).round_ties_even() as usize
            }
            Amount::Fraction(f) => {
                return Err(Error::invalid(
                    op,
                    format!("a pruning fraction must be in [0, 1], got {f}"),
                ))
            }
            Amount::Count(c) => c,
        };
        if n > kept {
            return Err(Error::invalid(
                op,
                format!("cannot prune {n} entries: only {kept} are left"),
            ));
        }
        Ok(n)
    }
}

/// One pruned parameter: its name, the tensor and its mask (1 kept, 0 pruned).
#[derive(Clone)]
pub struct Masked {
    /// The parameter's state-dict name.
    pub name: String,
    /// The parameter.
    pub param: Tensor,
    /// Its mask, of the parameter's shape and dtype.
    pub mask: Tensor,
}

/// Masks over some of a model's parameters.
#[derive(Clone, Default)]
pub struct PruneMasks {
    /// The pruned parameters, in the order they were added.
    pub entries: Vec<Masked>,
}

impl PruneMasks {
    /// Set (or replace) the mask of `param` named `name`.
    pub fn set(&mut self, name: &str, param: &Tensor, mask: Tensor) -> Result<()> {
        if mask.shape() != param.shape() {
            return Err(Error::shape(
                "prune",
                format!(
                    "mask of shape {:?} for parameter {name} of shape {:?}",
                    mask.shape(),
                    param.shape()
                ),
            ));
        }
        let entry = Masked {
            name: name.to_string(),
            param: param.clone(),
            mask,
        };
        match self.entries.iter_mut().find(|e| e.name == name) {
            Some(e) => *e = entry,
            None => self.entries.push(entry),
        }
        Ok(())
    }

    /// Set a structured mask `mask` (whole output channels, dim 0) of the weight of `layer`,
    /// and the same channels' mask on its bias when it has one, so a pruned channel's output
    /// is zero and `shrink` can remove it.
    pub fn set_channels(
        &mut self,
        layer: &str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        mask: Tensor,
    ) -> Result<()> {
        if let Some(b) = bias {
            let rows = mask.flatten(1, -1)?.amax(&[1], false)?;
            self.set(&format!("{layer}.bias"), b, rows)?;
        }
        self.set(&format!("{layer}.weight"), weight, mask)
    }

    /// The mask of the parameter named `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.mask)
    }

    /// Zero the pruned weights in place.
    pub fn apply(&self) -> Result<()> {
        let _guard = no_grad();
        for e in &self.entries {
            e.param.mul_(&e.mask)?;
        }
        Ok(())
    }

    /// Zero the gradients of the pruned weights in place (before an optimizer step).
    pub fn mask_grads(&self) -> Result<()> {
        let _guard = no_grad();
        for e in &self.entries {
            if let Some(g) = e.param.grad() {
                g.mul_(&e.mask)?;
            }
        }
        Ok(())
    }

    /// Zeros per pruned parameter, and overall.
    pub fn sparsity(&self) -> Result<SparsityReport> {
        let mut rows = Vec::new();
        for e in &self.entries {
            let values = e.param.to_vec_f64()?;
            let zeros = values.iter().filter(|&&v| v == 0.0).count();
            rows.push((e.name.clone(), zeros, values.len()));
        }
        Ok(SparsityReport { rows })
    }
}

/// How sparse the pruned parameters are: `(name, zeros, elements)` per parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct SparsityReport {
    /// One row per parameter.
    pub rows: Vec<(String, usize, usize)>,
}

impl SparsityReport {
    /// Zeros over elements, across every row.
    pub fn global(&self) -> f64 {
        let zeros: usize = self.rows.iter().map(|r| r.1).sum();
        let total: usize = self.rows.iter().map(|r| r.2).sum();
        zeros as f64 / total.max(1) as f64
    }
}

impl fmt::Display for SparsityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, zeros, total) in &self.rows {
            writeln!(
                f,
                "{name:<16} {zeros:>9} / {total:<9} zero ({:.1}%)",
                100.0 * *zeros as f64 / (*total).max(1) as f64
            )?;
        }
        write!(f, "global sparsity {:.1}%", 100.0 * self.global())
    }
}

/// An optimizer whose steps keep pruned weights at zero: it zeroes their gradients, steps,
/// and zeroes the weights again (weight decay and numerical noise cannot revive them).
pub struct MaskedOptimizer {
    inner: Box<dyn Optimizer>,
    masks: PruneMasks,
}

impl MaskedOptimizer {
    /// Wrap `inner`, keeping `masks` applied.
    pub fn new(inner: Box<dyn Optimizer>, masks: PruneMasks) -> MaskedOptimizer {
        MaskedOptimizer { inner, masks }
    }

    /// The wrapped optimizer.
    pub fn into_inner(self) -> Box<dyn Optimizer> {
        self.inner
    }
}

impl Optimizer for MaskedOptimizer {
    fn core(&self) -> &OptimizerCore {
        self.inner.core()
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        self.inner.core_mut()
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn step(&mut self) -> Result<()> {
        self.masks.mask_grads()?;
        self.inner.step()?;
        self.masks.apply()
    }
}
