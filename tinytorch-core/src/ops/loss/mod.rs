//! Loss functions with PyTorch's semantics (`torch.nn.functional.*`; the modules are in
//! `nn/loss.rs`). `cross_entropy` (`cross_entropy.rs`) is one
//! fused op: with class-index targets, one row-wise kernel forward and one backward on the
//! input's device (`Storage::cross_entropy_forward`, `backend/fused/cross_entropy.rs`, driven
//! from `fused.rs`); elsewhere a single log-softmax pass forward,
//! `softmax - target` backward, composed from tensor ops (the readable reference path). The
//! other losses are composed from tensor ops, so autograd derives their gradients:
//! `nll.rs`, `regression.rs` (mse, l1, smooth l1, huber), `binary.rs` (binary cross
//! entropy), `divergence.rs` (KL divergence, distillation). `targets.rs` checks class-index
//! targets and class weights for cross entropy and NLL.

mod binary;
mod cross_entropy;
mod divergence;
mod fused;
mod nll;
mod regression;
mod targets;

use crate::error::{Error, Result};
use crate::tensor::Tensor;
pub use binary::{binary_cross_entropy, binary_cross_entropy_with_logits};
pub use cross_entropy::cross_entropy;
pub use divergence::{distillation_loss, kl_div};
pub use nll::nll_loss;
pub use regression::{huber_loss, l1_loss, mse_loss, smooth_l1_loss};

/// How per-element losses are combined (`reduction=` in PyTorch). The default is `Mean`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the per-element losses (`'none'`).
    None,
    /// Average them (`'mean'`, the default).
    #[default]
    Mean,
    /// Add them up (`'sum'`).
    Sum,
}

/// Reductions of [`kl_div`], which adds `'batchmean'` (sum divided by the batch size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KlDivReduction {
    /// Keep the per-element losses.
    None,
    /// Average over all elements (the PyTorch default, although it is not the true KL).
    #[default]
    Mean,
    /// Sum of all elements.
    Sum,
    /// Sum divided by `input.shape[0]`: the mathematically correct KL divergence per sample.
    BatchMean,
}

/// Apply `reduction` to a tensor of per-element losses.
pub(super) fn reduce(loss: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean_all(),
        Reduction::Sum => loss.sum_all(),
    }
}

pub(super) fn require_same_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() == target.shape() {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            format!(
                "target size {:?} must be the same as input size {:?}",
                target.shape(),
                input.shape()
            ),
        ))
    }
}
