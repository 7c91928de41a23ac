//! Losses as modules (`torch.nn.CrossEntropyLoss`, `torch.nn.MSELoss`); the functions they
//! call, and their autograd, are ops ([`crate::ops::loss`]).

use crate::error::Result;
use crate::ops::loss::{cross_entropy, mse_loss, Reduction};
use crate::tensor::Tensor;

/// The cross-entropy loss as a module (`torch.nn.CrossEntropyLoss`); call [`Self::forward`]
/// with logits and targets.
#[derive(Clone, Debug)]
pub struct CrossEntropyLoss {
    /// Optional per-class weights.
    pub weight: Option<Tensor>,
    /// Target value to skip (default -100).
    pub ignore_index: i64,
    /// How to combine per-sample losses (default mean).
    pub reduction: Reduction,
    /// Label smoothing in `[0, 1]` (default 0).
    pub label_smoothing: f64,
}

impl Default for CrossEntropyLoss {
    fn default() -> Self {
        CrossEntropyLoss {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

impl CrossEntropyLoss {
    /// The loss with PyTorch's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`cross_entropy`] with this module's settings.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        cross_entropy(
            input,
            target,
            self.weight.as_ref(),
            self.ignore_index,
            self.reduction,
            self.label_smoothing,
        )
    }
}

/// The mean-squared-error loss as a module (`torch.nn.MSELoss`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MSELoss {
    /// How to combine per-element losses (default mean).
    pub reduction: Reduction,
}

impl MSELoss {
    /// The loss with PyTorch's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`mse_loss`] with this module's reduction.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        mse_loss(input, target, self.reduction)
    }
}
