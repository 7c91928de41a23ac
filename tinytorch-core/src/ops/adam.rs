//! Adam's update of one parameter in one fused pass, where its device has a kernel (CPU and
//! CUDA, f32 and f64); `optim::Adam` and `AdamW` compose it from tensor ops otherwise.

pub use crate::backend::AdamStep;
use crate::backend::{AdamOperands, Storage};
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// A parameter's Adam state (handles on the buffers kept in its `ParamState`).
pub(crate) struct AdamMoments {
    /// Running average of the gradient.
    pub exp_avg: Tensor,
    /// Running average of the squared gradient.
    pub exp_avg_sq: Tensor,
    /// AMSGrad's running maximum of `exp_avg_sq`.
    pub max_sq: Option<Tensor>,
}

/// The update in one pass, by the parameter's device kernel (`Storage::adam_update`), when
/// the parameter, gradient and buffers are contiguous tensors of one float dtype (f32 or
/// f64) on one device, no two sharing a buffer; `Ok(false)`, nothing done, otherwise.
pub(crate) fn fused_adam_update(
    p: &Tensor,
    grad: &Tensor,
    moments: &AdamMoments,
    s: &AdamStep,
) -> Result<bool> {
    let mut all = vec![p, grad, &moments.exp_avg, &moments.exp_avg_sq];
    all.extend(&moments.max_sq);
    let eligible = matches!(p.dtype(), DType::F32 | DType::F64)
        && all
            .iter()
            .all(|t| t.device() == p.device() && t.is_contiguous() && t.dtype() == p.dtype())
        && all
            .iter()
            .enumerate()
            .all(|(i, a)| all[i + 1..].iter().all(|b| !a.shares_storage(b)));
    if !eligible {
        return Ok(false);
    }
    let AdamMoments {
        exp_avg,
        exp_avg_sq,
        max_sq,
    } = moments;
    let at = |t: &Tensor| t.layout().offset();
    let g_storage = grad.storage();
    let (mut ps, mut ms, mut vs) = (
        p.storage_mut(),
        exp_avg.storage_mut(),
        exp_avg_sq.storage_mut(),
    );
    let mut vms = max_sq.as_ref().map(|t| (t.storage_mut(), at(t)));
    Storage::adam_update(
        AdamOperands {
            param: (&mut ps, at(p)),
            grad: (&g_storage, at(grad)),
            exp_avg: (&mut ms, at(exp_avg)),
            exp_avg_sq: (&mut vs, at(exp_avg_sq)),
            max_exp_avg_sq: vms.as_mut().map(|(s, o)| (&mut **s, *o)),
            n: p.numel(),
        },
        s,
    )
}
