//! Gradient clipping (`torch.nn.utils.clip_grad_norm_`, `clip_grad_value_`).

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Scale the gradients of `params` so that their joint `norm_type` norm is at most
/// `max_norm`, and return the total norm before clipping (`torch.nn.utils.clip_grad_norm_`).
/// The scale is `max_norm / (total + 1e-6)` clamped to 1, as PyTorch; `norm_type` may be any
/// positive p or `f64::INFINITY`. Parameters without a gradient are skipped.
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Tensor> {
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::invalid(
            "clip_grad_norm_",
            format!("norm_type must be positive or inf, got {norm_type}"),
        ));
    }
    let _guard = crate::autograd::no_grad();
    let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
    if grads.is_empty() {
        return Ok(Tensor::scalar(0.0f32));
    }
    let mut norms = Vec::with_capacity(grads.len());
    for g in &grads {
        let abs = g.abs()?;
        let n = if abs.numel() == 0 {
            0.0
        } else if norm_type.is_infinite() {
            abs.max_all()?.item_f64()?
        } else {
            abs.to_dtype(crate::tensor::DType::F64)?
                .pow_scalar(norm_type)?
                .sum_all()?
                .item_f64()?
                .powf(1.0 / norm_type)
        };
        norms.push(n);
    }
    let total = if norm_type.is_infinite() {
        norms.iter().copied().fold(0.0, f64::max)
    } else {
        norms
            .iter()
            .map(|n| n.powf(norm_type))
            .sum::<f64>()
            .powf(1.0 / norm_type)
    };
    let clip_coef = (max_norm / (total + 1e-6)).min(1.0);
    if clip_coef < 1.0 {
        for g in &grads {
            g.mul_scalar_(clip_coef)?;
        }
    }
    Tensor::full(&[], total, grads[0].dtype(), grads[0].device())
}

/// Clamp every gradient of `params` into `[-clip_value, clip_value]` in place
/// (`torch.nn.utils.clip_grad_value_`).
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    if clip_value.is_nan() || clip_value < 0.0 {
        return Err(Error::invalid(
            "clip_grad_value_",
            format!("clip_value must be non-negative, got {clip_value}"),
        ));
    }
    let _guard = crate::autograd::no_grad();
    for g in params.iter().filter_map(|p| p.grad()) {
        g.clamp_(Some(-clip_value), Some(clip_value))?;
    }
    Ok(())
}
