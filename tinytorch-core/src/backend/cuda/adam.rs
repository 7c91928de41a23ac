//! The fused Adam/AdamW update on CUDA (kernels/adam.cu): the CPU kernel's maths
//! (`backend/cpu/adam.rs`), one element per thread. f32 and f64.

use super::launch::{grid, launch};
use super::op_codes::adam;
use super::{suffix, CudaStorage};
use crate::backend::{AdamStep, BackendStorage};
use crate::base::DType;
use crate::error::{Error, Result};

const MODULE: &str = "adam";

/// The update on device buffers, each operand a (buffer, element offset) pair holding `n`
/// elements from there; `Ok(false)`, nothing done, for a dtype without the kernel or
/// operands on different devices or of different dtypes.
pub(crate) fn adam_update(
    p: (&CudaStorage, usize),
    g: (&CudaStorage, usize),
    m: (&CudaStorage, usize),
    v: (&CudaStorage, usize),
    v_max: Option<(&CudaStorage, usize)>,
    n: usize,
    step: &AdamStep,
) -> Result<bool> {
    let dtype = p.0.dtype;
    let mut all = vec![p, g, m, v];
    all.extend(v_max);
    let same = all
        .iter()
        .all(|(s, _)| s.dtype == dtype && s.device() == p.0.device());
    if !matches!(dtype, DType::F32 | DType::F64) || !same {
        return Ok(false);
    }
    if let Some((s, at)) = all.iter().find(|(s, at)| at + n > s.len) {
        return Err(Error::shape(
            "adam",
            format!(
                "{n} elements from offset {at} overrun a buffer of {}",
                s.len
            ),
        ));
    }
    if n == 0 {
        return Ok(true);
    }
    let ptr = |(s, at): (&CudaStorage, usize)| s.ptr_at(at);
    let mode = match (step.decoupled, step.weight_decay != 0.0) {
        (true, _) => adam::DECOUPLED,
        (false, true) => adam::L2,
        (false, false) => adam::NO_DECAY,
    };
    launch!(
        &p.0.dev,
        MODULE,
        format!("adam_{}", suffix(dtype)),
        grid(n),
        n as i64,
        i32::from(step.maximize),
        mode,
        1.0 - step.lr * step.weight_decay,
        step.weight_decay,
        step.beta1,
        1.0 - step.beta1,
        step.beta2,
        1.0 - step.beta2,
        1.0 / step.bias_correction2_sqrt,
        step.eps,
        -step.lr / step.bias_correction1,
        ptr(p),
        ptr(g),
        ptr(m),
        ptr(v),
        v_max.map_or(0u64, ptr)
    );
    Ok(true)
}
