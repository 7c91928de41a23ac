//! Fused LayerNorm / RMSNorm and training-mode batch norm as one autograd op each, through
//! the fused-kernel door (`Storage::norm_forward`, `Storage::batch_norm_forward`: CPU and
//! CUDA kernels for both): the forward keeps the kernel's statistics, the backward is the
//! kernel's closed form. Batch norm in evaluation without gradients and the running
//! statistics' update go through their doors too (`Storage::batch_norm_eval`,
//! `batch_norm_update_running`: CUDA kernels). `mod.rs` checks the arguments, then calls
//! these when [`fused_applies`], and composes tensor ops where they answer `None` (a device
//! without the kernel).

use super::After;
use crate::autograd::needs_grad;
use crate::backend::{BatchNormDims, BatchNormThen, NormKind, NormWanted, Storage};
use crate::error::Result;
use crate::ops::{relu_grad, with_spans};
use crate::tensor::Device;
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// True when a fused kernel may take `x` normalised with these parameters: at least one
/// element and everything on one device (empty inputs take the composite path, as do mixed
/// devices, whose error it reports).
pub(crate) fn fused_applies(x: &Tensor, params: &[Option<&Tensor>]) -> bool {
    x.numel() > 0 && params.iter().flatten().all(|p| p.device() == x.device())
}

/// x's dtype promoted with the parameters'.
fn promoted(x: &Tensor, params: &[Option<&Tensor>]) -> DType {
    params
        .iter()
        .flatten()
        .fold(x.dtype(), |d, p| DType::promote(d, p.dtype()))
}

/// The dtype of a normalisation's result: a half-precision input keeps its own (with f32
/// parameters too, as PyTorch's mixed-type norms), others x's promoted with the parameters'.
pub(crate) fn out_dtype(x: &Tensor, params: &[Option<&Tensor>]) -> DType {
    match x.dtype() {
        half if half.is_half() => half,
        _ => promoted(x, params),
    }
}

/// The dtype of the result ([`out_dtype`]) and the one the kernels compute in (f64 when
/// anything is f64, else f32: half types round once).
fn dtypes(x: &Tensor, params: &[Option<&Tensor>]) -> (DType, DType) {
    let compute = match promoted(x, params) {
        DType::F64 => DType::F64,
        _ => DType::F32,
    };
    (out_dtype(x, params), compute)
}

/// A private contiguous copy of a parameter, outside the graph, as the kernels read it: an
/// optimizer step between forward and backward cannot change what the backward reads, and
/// a copy shares no buffer with the input.
fn kernel_copy(p: Option<&Tensor>) -> Result<Option<Tensor>> {
    p.map(|p| p.detach().contiguous_copy()).transpose()
}

/// `kind` normalisation of `x` over its trailing dims `normalized_shape` (already checked,
/// like the parameters' shapes), then `* weight + bias`, on x's device; `None` where the
/// device has no kernel. f16/bf16 compute in f32, through casts that carry the gradients.
pub(crate) fn fused_norm(
    op: &'static str,
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    kind: NormKind,
) -> Result<Option<Tensor>> {
    let (out_dtype, compute) = dtypes(x, &[weight, bias]);
    let up = |t: &Tensor| t.to_dtype(compute);
    let x = up(x)?.contiguous()?;
    let (weight, bias) = (weight.map(up).transpose()?, bias.map(up).transpose()?);
    let (weight, bias) = (weight.as_ref(), bias.as_ref());
    let (w, b) = (kernel_copy(weight)?, kernel_copy(bias)?);
    let n: usize = normalized_shape.iter().product();
    let fwd = with_spans(&[Some(&x), w.as_ref(), b.as_ref()], |s| {
        Storage::norm_forward(op, s[0].expect("given"), s[1], s[2], n, eps, kind)
    })?;
    let Some(fwd) = fwd else {
        return Ok(None);
    };
    let y = Tensor::from_contiguous(fwd.y, x.shape());
    let inputs: Vec<&Tensor> = [Some(&x), weight, bias].into_iter().flatten().collect();
    if !needs_grad(&inputs) {
        return y.to_dtype(out_dtype).map(Some);
    }
    let saved_x = x.save(op);
    let saved = Arc::new((w, fwd.saved));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let shape = x.shape().to_vec();
    let param_shape = normalized_shape.to_vec();
    let y = y.record(op, &inputs, move |g, needs| {
        let (w, stats) = &*saved;
        let x = &saved_x.get()?;
        let want = NormWanted {
            x: needs[0],
            weight: has_w && needs[1],
            bias: has_b && needs[1 + has_w as usize],
        };
        let g = g.contiguous()?;
        let grads = with_spans(&[Some(x), Some(&g), w.as_ref()], |s| {
            let (xs, gs) = (s[0].expect("given"), s[1].expect("given"));
            Storage::norm_backward(op, xs, gs, s[2], n, stats, kind, want)
        })?;
        let wrap = |s: Option<Storage>, shape: &[usize]| {
            s.map(|s| Tensor::from_contiguous(s, shape).first_order_only(op, &[&g, x]))
        };
        let mut out = vec![wrap(grads.dx, &shape)];
        if has_w {
            out.push(wrap(grads.dweight, &param_shape));
        }
        if has_b {
            out.push(wrap(grads.dbias, &param_shape));
        }
        Ok(out)
    });
    y.to_dtype(out_dtype).map(Some)
}

/// Training-mode batch normalisation of an `(N, C, *)` input through the fused kernel, as
/// one autograd op. Returns `y` (x's dtype promoted with the parameters') and the batch mean
/// and biased variance, `(C,)` in the compute dtype and outside the graph (for the running
/// statistics); `None` where the device has no kernel. `after` is applied to the normalised
/// value in the same op: a ReLU, or the sum with a residual (of x's dtype and shape) and a
/// ReLU. Arguments are checked by the caller; an f16/bf16
/// input is read and written in its own type by the CPU kernel (computing in f32), and
/// widened first for other devices.
pub(crate) fn fused_batch_norm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    after: After<'_>,
) -> Result<Option<(Tensor, Tensor, Tensor)>> {
    const OP: &str = "batch_norm";
    let (out_dtype, compute) = dtypes(x, &[weight, bias]);
    let up = |t: &Tensor| t.to_dtype(compute);
    // A half input goes to the kernel as it is (the device answers `None` where it has no
    // kernel for it); f32 parameters are the kernel's, f64 ones widen everything. A
    // residual goes as x goes.
    let as_kernel_reads = |t: &Tensor| {
        if x.dtype().is_half() && compute == DType::F32 {
            t.contiguous()
        } else {
            up(t)?.contiguous()
        }
    };
    let residual = match after {
        After::AddRelu(r) => Some(as_kernel_reads(r)?),
        _ => None,
    };
    let x = as_kernel_reads(x)?;
    let shape = x.shape().to_vec();
    let d = BatchNormDims {
        n: shape[0],
        c: shape[1],
        s: shape[2..].iter().product(),
    };
    // Casts that carry the gradients back to the parameters' own dtypes.
    let (weight, bias) = (weight.map(up).transpose()?, bias.map(up).transpose()?);
    let (weight, bias) = (weight.as_ref(), bias.as_ref());
    let (w, b) = (kernel_copy(weight)?, kernel_copy(bias)?);
    let fwd = with_spans(
        &[Some(&x), w.as_ref(), b.as_ref(), residual.as_ref()],
        |s| {
            let then = match (after, s[3]) {
                (After::Nothing, _) => BatchNormThen::Nothing,
                (After::Relu, _) => BatchNormThen::Relu,
                (After::AddRelu(_), r) => BatchNormThen::AddRelu(r.expect("given")),
            };
            Storage::batch_norm_forward(s[0].expect("given"), d, s[1], s[2], eps, then)
        },
    )?;
    let Some(fwd) = fwd else {
        return Ok(None);
    };
    let y = Tensor::from_contiguous(fwd.y, &shape);
    let mean = Tensor::from_contiguous(fwd.mean, &[d.c]);
    let var = Tensor::from_contiguous(fwd.var, &[d.c]);
    let inputs: Vec<&Tensor> = [Some(&x), weight, bias, residual.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    if !needs_grad(&inputs) {
        return Ok(Some((y.to_dtype(out_dtype)?, mean, var)));
    }
    let saved_x = x.save(OP);
    // After a residual sum, the ReLU's mask is the output's (x alone no longer gives it).
    let saved_y = residual.as_ref().map(|_| y.save(OP));
    let saved = Arc::new((w, fwd.saved));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let y = y.record(OP, &inputs, move |g, needs| {
        let (w, stats) = &*saved;
        let x = &saved_x.get()?;
        let g = g.to_dtype(x.dtype())?.contiguous()?;
        let g = match &saved_y {
            Some(y) => relu_grad(&g, &y.get()?)?.contiguous()?,
            None => g,
        };
        let grads = with_spans(&[Some(x), Some(&g), w.as_ref()], |s| {
            let (xs, gs) = (s[0].expect("given"), s[1].expect("given"));
            Storage::batch_norm_backward(xs, gs, d, s[2], stats, needs[0])
        })?;
        let first_order = |t: Tensor| t.first_order_only(OP, &[&g, x]);
        let channel =
            |v: Option<Storage>| v.map(|v| first_order(Tensor::from_contiguous(v, &[d.c])));
        let mut out = vec![grads
            .dx
            .map(|v| first_order(Tensor::from_contiguous(v, &shape)))];
        if has_w {
            out.push(channel(grads.dweight));
        }
        if has_b {
            out.push(channel(grads.dbias));
        }
        if saved_y.is_some() {
            out.push(Some(first_order(g.clone())));
        }
        Ok(out)
    });
    Ok(Some((y.to_dtype(out_dtype)?, mean, var)))
}

/// Batch normalisation in evaluation, `(x - running_mean) * weight / sqrt(running_var + eps)
/// + bias` then what `after` says, through the device's kernel, when no gradient is needed
/// (inference; with one, the composite records the graph); `None` otherwise or where the
/// device has no kernel. Arguments are checked by the caller; the statistics and parameters
/// go to the kernel in its compute dtype, x as [`fused_batch_norm`] sends it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fused_batch_norm_eval(
    x: &Tensor,
    running_mean: &Tensor,
    running_var: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    after: After<'_>,
) -> Result<Option<Tensor>> {
    let residual = match after {
        After::AddRelu(r) => Some(r),
        _ => None,
    };
    let inputs: Vec<&Tensor> = [Some(x), weight, bias, residual]
        .into_iter()
        .flatten()
        .collect();
    // The CPU has no evaluation kernel: the composite, without the casts below.
    if needs_grad(&inputs) || x.device() == Device::Cpu {
        return Ok(None);
    }
    let (out_dtype, compute) = dtypes(x, &[weight, bias]);
    let as_kernel_reads = |t: &Tensor| {
        if x.dtype().is_half() && compute == DType::F32 {
            t.contiguous()
        } else {
            t.to_dtype(compute)?.contiguous()
        }
    };
    let residual = residual.map(as_kernel_reads).transpose()?;
    let x = as_kernel_reads(x)?;
    let param = |t: &Tensor| t.detach().to_dtype(compute)?.contiguous();
    let (rm, rv) = (param(running_mean)?, param(running_var)?);
    let (w, b) = (weight.map(param).transpose()?, bias.map(param).transpose()?);
    let shape = x.shape().to_vec();
    let d = BatchNormDims {
        n: shape[0],
        c: shape[1],
        s: shape[2..].iter().product(),
    };
    let operands = [
        Some(&x),
        Some(&rm),
        Some(&rv),
        w.as_ref(),
        b.as_ref(),
        residual.as_ref(),
    ];
    let y = with_spans(&operands, |s| {
        let then = match (after, s[5]) {
            (After::Nothing, _) => BatchNormThen::Nothing,
            (After::Relu, _) => BatchNormThen::Relu,
            (After::AddRelu(_), r) => BatchNormThen::AddRelu(r.expect("given")),
        };
        let (x, rm, rv) = (
            s[0].expect("given"),
            s[1].expect("given"),
            s[2].expect("given"),
        );
        Storage::batch_norm_eval(x, d, rm, rv, s[3], s[4], eps, then)
    })?;
    y.map(|y| Tensor::from_contiguous(y, &shape).to_dtype(out_dtype))
        .transpose()
}

/// Training-mode batch norm's in-place update of the running statistics (`(C)` each, either
/// absent) from the batch `mean` and biased `var` (`(C)`) in one kernel where the device has
/// one: when every present tensor is contiguous, on one device, of the statistics' dtype and
/// no two share a buffer. `Ok(false)`, nothing done, otherwise (the caller composes it).
/// Called under `no_grad`, like the composite's in-place ops, whose version bumps it makes.
pub(crate) fn fused_update_running(
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    mean: &Tensor,
    var: &Tensor,
    count: usize,
    momentum: f64,
) -> Result<bool> {
    let running: Vec<&Tensor> = [running_mean, running_var].into_iter().flatten().collect();
    let all: Vec<&Tensor> = running.iter().copied().chain([mean, var]).collect();
    let eligible = !running.is_empty()
        && mean.device() != Device::Cpu
        && matches!(mean.dtype(), DType::F32 | DType::F64)
        && all.iter().all(|t| {
            t.device() == mean.device()
                && t.dtype() == mean.dtype()
                && t.is_contiguous()
                && t.numel() == mean.numel()
        })
        && all
            .iter()
            .enumerate()
            .all(|(i, a)| all[i + 1..].iter().all(|b| !a.shares_storage(b)));
    if !eligible {
        return Ok(false);
    }
    with_spans(&[Some(mean), Some(var)], |s| {
        let at = |t: &Tensor| t.layout().offset();
        let mut rm = running_mean.map(|t| (t.storage_mut(), at(t)));
        let mut rv = running_var.map(|t| (t.storage_mut(), at(t)));
        Storage::batch_norm_update_running(
            rm.as_mut().map(|(s, o)| (&mut **s, *o)),
            rv.as_mut().map(|(s, o)| (&mut **s, *o)),
            s[0].expect("given"),
            s[1].expect("given"),
            count,
            momentum,
        )
    })
}
