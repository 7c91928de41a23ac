//! The fused Adam/AdamW step: `Storage::adam_update` sends it to the CPU kernel
//! (`cpu/adam.rs`) or the CUDA one (`cuda/adam.rs`, `kernels/adam.cu`).

use crate::backend::Storage;
use crate::error::Result;

/// The scalars of one step, in f64 as the optimizer holds them.
#[derive(Clone, Copy, Debug)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay: decoupled (AdamW) or an L2 term added to the gradient (Adam).
    pub weight_decay: f64,
    /// Whether the decay is AdamW's `p *= 1 - lr * wd`.
    pub decoupled: bool,
    /// Gradient ascent instead of descent.
    pub maximize: bool,
    /// Running-average coefficient of the gradient.
    pub beta1: f64,
    /// Running-average coefficient of the squared gradient.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// `1 - beta1^step`.
    pub bias_correction1: f64,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
}

/// The buffers of one fused Adam update: each a (storage, element offset) pair holding the
/// parameter's `n` elements contiguously from there.
pub struct AdamOperands<'a> {
    /// The parameter, updated in place.
    pub param: (&'a mut Storage, usize),
    /// Its gradient.
    pub grad: (&'a Storage, usize),
    /// The running average of the gradient, updated in place.
    pub exp_avg: (&'a mut Storage, usize),
    /// The running average of the squared gradient, updated in place.
    pub exp_avg_sq: (&'a mut Storage, usize),
    /// AMSGrad's running maximum of `exp_avg_sq`, updated in place.
    pub max_exp_avg_sq: Option<(&'a mut Storage, usize)>,
    /// Elements of the parameter.
    pub n: usize,
}

impl Storage {
    /// One Adam/AdamW step on contiguous buffers of one dtype on one device (CPU: f32, f64;
    /// CUDA: f32, f64). `Ok(false)`, nothing done, where no kernel applies.
    pub fn adam_update(ops: AdamOperands<'_>, step: &AdamStep) -> Result<bool> {
        let AdamOperands {
            param,
            grad,
            exp_avg,
            exp_avg_sq,
            max_exp_avg_sq,
            n,
        } = ops;
        match (param.0, grad.0, exp_avg.0, exp_avg_sq.0) {
            (Storage::Cpu(p), Storage::Cpu(g), Storage::Cpu(m), Storage::Cpu(v)) => {
                let v_max = match max_exp_avg_sq {
                    Some((Storage::Cpu(vm), at)) => Some((vm, at)),
                    #[allow(unreachable_patterns)] // reachable with the `cuda` feature
                    Some(_) => return Ok(false),
                    None => None,
                };
                Ok(crate::backend::cpu::adam::adam_update(
                    (p, param.1),
                    (g, grad.1),
                    (m, exp_avg.1),
                    (v, exp_avg_sq.1),
                    v_max,
                    n,
                    step,
                ))
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(p), Storage::Cuda(g), Storage::Cuda(m), Storage::Cuda(v)) => {
                let v_max = match max_exp_avg_sq {
                    Some((Storage::Cuda(vm), at)) => Some((&*vm, at)),
                    Some(_) => return Ok(false),
                    None => None,
                };
                crate::backend::cuda::adam::adam_update(
                    (p, param.1),
                    (g, grad.1),
                    (m, exp_avg.1),
                    (v, exp_avg_sq.1),
                    v_max,
                    n,
                    step,
                )
            }
            #[allow(unreachable_patterns)] // reachable with the `cuda` feature
            _ => Ok(false),
        }
    }
}
