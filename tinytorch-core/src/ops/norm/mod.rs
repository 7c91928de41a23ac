//! Normalisation ops (`torch.nn.functional.{layer_norm, rms_norm, group_norm, batch_norm}`;
//! the modules are in `nn/norm.rs`). On the CPU, layer and RMS norm run the fused kernel of
//! `fused.rs` (one pass for the statistics, one for normalise + affine, a closed-form
//! backward); the composite form below, whose gradients autograd derives, serves other
//! devices and empty inputs, and is the reference the fused kernel is tested against.
//! Training-mode batch norm has fused CPU and CUDA kernels too (same scheme), and on CUDA
//! evaluation without gradients and the running statistics' update are one kernel each;
//! group norm is composed from tensor ops.

mod fused;
#[cfg(test)]
mod fused_tests;

use crate::autograd::no_grad;
use crate::backend::NormKind;
use crate::error::{Error, Result};
use crate::ops::require_float;
use crate::tensor::{DType, Tensor};
use fused::{fused_applies, fused_norm, out_dtype};

/// Check that `p` (weight or bias) has `shape`.
fn check_affine(op: &'static str, name: &str, p: Option<&Tensor>, shape: &[usize]) -> Result<()> {
    match p {
        Some(p) if p.shape() != shape => Err(Error::shape(
            op,
            format!("{name} must have shape {shape:?}, got {:?}", p.shape()),
        )),
        _ => Ok(()),
    }
}

/// `x * weight + bias`, either optional.
fn affine(x: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let x = match weight {
        Some(w) => x.mul(w)?,
        None => x,
    };
    match bias {
        Some(b) => x.add(b),
        None => Ok(x),
    }
}

/// The last `normalized_shape.len()` dims of `x`, checked against `normalized_shape`.
fn trailing_dims(op: &'static str, x: &Tensor, normalized_shape: &[usize]) -> Result<Vec<isize>> {
    let k = normalized_shape.len();
    if k == 0 || x.ndim() < k || &x.shape()[x.ndim() - k..] != normalized_shape {
        return Err(Error::shape(
            op,
            format!(
                "normalized_shape {normalized_shape:?} must be a non-empty suffix of the input shape {:?}",
                x.shape()
            ),
        ));
    }
    Ok((1..=k as isize).map(|i| -i).collect())
}

/// Shape `[1, C, 1, ...]` that broadcasts a per-channel vector against an `ndim`-dim input.
fn channel_shape(channels: usize, ndim: usize) -> Vec<usize> {
    let mut s = vec![1; ndim];
    s[1] = channels;
    s
}

/// Layer normalisation over the trailing `normalized_shape` dims
/// (`torch.nn.functional.layer_norm`): `(x - mean) / sqrt(var + eps) * weight + bias`, with
/// the biased variance.
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    const OP: &str = "layer_norm";
    require_float(OP, "input", x)?;
    let dims = trailing_dims(OP, x, normalized_shape)?;
    check_affine(OP, "weight", weight, normalized_shape)?;
    check_affine(OP, "bias", bias, normalized_shape)?;
    if fused_applies(x, &[weight, bias]) {
        if let Some(y) = fused_norm(OP, x, normalized_shape, weight, bias, eps, NormKind::Layer)? {
            return Ok(y);
        }
    }
    layer_norm_composite(x, &dims, weight, bias, eps)?.to_dtype(out_dtype(x, &[weight, bias]))
}

/// Layer norm over `dims` from tensor ops.
pub(crate) fn layer_norm_composite(
    x: &Tensor,
    dims: &[isize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let mean = x.mean(dims, true)?;
    let var = x.var(dims, 0.0, true)?;
    let y = x.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
    affine(y, weight, bias)
}

/// Root-mean-square normalisation over the trailing `normalized_shape` dims
/// (`torch.nn.functional.rms_norm`): `x / sqrt(mean(x^2) + eps) * weight`. `eps = None` uses
/// the machine epsilon of the input's dtype, as PyTorch does.
pub fn rms_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    const OP: &str = "rms_norm";
    require_float(OP, "input", x)?;
    let dims = trailing_dims(OP, x, normalized_shape)?;
    check_affine(OP, "weight", weight, normalized_shape)?;
    let eps = eps.unwrap_or(match x.dtype() {
        DType::F64 => f64::EPSILON,
        DType::F16 => 0.000_976_562_5,
        DType::BF16 => 0.007_812_5,
        _ => f32::EPSILON as f64,
    });
    if fused_applies(x, &[weight]) {
        if let Some(y) = fused_norm(OP, x, normalized_shape, weight, None, eps, NormKind::Rms)? {
            return Ok(y);
        }
    }
    rms_norm_composite(x, &dims, weight, eps)?.to_dtype(out_dtype(x, &[weight]))
}

/// RMS norm over `dims` from tensor ops.
pub(crate) fn rms_norm_composite(
    x: &Tensor,
    dims: &[isize],
    weight: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let ms = x.square()?.mean(dims, true)?;
    let y = x.mul(&ms.add_scalar(eps)?.rsqrt()?)?;
    affine(y, weight, None)
}

/// Group normalisation (`torch.nn.functional.group_norm`): the `C` channels of an
/// `(N, C, *)` input are split into `num_groups` groups, each normalised over its channels
/// and spatial positions; `weight`/`bias` are per channel.
pub fn group_norm(
    x: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    const OP: &str = "group_norm";
    require_float(OP, "input", x)?;
    if x.ndim() < 2 {
        return Err(Error::shape(
            OP,
            format!("input must be (N, C, *), got shape {:?}", x.shape()),
        ));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    if num_groups == 0 || !c.is_multiple_of(num_groups) {
        return Err(Error::invalid(
            OP,
            format!(
                "expected number of channels in input ({c}) to be divisible by num_groups ({num_groups})"
            ),
        ));
    }
    check_affine(OP, "weight", weight, &[c])?;
    check_affine(OP, "bias", bias, &[c])?;
    let shape = x.shape().to_vec();
    let grouped = x.reshape(&[n as isize, num_groups as isize, -1])?;
    let mean = grouped.mean(&[-1], true)?;
    let var = grouped.var(&[-1], 0.0, true)?;
    let y = grouped
        .sub(&mean)?
        .mul(&var.add_scalar(eps)?.rsqrt()?)?
        .reshape(&shape)?;
    let cs = channel_shape(c, x.ndim());
    let w = weight.map(|w| w.reshape(&cs)).transpose()?;
    let b = bias.map(|b| b.reshape(&cs)).transpose()?;
    affine(y, w.as_ref(), b.as_ref())?.to_dtype(out_dtype(x, &[weight, bias]))
}

/// Batch normalisation of an `(N, C, *)` input over every dim but the channels
/// (`torch.nn.functional.batch_norm`). In training it normalises with the batch statistics
/// (biased variance) and, when running stats are given, updates them in place
/// (`running = (1 - momentum) * running + momentum * stat`, with the unbiased variance); in
/// evaluation it normalises with the running statistics. A half-precision input keeps its
/// dtype with f32 parameters, as in PyTorch (the CPU kernel reads and writes it as it is).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    let (running, after) = ((running_mean, running_var), After::Nothing);
    batch_norm_then(x, running, weight, bias, training, momentum, eps, after)
}

/// `batch_norm(...).relu()`, the pair that follows most convolutions, as one op: in
/// training on the CPU the fused kernel applies the ReLU in its output pass and folds the
/// ReLU's backward into its own (two fewer passes over the activation each way); elsewhere
/// the two ops.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_relu(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    let (running, after) = ((running_mean, running_var), After::Relu);
    batch_norm_then(x, running, weight, bias, training, momentum, eps, after)
}

/// `(batch_norm(x, ...) + residual).relu()`, the end of a residual block, as one op: in
/// training on the CPU the fused kernel adds the residual (of x's shape) and applies the
/// ReLU in its output pass (three fewer passes over the activation than the three ops);
/// elsewhere the three ops. `residual` gets the gradient through the ReLU, as with the ops.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_add_relu(
    x: &Tensor,
    residual: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    let (running, after) = ((running_mean, running_var), After::AddRelu(residual));
    batch_norm_then(x, running, weight, bias, training, momentum, eps, after)
}

/// What follows the normalisation in one batch norm op.
#[derive(Clone, Copy)]
pub(crate) enum After<'a> {
    /// Nothing.
    Nothing,
    /// A ReLU.
    Relu,
    /// The sum with a residual of the input's shape, then a ReLU.
    AddRelu(&'a Tensor),
}

/// [`batch_norm`] with the running `(mean, var)`, followed by what `after` says: the one
/// body of [`batch_norm`], [`batch_norm_relu`], [`batch_norm_add_relu`] and the
/// `BatchNorm` modules.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_then(
    x: &Tensor,
    (running_mean, running_var): (Option<&Tensor>, Option<&Tensor>),
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    after: After<'_>,
) -> Result<Tensor> {
    const OP: &str = "batch_norm";
    let out = out_dtype(x, &[weight, bias]);
    let then = |y: Tensor| match after {
        After::Nothing => y.to_dtype(out),
        After::Relu => y.relu()?.to_dtype(out),
        After::AddRelu(r) => y.to_dtype(out)?.add(r)?.relu(),
    };
    require_float(OP, "input", x)?;
    if x.ndim() < 2 {
        return Err(Error::shape(
            OP,
            format!("input must be (N, C, *), got shape {:?}", x.shape()),
        ));
    }
    if let After::AddRelu(r) = after {
        if r.shape() != x.shape() {
            return Err(Error::shape(
                "batch_norm_add_relu",
                format!(
                    "the residual must have the input's shape {:?}, got {:?}",
                    x.shape(),
                    r.shape()
                ),
            ));
        }
    }
    let c = x.shape()[1];
    for (name, t) in [
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ] {
        check_affine(OP, name, t, &[c])?;
    }
    let cs = channel_shape(c, x.ndim());
    if training {
        let count = x.numel() / c.max(1);
        if count == 0 {
            // An empty batch, as PyTorch: an empty output, the running statistics untouched
            // and zero gradients for the affine parameters, which the affine map alone gives.
            let w = weight.map(|w| w.reshape(&cs)).transpose()?;
            let b = bias.map(|b| b.reshape(&cs)).transpose()?;
            return then(affine(x.clone(), w.as_ref(), b.as_ref())?);
        }
        if count == 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected more than 1 value per channel when training, got input shape {:?}",
                    x.shape()
                ),
            ));
        }
        let fused = match residual_fusable(x, after, out) && fused_applies(x, &[weight, bias]) {
            true => fused::fused_batch_norm(x, weight, bias, eps, after)?,
            false => None,
        };
        let (y, mean, var) = match fused {
            Some(fused) => fused,
            None => {
                let (y, mean, var) = batch_norm_composite(x, weight, bias, eps)?;
                (then(y)?, mean, var)
            }
        };
        update_running(running_mean, running_var, &mean, &var, count, momentum)?;
        return Ok(y);
    }
    let (Some(rm), Some(rv)) = (running_mean, running_var) else {
        return Err(Error::invalid(
            OP,
            "running_mean and running_var are required in evaluation mode",
        ));
    };
    if residual_fusable(x, after, out) && fused_applies(x, &[weight, bias, Some(rm), Some(rv)]) {
        if let Some(y) = fused::fused_batch_norm_eval(x, rm, rv, weight, bias, eps, after)? {
            return Ok(y);
        }
    }
    // Evaluation: y = x * scale + shift with per-channel scale = weight / sqrt(var + eps)
    // and shift = bias - mean * scale (as PyTorch's CPU kernel computes it), two passes over
    // x instead of four.
    let stat = |t: &Tensor| t.detach().to_dtype(x.dtype())?.reshape(&cs);
    let (mean, var) = (stat(rm)?, stat(rv)?);
    let w = weight.map(|w| w.reshape(&cs)).transpose()?;
    let b = bias.map(|b| b.reshape(&cs)).transpose()?;
    let scale = affine(var.add_scalar(eps)?.rsqrt()?, w.as_ref(), None)?;
    let shift = affine(mean.mul(&scale)?.neg()?, None, b.as_ref())?;
    then(x.mul(&scale)?.add(&shift)?)
}

/// False for a residual that the fused kernels cannot take: one of another dtype or device
/// than x, or an output dtype other than x's (the composite path does its promotion).
fn residual_fusable(x: &Tensor, after: After<'_>, out: DType) -> bool {
    match after {
        After::AddRelu(r) => r.dtype() == x.dtype() && r.device() == x.device() && out == x.dtype(),
        _ => true,
    }
}

/// Training-mode batch norm composed from tensor ops (other devices, and the reference of
/// the fused CPU kernel): `y`, and the batch mean and biased variance (`(C,)`).
fn batch_norm_composite(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let cs = channel_shape(x.shape()[1], x.ndim());
    let dims: Vec<usize> = (0..x.ndim()).filter(|&d| d != 1).collect();
    let mean = x.mean(&dims, true)?;
    let var = x.var(&dims, 0.0, true)?;
    let y = x.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
    let w = weight.map(|w| w.reshape(&cs)).transpose()?;
    let b = bias.map(|b| b.reshape(&cs)).transpose()?;
    let y = affine(y, w.as_ref(), b.as_ref())?;
    Ok((y, mean.flatten(0, -1)?, var.flatten(0, -1)?))
}

/// The in-place running-statistics update of training-mode batch norm.
fn update_running(
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    mean: &Tensor,
    var: &Tensor,
    count: usize,
    momentum: f64,
) -> Result<()> {
    let _guard = no_grad();
    if fused::fused_update_running(running_mean, running_var, mean, var, count, momentum)? {
        return Ok(());
    }
    if let Some(rm) = running_mean {
        let m = mean.detach().flatten(0, -1)?.to_dtype(rm.dtype())?;
        rm.mul_scalar_(1.0 - momentum)?
            .add_(&m.mul_scalar(momentum)?)?;
    }
    if let Some(rv) = running_var {
        let unbiased = count as f64 / (count - 1) as f64;
        let v = var.detach().flatten(0, -1)?.to_dtype(rv.dtype())?;
        rv.mul_scalar_(1.0 - momentum)?
            .add_(&v.mul_scalar(momentum * unbiased)?)?;
    }
    Ok(())
}
