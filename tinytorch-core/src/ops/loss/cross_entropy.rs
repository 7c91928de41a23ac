//! Cross entropy (`torch.nn.functional.cross_entropy`): the public door, which takes the
//! fused kernel of `fused.rs` where it applies, and the composite form (any device, index or
//! probability targets) with its hand-written backward, the reference path.

use super::fused::{fused_ce_applies, fused_cross_entropy};
use super::targets::{batch_of_one, class_weight, index_targets};
use super::{require_same_shape, Reduction};
use crate::autograd::{needs_grad, no_grad};
use crate::error::{Error, Result};
use crate::ops::require_float;
use crate::tensor::{DType, Tensor};

/// Cross entropy between logits and targets (`torch.nn.functional.cross_entropy`).
///
/// `input` is `(N, C)`, `(N, C, d1, ...)` or unbatched `(C,)`. `target` holds either class
/// indices (i64, shape of `input` without dim 1; entries equal to `ignore_index` are skipped)
/// or class probabilities (float, same shape as `input`). `weight` is one weight per class;
/// `label_smoothing` in `[0, 1]` mixes the target with the uniform distribution. With `Mean`,
/// index targets divide by the total weight of the non-ignored targets, probability targets
/// by the number of samples. Stable for any finite logits.
///
/// One fused op: the log-softmax is computed once and the backward is
/// `g * (softmax * sum(q) - q)` where `q` is the (weighted, smoothed) target distribution.
/// Class-index targets take the row-wise kernel of the input's device where it has one
/// (`Storage::cross_entropy_forward`), which keeps two numbers per sample for the backward;
/// everything else is composed from tensor ops.
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    require_float(CE, "input", input)?;
    if input.ndim() == 0 {
        return Err(Error::shape(
            CE,
            "input must have at least 1 dim (C,) or (N, C, ...), got shape []",
        ));
    }
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::invalid(
            CE,
            format!("label_smoothing must be between 0.0 and 1.0, got {label_smoothing}"),
        ));
    }
    if target.dtype().is_float() && ignore_index >= 0 {
        return Err(Error::invalid(
            CE,
            format!(
                "ignore_index is not supported for probability (floating-point) targets, got \
                 ignore_index={ignore_index}"
            ),
        ));
    }
    if fused_ce_applies(input, target, weight) {
        if let Some(loss) = fused_cross_entropy(
            input,
            target,
            weight,
            ignore_index,
            reduction,
            label_smoothing,
        )? {
            return Ok(loss);
        }
    }
    composite_cross_entropy(
        input,
        target,
        weight,
        ignore_index,
        reduction,
        label_smoothing,
    )
}

/// The op name in cross-entropy's errors and saved tensors.
pub(super) const CE: &str = "cross_entropy";

/// The composite cross entropy (any device, index or probability targets): log-softmax,
/// the target distribution `q` as a tensor, `-sum(q * logp)`; backward
/// `g * (exp(logp) * sum(q) - q)`, and for probability targets that require grad (as
/// PyTorch differentiates them) `-g * (1 - label_smoothing) * weight * logp`. The reference
/// the fused kernel is tested against.
fn composite_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    const OP: &str = CE;
    let unbatched = input.ndim() == 1;
    let (x, t) = batch_of_one(input, target)?;
    let (out, logp, q, denom) = {
        let _guard = no_grad();
        let x = x.detach();
        let logp = x.log_softmax(1)?;
        let (q, denom) = target_distribution(&x, &t, weight, ignore_index, label_smoothing)?;
        let per = q.mul(&logp)?.sum(&[1], false)?.neg()?;
        let out = match reduction {
            Reduction::None if unbatched => per.squeeze_dim(0)?,
            Reduction::None => per,
            Reduction::Sum => per.sum_all()?,
            Reduction::Mean => per.sum_all()?.div_scalar(denom)?,
        };
        (out, logp, q, denom)
    };
    // Probability targets are differentiable inputs too: q = (1 - eps) * t * w + eps / C * w.
    let target_factor = if t.dtype().is_float() && needs_grad(&[target]) {
        let classes = x.shape()[1];
        let w = class_weight(OP, weight, classes, x.ndim(), x.dtype())?;
        let f = -(1.0 - label_smoothing);
        Some(match w {
            Some(w) => w.mul_scalar(f)?,
            None => Tensor::scalar_tensor(f, x.dtype(), x.device())?,
        })
    } else {
        None
    };
    let recorded: Vec<&Tensor> = match target_factor {
        Some(_) => vec![input, target],
        None => vec![input],
    };
    if !needs_grad(&recorded) {
        return Ok(out);
    }
    let (logp, q, saved_x) = (logp.save(OP), q.save(OP), x.save(OP));
    let target_shape = target.shape().to_vec();
    let target_dtype = target.dtype();
    let mut per_shape = x.shape().to_vec();
    per_shape[1] = 1;
    let in_shape = input.shape().to_vec();
    Ok(out.record(OP, &recorded, move |g, _| {
        let q = &q.get()?;
        // Under create_graph, log-softmax again from the logits in the graph, so that the
        // gradient is differentiable w.r.t. them.
        let logp = &if crate::autograd::is_grad_enabled() {
            saved_x.get()?.log_softmax(1)?
        } else {
            logp.get()?
        };
        // The upstream gradient of each sample, shaped to broadcast along the class dim.
        let g = match reduction {
            Reduction::None => g.reshape(&per_shape)?,
            Reduction::Sum => g.clone(),
            Reduction::Mean => g.div_scalar(denom)?,
        };
        let total = q.sum(&[1], true)?;
        let dx = logp.exp()?.mul(&total)?.sub(q)?.mul(&g)?;
        let mut grads = vec![Some(dx.reshape(&in_shape)?)];
        if let Some(f) = &target_factor {
            let dt = logp.mul(f)?.mul(&g)?;
            grads.push(Some(dt.reshape(&target_shape)?.to_dtype(target_dtype)?));
        }
        Ok(grads)
    }))
}

/// The target distribution `q` `(N, C, ...)` of cross entropy on logits `x` (batched,
/// outside the graph) and `target` (class indices or probabilities), with class weights,
/// ignored targets and label smoothing folded in, and the divisor of the `Mean` reduction.
pub(super) fn target_distribution(
    x: &Tensor,
    t: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<(Tensor, f64)> {
    const OP: &str = CE;
    let _guard = no_grad();
    let prob = t.dtype().is_float();
    let classes = x.shape()[1];
    let eps = label_smoothing;
    let w = class_weight(OP, weight, classes, x.ndim(), x.dtype())?;
    let (q, denom) = if prob {
        require_same_shape(OP, x, t)?;
        let mut q = t.detach().to_dtype(x.dtype())?;
        if eps > 0.0 {
            q = q.mul_scalar(1.0 - eps)?.add_scalar(eps / classes as f64)?;
        }
        if let Some(w) = &w {
            q = q.mul(w)?;
        }
        (q, (x.numel() / classes.max(1)) as f64)
    } else {
        let (safe, keep) = index_targets(OP, x, t, ignore_index)?;
        let onehot = x.zeros_like()?.scatter_value(1, &safe.unsqueeze(1)?, 1.0)?;
        let mut q = if eps > 0.0 {
            onehot
                .mul_scalar(1.0 - eps)?
                .add_scalar(eps / classes as f64)?
        } else {
            onehot.clone()
        };
        let mut picked_w = keep.clone();
        if let Some(w) = &w {
            q = q.mul(w)?;
            picked_w = onehot.mul(w)?.sum(&[1], false)?.mul(&keep)?;
        }
        q = q.mul(&keep.unsqueeze(1)?)?;
        let denom = picked_w.sum_all()?.to_dtype(DType::F64)?.item::<f64>()?;
        (q, denom)
    };
    Ok((q, denom))
}
