//! Divergences between distributions: KL divergence, and the distillation loss built on it.

use super::{cross_entropy, KlDivReduction, Reduction};
use crate::error::{Error, Result};
use crate::ops::require_float;
use crate::tensor::Tensor;

/// Kullback-Leibler divergence `target * (log(target) - input)` with `input` given as
/// log-probabilities (`torch.nn.functional.kl_div`); with `log_target` the target is given as
/// log-probabilities too. Terms with `target = 0` contribute 0.
pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: KlDivReduction,
    log_target: bool,
) -> Result<Tensor> {
    const OP: &str = "kl_div";
    require_float(OP, "input", input)?;
    let loss = if log_target {
        target.exp()?.mul(&target.sub(input)?)?
    } else {
        // xlogy(t, t): log of 1 where t = 0 keeps 0 * log(0) out of the value and gradient.
        let pos = target.gt_scalar(0.0)?;
        let safe = target.masked_fill(&pos.logical_not()?, 1.0)?;
        target.mul(&safe.log()?)?.sub(&target.mul(input)?)?
    };
    match reduction {
        KlDivReduction::None => Ok(loss),
        KlDivReduction::Mean => loss.mean_all(),
        KlDivReduction::Sum => loss.sum_all(),
        KlDivReduction::BatchMean => {
            let n = if input.ndim() == 0 {
                1
            } else {
                input.shape()[0]
            };
            loss.sum_all()?.div_scalar(n as f64)
        }
    }
}

/// Knowledge distillation (Hinton et al., 2015): `alpha * T² * KL(p_T || q_T) + (1 - alpha) *
/// cross_entropy(student_logits, targets)`, where `p_T` and `q_T` are the teacher's and the
/// student's softmax at temperature `T` and the KL divergence is averaged over the batch
/// (`kl_div(..., reduction="batchmean")`). The `T²` keeps the soft term's gradients on the
/// scale of the hard one's as `T` grows. The teacher's logits are taken as constants.
///
/// Logits are `(N, C)`, targets `(N,)` class indices; `temperature > 0`, `alpha` in `[0, 1]`.
pub fn distillation_loss(
    student_logits: &Tensor,
    teacher_logits: &Tensor,
    targets: &Tensor,
    temperature: f64,
    alpha: f64,
) -> Result<Tensor> {
    const OP: &str = "distillation_loss";
    require_float(OP, "student_logits", student_logits)?;
    require_float(OP, "teacher_logits", teacher_logits)?;
    if student_logits.ndim() != 2 || student_logits.shape() != teacher_logits.shape() {
        return Err(Error::shape(
            OP,
            format!(
                "student and teacher logits must both be (N, C), got {:?} and {:?}",
                student_logits.shape(),
                teacher_logits.shape()
            ),
        ));
    }
    if !(temperature > 0.0 && temperature.is_finite()) {
        return Err(Error::invalid(
            OP,
            format!("temperature must be positive, got {temperature}"),
        ));
    }
    if !(0.0..=1.0).contains(&alpha) {
        return Err(Error::invalid(
            OP,
            format!("alpha must be between 0 and 1, got {alpha}"),
        ));
    }
    let soft_student = student_logits.div_scalar(temperature)?.log_softmax(-1)?;
    let soft_teacher = teacher_logits
        .detach()
        .to_dtype(student_logits.dtype())?
        .div_scalar(temperature)?
        .log_softmax(-1)?;
    let soft = kl_div(
        &soft_student,
        &soft_teacher,
        KlDivReduction::BatchMean,
        true,
    )?
    .mul_scalar(temperature * temperature)?;
    let hard = cross_entropy(student_logits, targets, None, -100, Reduction::Mean, 0.0)?;
    soft.mul_scalar(alpha)?.add(&hard.mul_scalar(1.0 - alpha)?)
}
