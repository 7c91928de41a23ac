//! Binary cross entropy, on probabilities and on logits.

use super::{reduce, require_same_shape, Reduction};
use crate::error::{Error, Result};
use crate::ops::require_float;
use crate::tensor::Tensor;

/// Binary cross entropy of probabilities `input` in `[0, 1]`
/// (`torch.nn.functional.binary_cross_entropy`): `-w (t log p + (1 - t) log(1 - p))`, each
/// log clamped to `>= -100` as PyTorch does, so `p = 0` or `1` gives a finite loss.
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    require_float(OP, "input", input)?;
    require_same_shape(OP, input, target)?;
    let (lo, hi) = if input.numel() == 0 {
        (0.0, 0.0)
    } else {
        let d = input.detach();
        (d.min_all()?.item_f64()?, d.max_all()?.item_f64()?)
    };
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
        return Err(Error::invalid(
            OP,
            format!("all elements of input should be between 0 and 1, got range [{lo}, {hi}]"),
        ));
    }
    let log_p = input.log()?.clamp_min(-100.0)?;
    let log_q = input.rsub_scalar(1.0)?.log()?.clamp_min(-100.0)?;
    let mut loss = target
        .mul(&log_p)?
        .add(&target.rsub_scalar(1.0)?.mul(&log_q)?)?
        .neg()?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    reduce(loss, reduction)
}

/// Binary cross entropy on logits (`torch.nn.functional.binary_cross_entropy_with_logits`),
/// in the stable form `(1 - t) x + (1 + (pw - 1) t) (log1p(exp(-|x|)) + max(-x, 0))`.
/// `pos_weight` (broadcast along the last dim) weighs the positive term.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    require_float(OP, "input", input)?;
    require_same_shape(OP, input, target)?;
    // log(1 + exp(-x)) without overflow for any x.
    let softplus_neg = input
        .abs()?
        .neg()?
        .exp()?
        .log1p()?
        .add(&input.neg()?.relu()?)?;
    let scaled = match pos_weight {
        Some(pw) => target
            .mul(&pw.sub_scalar(1.0)?)?
            .add_scalar(1.0)?
            .mul(&softplus_neg)?,
        None => softplus_neg,
    };
    let mut loss = target.rsub_scalar(1.0)?.mul(input)?.add(&scaled)?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    reduce(loss, reduction)
}
