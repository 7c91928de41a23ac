//! Adam's update of one parameter in one fused pass, where a kernel can do it (`optim::Adam`
//! and `AdamW` compose it from tensor ops otherwise).

use crate::backend::cpu::adam::adam_step;
pub use crate::backend::cpu::adam::AdamStep;
use crate::backend::cpu::binary::Arith;
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use num_traits::Float;

/// A parameter's Adam state (handles on the buffers kept in its `ParamState`).
pub(crate) struct AdamMoments {
    /// Running average of the gradient.
    pub exp_avg: Tensor,
    /// Running average of the squared gradient.
    pub exp_avg_sq: Tensor,
    /// AMSGrad's running maximum of `exp_avg_sq`.
    pub max_sq: Option<Tensor>,
}

/// The update in one pass (`backend/cpu/adam.rs`) when the parameter, gradient and buffers
/// are contiguous CPU tensors of one float dtype (f32 or f64), no two sharing a buffer;
/// `Ok(false)`, nothing done, otherwise.
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
            .all(|t| t.device().is_cpu() && t.is_contiguous() && t.dtype() == p.dtype())
        && all
            .iter()
            .enumerate()
            .all(|(i, a)| all[i + 1..].iter().all(|b| !a.shares_storage(b)));
    if !eligible {
        return Ok(false);
    }
    match p.dtype() {
        DType::F32 => fused_typed::<f32>(p, grad, moments, s),
        _ => fused_typed::<f64>(p, grad, moments, s),
    }
}

/// [`fused_adam_update`] on tensors known to be eligible, of element type `T`.
fn fused_typed<T: Arith + Float>(
    p: &Tensor,
    grad: &Tensor,
    moments: &AdamMoments,
    s: &AdamStep,
) -> Result<bool> {
    let AdamMoments {
        exp_avg,
        exp_avg_sq,
        max_sq,
    } = moments;
    let g_storage = grad.storage();
    let (mut ps, mut ms, mut vs) = (
        p.storage_mut(),
        exp_avg.storage_mut(),
        exp_avg_sq.storage_mut(),
    );
    let mut vms = max_sq.as_ref().map(|t| t.storage_mut());
    let n = p.numel();
    let elems = |t: &Tensor| t.layout().offset()..t.layout().offset() + n;
    let (Some(g), Some(pd), Some(m), Some(v)) = (
        g_storage.as_cpu().and_then(T::slice),
        ps.as_cpu_mut().and_then(T::slice_mut),
        ms.as_cpu_mut().and_then(T::slice_mut),
        vs.as_cpu_mut().and_then(T::slice_mut),
    ) else {
        return Ok(false);
    };
    let v_max = match (&mut vms, max_sq) {
        (Some(store), Some(t)) => match store.as_cpu_mut().and_then(T::slice_mut) {
            Some(vm) => Some(&mut vm[elems(t)]),
            None => return Ok(false),
        },
        _ => None,
    };
    adam_step(
        &mut pd[elems(p)],
        &g[elems(grad)],
        &mut m[elems(exp_avg)],
        &mut v[elems(exp_avg_sq)],
        v_max,
        s,
    );
    Ok(true)
}
