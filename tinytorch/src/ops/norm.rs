//! Fused LayerNorm / RMSNorm on the CPU (`backend/cpu/norm.rs`) as one autograd op: the
//! forward saves the input and each row's mean and rstd, the backward is the kernel's
//! closed form. `nn::functional::{layer_norm, rms_norm}` check their arguments, then call
//! this on the CPU and compose tensor ops elsewhere.

use crate::autograd::needs_grad;
use crate::backend::cpu::norm::{self, Affine, NormFloat, NormKind, Wanted};
use crate::backend::cpu::CpuElement;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};
use std::sync::Arc;

/// True when the fused kernel takes `x` normalised with these parameters: everything on
/// the CPU and at least one element (empty inputs take the composite path).
pub(crate) fn fused_applies(x: &Tensor, params: &[Option<&Tensor>]) -> bool {
    x.device() == Device::Cpu
        && x.numel() > 0
        && params.iter().flatten().all(|p| p.device() == Device::Cpu)
}

/// `kind` normalisation of `x` over its trailing dims `normalized_shape` (already checked,
/// like the parameters' shapes), then `* weight + bias`, on the CPU. The result has the dtype the
/// composite would give (x's dtype promoted with the parameters'); f16/bf16 compute in f32,
/// through casts that carry the gradients.
pub(crate) fn fused_norm(
    op: &'static str,
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    kind: NormKind,
) -> Result<Tensor> {
    let out_dtype = [weight, bias]
        .into_iter()
        .flatten()
        .fold(x.dtype(), |d, p| DType::promote(d, p.dtype()));
    let compute = if out_dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let up = |t: &Tensor| t.to_dtype(compute);
    let (x, w, b) = (
        up(x)?,
        weight.map(up).transpose()?,
        bias.map(up).transpose()?,
    );
    let args = Args {
        op,
        n: normalized_shape.iter().product(),
        eps,
        kind,
    };
    let (w, b) = (w.as_ref(), b.as_ref());
    let y = match compute {
        DType::F64 => fused_typed::<f64>(&x, normalized_shape, w, b, args)?,
        _ => fused_typed::<f32>(&x, normalized_shape, w, b, args)?,
    };
    y.to_dtype(out_dtype)
}

/// The scalar arguments.
#[derive(Clone, Copy)]
struct Args {
    op: &'static str,
    n: usize,
    eps: f64,
    kind: NormKind,
}

/// Run `f` on the elements of a contiguous CPU tensor of dtype `T`, without copying.
fn with_slice<T: CpuElement, R>(
    op: &'static str,
    t: &Tensor,
    f: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    debug_assert!(t.is_contiguous());
    let storage = t.storage();
    let data = storage
        .as_cpu()
        .and_then(|s| s.as_slice::<T>())
        .ok_or_else(|| Error::dtype(op, format!("expected a CPU tensor of {}", T::DTYPE)))?;
    let start = t.layout().offset();
    Ok(f(&data[start..start + t.numel()]))
}

fn fused_typed<T: NormFloat + CpuElement>(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    a: Args,
) -> Result<Tensor> {
    let x = x.contiguous()?;
    let w = weight.map(|w| w.to_vec::<T>()).transpose()?;
    let b = bias.map(|b| b.to_vec::<T>()).transpose()?;
    let affine = Affine {
        weight: w.as_deref(),
        bias: b.as_deref(),
    };
    let (out, stats) = with_slice(a.op, &x, |xs| norm::forward(xs, a.n, affine, a.eps, a.kind))?;
    let y = Tensor::from_vec(out, x.shape())?;
    let inputs: Vec<&Tensor> = [Some(&x), weight, bias].into_iter().flatten().collect();
    if !needs_grad(&inputs) {
        return Ok(y);
    }
    let saved_x = x.save(a.op);
    let saved = Arc::new((w, stats));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let shape = x.shape().to_vec();
    let param_shape = normalized_shape.to_vec();
    Ok(y.record(a.op, &inputs, move |g, needs| {
        let (w, stats) = &*saved;
        let x = saved_x.get()?;
        let want = Wanted {
            x: needs[0],
            weight: has_w && needs[1],
            bias: has_b && needs[1 + has_w as usize],
        };
        let g = g.contiguous()?;
        let grads = with_slice(a.op, x, |xs| {
            with_slice(a.op, &g, |gs| {
                norm::backward(xs, gs, a.n, w.as_deref(), stats, a.kind, want)
            })
        })??;
        let param = |d: Option<Vec<T>>| -> Result<Option<Tensor>> {
            d.map(|d| Tensor::from_vec(d, &param_shape)).transpose()
        };
        let mut out = vec![grads.dx.map(|d| Tensor::from_vec(d, &shape)).transpose()?];
        if has_w {
            out.push(param(grads.dweight)?);
        }
        if has_b {
            out.push(param(grads.dbias)?);
        }
        Ok(out)
    }))
}
