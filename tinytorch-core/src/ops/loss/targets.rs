//! Class-index targets and class weights, checked for cross entropy and NLL: their dtype,
//! shape and range, `ignore_index`, and unbatched `(C,)` inputs.

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// Class weights reshaped to broadcast along dim 1 of an input of `ndim` dims, as `dtype`.
pub(super) fn class_weight(
    op: &'static str,
    weight: Option<&Tensor>,
    classes: usize,
    ndim: usize,
    dtype: DType,
) -> Result<Option<Tensor>> {
    let Some(w) = weight else { return Ok(None) };
    check_class_weight(op, w, classes)?;
    let mut shape = vec![1; ndim];
    shape[1] = classes;
    Ok(Some(w.detach().to_dtype(dtype)?.reshape(&shape)?))
}

/// Error unless `w` holds one weight per class.
pub(super) fn check_class_weight(op: &'static str, w: &Tensor, classes: usize) -> Result<()> {
    if w.shape() == [classes] {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "weight must have shape [{classes}] (one per class), got {:?}",
            w.shape()
        ),
    ))
}

/// Error unless `target` holds i64 class indices shaped like `input` `(N, C, ...)` without
/// dim 1.
pub(super) fn check_index_target_shape(
    op: &'static str,
    input: &Tensor,
    target: &Tensor,
) -> Result<()> {
    if target.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "class-index targets must be i64, got {} (use a float target of the input's shape for class probabilities)",
                target.dtype()
            ),
        ));
    }
    let mut expected = input.shape().to_vec();
    expected.remove(1);
    if target.shape() != expected.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "target shape {:?} does not match input shape {:?} (expected target shape {expected:?})",
                target.shape(),
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// Error naming the first target that is neither `ignore_index` nor a class in `0..classes`.
pub(super) fn check_index_target_values(
    op: &'static str,
    values: &[i64],
    classes: usize,
    ignore_index: i64,
) -> Result<()> {
    let classes = classes as i64;
    match values
        .iter()
        .find(|&&v| v != ignore_index && !(0..classes).contains(&v))
    {
        None => Ok(()),
        Some(bad) => Err(Error::index(
            op,
            format!("target {bad} is out of bounds for {classes} classes"),
        )),
    }
}

/// Checked class-index targets: the targets with ignored entries replaced by 0, and a float
/// mask (1 = kept) shaped like the targets.
pub(super) fn index_targets(
    op: &'static str,
    input: &Tensor,
    target: &Tensor,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    check_index_target_shape(op, input, target)?;
    let values = target.to_vec::<i64>()?;
    check_index_target_values(op, &values, input.shape()[1], ignore_index)?;
    let keep = target.ne_scalar(ignore_index as f64)?;
    let safe = target.masked_fill(&keep.logical_not()?, 0.0)?;
    Ok((safe, keep.to_dtype(input.dtype())?))
}

/// Move an unbatched input `(C,)` (and its target) to a batch of one.
pub(super) fn batch_of_one(input: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    if input.ndim() == 1 {
        Ok((input.unsqueeze(0)?, target.unsqueeze(0)?))
    } else {
        Ok((input.clone(), target.clone()))
    }
}
