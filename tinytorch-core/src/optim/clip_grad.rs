//! Gradient clipping (`torch.nn.utils.clip_grad_norm_`, `clip_grad_value_`).

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

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
    // Everything stays on the gradients' device, as in PyTorch: reading a norm on the host
    // would make it wait for the device once per parameter.
    let norms = grads
        .iter()
        .map(|g| {
            let abs = g.abs()?;
            if abs.numel() == 0 {
                Tensor::zeros(&[], DType::F64, g.device())
            } else if norm_type.is_infinite() {
                abs.max_all()?.to_dtype(DType::F64)
            } else {
                abs.to_dtype(DType::F64)?.pow_scalar(norm_type)?.sum_all()
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let norms = Tensor::stack(&norms.iter().collect::<Vec<_>>(), 0)?;
    let total = if norm_type.is_infinite() {
        norms.max_all()?
    } else {
        norms.sum_all()?.pow_scalar(1.0 / norm_type)?
    };
    // max_norm / (total + 1e-6), clamped to 1 and multiplied in whatever it is (by 1 exactly
    // when no clipping is needed).
    let clip_coef = total
        .add_scalar(1e-6)?
        .reciprocal()?
        .mul_scalar(max_norm)?
        .clamp_max(1.0)?;
    for g in &grads {
        g.mul_(&clip_coef.to_dtype(g.dtype())?)?;
    }
    total.to_dtype(grads[0].dtype())
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
