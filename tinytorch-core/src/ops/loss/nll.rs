//! Negative log-likelihood (`torch.nn.functional.nll_loss`), composed from tensor ops.

use super::targets::{batch_of_one, class_weight, index_targets};
use super::Reduction;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::ops::require_float;
use crate::tensor::Tensor;

/// Negative log-likelihood of log-probabilities `input` `(N, C, ...)` or `(C,)` at class
/// indices `target` (`torch.nn.functional.nll_loss`), with class weights and `ignore_index`;
/// `Mean` divides by the total weight of the non-ignored targets.
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "nll_loss";
    require_float(OP, "input", input)?;
    if input.ndim() == 0 {
        return Err(Error::shape(
            OP,
            "input must have at least 1 dim (C,) or (N, C, ...), got shape []",
        ));
    }
    let unbatched = input.ndim() == 1;
    let (x, t) = batch_of_one(input, target)?;
    let classes = x.shape()[1];
    let (safe, keep) = index_targets(OP, &x, &t, ignore_index)?;
    let w = class_weight(OP, weight, classes, x.ndim(), x.dtype())?;
    // The weight of each sample's target class (0 where ignored); no gradient flows to it.
    let picked_w = match &w {
        Some(w) => {
            let _guard = no_grad();
            x.detach()
                .zeros_like()?
                .scatter_value(1, &safe.unsqueeze(1)?, 1.0)?
                .mul(w)?
                .sum(&[1], false)?
                .mul(&keep)?
        }
        None => keep,
    };
    let picked = x.gather(1, &safe.unsqueeze(1)?)?.squeeze_dim(1)?;
    let per = picked.mul(&picked_w)?.neg()?;
    match reduction {
        Reduction::None if unbatched => per.squeeze_dim(0),
        Reduction::None => Ok(per),
        Reduction::Sum => per.sum_all(),
        Reduction::Mean => per.sum_all()?.div(&picked_w.sum_all()?),
    }
}
