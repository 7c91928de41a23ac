//! Fused 2-D max pooling: `Storage::max_pool2d_forward` writes each window's maximum and
//! where it was, `max_pool2d_backward` adds each output gradient there (CPU:
//! `cpu/max_pool.rs`, f32 and f64; f16 and bf16 through the f32 kernel, widened). Other
//! devices answer `None`, and the op layer reduces the windows gathered as a tensor.

use super::{host, narrow, whole, widen, Span};
use crate::backend::cpu::max_pool as cpu;
use crate::backend::{CpuElement, Storage};
use crate::base::DType;
use crate::error::{Error, Result};

const OP: &str = "max_pool2d";

/// The window geometry over one `(H, W)` plane.
#[derive(Clone, Copy, Debug)]
pub struct PoolPlane {
    /// Input height and width.
    pub input: [usize; 2],
    /// Output height and width.
    pub output: [usize; 2],
    /// Window height and width.
    pub kernel: [usize; 2],
    /// Window step.
    pub stride: [usize; 2],
    /// Implicit padding before the first row and column (windows never start in it past
    /// half a kernel, so each has at least one real element).
    pub padding: [usize; 2],
    /// Spacing of a window's taps.
    pub dilation: [usize; 2],
}

impl PoolPlane {
    fn lens(&self, planes: usize) -> (usize, usize) {
        let (i, o) = (
            self.input[0] * self.input[1],
            self.output[0] * self.output[1],
        );
        (planes * i, planes * o)
    }
}

impl Storage {
    /// `(output, argmax)` of max pooling the contiguous `planes` planes of `x`: the argmax
    /// (i64, on x's device) is each maximum's index within its input plane; NaN wins, as in
    /// PyTorch. `Ok(None)` where the device has no kernel.
    pub fn max_pool2d_forward(
        x: Span<'_>,
        planes: usize,
        g: &PoolPlane,
    ) -> Result<Option<(Storage, Storage)>> {
        match (x.storage, x.dtype()) {
            (Storage::Cpu(_), DType::F32) => cpu_forward::<f32>(x, planes, g).map(Some),
            (Storage::Cpu(_), DType::F64) => cpu_forward::<f64>(x, planes, g).map(Some),
            // A maximum is exact in any precision: the f32 kernel on the widened input.
            (Storage::Cpu(_), half @ (DType::F16 | DType::BF16)) => {
                let xf = widen(OP, x, "input")?;
                let (y, argmax) = cpu_forward::<f32>(whole(&xf), planes, g)?;
                Ok(Some((narrow(OP, &y, half)?, argmax)))
            }
            _ => Ok(None),
        }
    }

    /// The input's gradient: each output gradient in `grad_out` added at its window's argmax.
    pub fn max_pool2d_backward(
        grad_out: Span<'_>,
        argmax: Span<'_>,
        planes: usize,
        g: &PoolPlane,
    ) -> Result<Storage> {
        match grad_out.dtype() {
            DType::F32 => cpu_backward::<f32>(grad_out, argmax, planes, g),
            DType::F64 => cpu_backward::<f64>(grad_out, argmax, planes, g),
            // Overlapping windows' gradients summed in f32, rounded once.
            half @ (DType::F16 | DType::BF16) => {
                let gf = widen(OP, grad_out, "grad_output")?;
                let gx = cpu_backward::<f32>(whole(&gf), argmax, planes, g)?;
                narrow(OP, &gx, half)
            }
            other => Err(Error::unsupported_dtype(OP, other)),
        }
    }
}

fn cpu_forward<T: CpuElement + PartialOrd>(
    x: Span<'_>,
    planes: usize,
    g: &PoolPlane,
) -> Result<(Storage, Storage)> {
    x.check_len(OP, "input", g.lens(planes).0)?;
    #[allow(clippy::eq_op)] // `v != v` is the NaN test for any float element type
    let (y, argmax) = cpu::forward(x.cpu_or_err::<T>(OP, "input")?, planes, g, |v: T| v != v);
    Ok((host(y), host(argmax)))
}

fn cpu_backward<T: CpuElement + std::ops::AddAssign>(
    grad_out: Span<'_>,
    argmax: Span<'_>,
    planes: usize,
    g: &PoolPlane,
) -> Result<Storage> {
    let out_len = g.lens(planes).1;
    grad_out.check_len(OP, "grad_output", out_len)?;
    argmax.check_len(OP, "argmax", out_len)?;
    let gy = grad_out.cpu_or_err::<T>(OP, "grad_output")?;
    Ok(host(cpu::backward(
        gy,
        argmax.cpu_or_err::<i64>(OP, "argmax")?,
        planes,
        g,
    )))
}
