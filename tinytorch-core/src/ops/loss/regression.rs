//! Regression losses on `input - target`: mean squared error, L1, smooth L1 and Huber.

use super::{reduce, Reduction};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `input - target` for the loss `op`: a shape error names the loss, not the subtraction.
fn difference(op: &'static str, input: &Tensor, target: &Tensor) -> Result<Tensor> {
    input.sub(target).map_err(|e| match e {
        Error::Shape { msg, .. } => Error::shape(op, format!("input and target: {msg}")),
        other => other,
    })
}

/// Mean squared error `(input - target)^2` (`torch.nn.functional.mse_loss`); shapes must
/// broadcast.
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduce(difference("mse_loss", input, target)?.square()?, reduction)
}

/// Mean absolute error `|input - target|` (`torch.nn.functional.l1_loss`).
pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduce(difference("l1_loss", input, target)?.abs()?, reduction)
}

/// `0.5 d^2 / beta` where `|d| < beta`, else `|d| - 0.5 beta`, with `d = input - target`
/// (`torch.nn.functional.smooth_l1_loss`; `beta = 0` is the L1 loss).
pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(Error::invalid(
            "smooth_l1_loss",
            format!("beta must be non-negative, got {beta}"),
        ));
    }
    let d = difference("smooth_l1_loss", input, target)?.abs()?;
    if beta == 0.0 {
        return reduce(d, reduction);
    }
    let quad = d.square()?.mul_scalar(0.5 / beta)?;
    let lin = d.sub_scalar(0.5 * beta)?;
    reduce(
        Tensor::where_cond(&d.lt_scalar(beta)?, &quad, &lin)?,
        reduction,
    )
}

/// `0.5 d^2` where `|d| < delta`, else `delta (|d| - 0.5 delta)`
/// (`torch.nn.functional.huber_loss`).
pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    if delta <= 0.0 {
        return Err(Error::invalid(
            "huber_loss",
            format!("delta must be positive, got {delta}"),
        ));
    }
    let d = difference("huber_loss", input, target)?.abs()?;
    let quad = d.square()?.mul_scalar(0.5)?;
    let lin = d.sub_scalar(0.5 * delta)?.mul_scalar(delta)?;
    reduce(
        Tensor::where_cond(&d.lt_scalar(delta)?, &quad, &lin)?,
        reduction,
    )
}
