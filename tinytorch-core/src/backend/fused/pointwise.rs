//! Fused elementwise passes that the primitives would take several for: activation
//! backwards (`Storage::activation_backward`) and the optimizers' `p += alpha * d`
//! (`Storage::add_scaled_inplace`). CPU kernels in `cpu/unary.rs` and `cpu/binary.rs`; other
//! devices answer "nothing done" and the op layer composes them.

use crate::backend::cpu::{binary, unary};
use crate::backend::Storage;
use crate::base::Layout;
use crate::error::Result;

/// An activation whose backward has a fused kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivationGrad {
    /// Exact GELU: `g * (Phi(x) + x phi(x))`, from the input `x`.
    Gelu,
    /// ReLU: `g` where the output `y > 0`, else 0 (NaN passes), from the output.
    Relu,
}

impl Storage {
    /// The input's gradient of `kind` from the upstream gradient `g` (at `gl`) and the tensor
    /// the rule reads (`saved` at `sl`: the input for GELU, the output for ReLU), as a
    /// contiguous buffer; same shape and float dtype. `Ok(None)` where the device has no
    /// kernel.
    pub fn activation_backward(
        kind: ActivationGrad,
        g: &Storage,
        gl: &Layout,
        saved: &Storage,
        sl: &Layout,
    ) -> Result<Option<Storage>> {
        let kernel = match kind {
            ActivationGrad::Gelu => unary::gelu_backward,
            ActivationGrad::Relu => unary::relu_backward,
        };
        match (g.as_cpu(), saved.as_cpu()) {
            (Some(g), Some(s)) => kernel(g, gl, s, sl).map(|d| Some(Storage::Cpu(d))),
            _ => Ok(None),
        }
    }

    /// [`Storage::activation_backward`] written over the upstream gradient `g` itself, which
    /// the caller holds alone. `Ok(false)`, nothing done, where the device, dtype or layouts
    /// have no such kernel (the CPU's: contiguous f32 GELU and ReLU, f64 ReLU).
    pub fn activation_backward_inplace(
        kind: ActivationGrad,
        g: &mut Storage,
        gl: &Layout,
        saved: &Storage,
        sl: &Layout,
    ) -> Result<bool> {
        match (g, saved) {
            (Storage::Cpu(g), Storage::Cpu(s)) => {
                unary::activation_backward_inplace(kind == ActivationGrad::Gelu, g, gl, s, sl)
            }
            #[allow(unreachable_patterns)] // reachable with the `cuda` feature
            _ => Ok(false),
        }
    }

    /// `self[l] += alpha * src[sl]` in one pass (same dtype; `src` broadcast to `l`'s shape
    /// already). `Ok(false)`, nothing done, where the device or dtype has no kernel (the CPU's
    /// takes f32 and f64).
    pub fn add_scaled_inplace(
        &mut self,
        l: &Layout,
        src: &Storage,
        sl: &Layout,
        alpha: f64,
    ) -> Result<bool> {
        match (self, src) {
            (Storage::Cpu(dst), Storage::Cpu(src)) => {
                binary::add_scaled_inplace(dst, l, src, sl, alpha)
            }
            #[allow(unreachable_patterns)] // reachable with the `cuda` feature
            _ => Ok(false),
        }
    }
}
