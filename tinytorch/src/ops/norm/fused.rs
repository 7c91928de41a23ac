//! Fused LayerNorm / RMSNorm on the CPU (`backend/cpu/norm.rs`) and on CUDA
//! (`backend/cuda/norm.rs`) as one autograd op: the forward saves the input and each row's
//! mean and rstd, the backward is the kernel's closed form. Training-mode batch norm has a
//! fused CPU kernel of the same kind ([`fused_batch_norm`]). `nn::functional::{layer_norm,
//! rms_norm}` check their arguments, then call this when [`fused_applies`] and compose
//! tensor ops otherwise.

use crate::autograd::needs_grad;
use crate::backend::cpu::batch_norm as bn;
use crate::backend::cpu::norm::{self, Affine, NormFloat, NormKind, Wanted};
use crate::backend::CpuElement;
use crate::error::Result;
use crate::ops::{with_cpu_slice, with_cpu_slices2};
use crate::tensor::{DType, Device, Tensor};
use std::sync::Arc;

/// True when a fused kernel takes `x` normalised with these parameters: everything on one
/// device that has the kernels (the CPU, or a GPU when built with CUDA) and at least one
/// element (empty inputs take the composite path, as do mixed devices, whose error it
/// reports).
pub(crate) fn fused_applies(x: &Tensor, params: &[Option<&Tensor>]) -> bool {
    let device = x.device();
    // A CUDA tensor exists only in a build with the feature, which brings the kernels.
    let has_kernels = device == Device::Cpu || cfg!(feature = "cuda");
    has_kernels && x.numel() > 0 && params.iter().flatten().all(|p| p.device() == device)
}

/// `kind` normalisation of `x` over its trailing dims `normalized_shape` (already checked,
/// like the parameters' shapes), then `* weight + bias`, on x's device. The result has the
/// dtype the composite would give (x's dtype promoted with the parameters'); f16/bf16
/// compute in f32, through casts that carry the gradients.
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
    let y = match (x.device(), compute) {
        #[cfg(feature = "cuda")]
        (Device::Cuda(_), _) => fused_cuda(&x, normalized_shape, w, b, args)?,
        (_, DType::F64) => fused_typed::<f64>(&x, normalized_shape, w, b, args)?,
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
    let (out, stats) =
        with_cpu_slice(a.op, &x, |xs| norm::forward(xs, a.n, affine, a.eps, a.kind))?;
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
        let grads = with_cpu_slices2(a.op, x, &g, |xs, gs| {
            norm::backward(xs, gs, a.n, w.as_deref(), stats, a.kind, want)
        })?;
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

/// Training-mode batch normalisation of an `(N, C, *)` input through the fused CPU kernel
/// (`backend/cpu/batch_norm.rs`), as one autograd op. Returns `y` (x's dtype promoted with
/// the parameters') and the batch mean and biased variance, `(C,)` in the compute dtype and
/// outside the graph (for the running statistics). Arguments are checked by the caller;
/// f16/bf16 compute in f32.
pub(crate) fn fused_batch_norm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let out_dtype = [weight, bias]
        .into_iter()
        .flatten()
        .fold(x.dtype(), |d, p| DType::promote(d, p.dtype()));
    let (y, mean, var) = if out_dtype == DType::F64 {
        batch_norm_typed::<f64>(x, weight, bias, eps)?
    } else {
        batch_norm_typed::<f32>(x, weight, bias, eps)?
    };
    Ok((y.to_dtype(out_dtype)?, mean, var))
}

/// [`fused_batch_norm`] computing in `T`.
fn batch_norm_typed<T: NormFloat + CpuElement>(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "batch_norm";
    let x = x.to_dtype(T::DTYPE)?.contiguous()?;
    let shape = x.shape().to_vec();
    let d = bn::Dims {
        n: shape[0],
        c: shape[1],
        s: shape[2..].iter().product(),
    };
    // Casts that carry the gradients back to the parameters' own dtypes.
    let cast = |p: Option<&Tensor>| p.map(|p| p.to_dtype(T::DTYPE)).transpose();
    let (weight, bias) = (cast(weight)?, cast(bias)?);
    let (weight, bias) = (weight.as_ref(), bias.as_ref());
    let values = |p: Option<&Tensor>| p.map(|p| p.to_vec::<T>()).transpose();
    let (w, b) = (values(weight)?, values(bias)?);
    let (y, stats) = with_cpu_slice(OP, &x, |xs| {
        bn::forward(xs, d, w.as_deref(), b.as_deref(), eps)
    })?;
    let y = Tensor::from_vec(y, &shape)?;
    let mean = Tensor::from_vec(stats.mean.clone(), &[d.c])?;
    let var = Tensor::from_vec(stats.var.clone(), &[d.c])?;
    let inputs: Vec<&Tensor> = [Some(&x), weight, bias].into_iter().flatten().collect();
    if !needs_grad(&inputs) {
        return Ok((y, mean, var));
    }
    let saved_x = x.save(OP);
    let saved = Arc::new((w, stats));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let y = y.record(OP, &inputs, move |g, needs| {
        let (w, stats) = &*saved;
        let x = saved_x.get()?;
        let g = g.to_dtype(T::DTYPE)?.contiguous()?;
        let grads = with_cpu_slices2(OP, x, &g, |xs, gs| {
            bn::backward(xs, gs, d, w.as_deref(), stats, needs[0])
        })?;
        let channel = |v: Vec<T>| Tensor::from_vec(v, &[d.c]).map(Some);
        let mut out = vec![grads.dx.map(|v| Tensor::from_vec(v, &shape)).transpose()?];
        if has_w {
            out.push(channel(grads.dweight)?);
        }
        if has_b {
            out.push(channel(grads.dbias)?);
        }
        Ok(out)
    });
    Ok((y, mean, var))
}

/// The CUDA buffer under `t` as a kernel input (`t` contiguous, `s` its storage).
#[cfg(feature = "cuda")]
fn cuda_input<'a>(
    op: &'static str,
    t: &Tensor,
    s: &'a crate::backend::Storage,
) -> Result<crate::backend::cuda::norm::Input<'a>> {
    debug_assert!(t.is_contiguous());
    match s {
        crate::backend::Storage::Cuda(storage) => Ok(crate::backend::cuda::norm::Input {
            storage,
            offset: t.layout().offset(),
        }),
        crate::backend::Storage::Cpu(_) => Err(crate::error::Error::invalid(
            op,
            format!("expected a CUDA tensor, got one on {}", t.device()),
        )),
    }
}

/// [`fused_typed`]'s CUDA twin: `x` and the parameters are already of the compute dtype
/// (f32 or f64) and on one GPU.
#[cfg(feature = "cuda")]
fn fused_cuda(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    a: Args,
) -> Result<Tensor> {
    use crate::backend::cuda::norm as kernel;
    use crate::backend::Storage;
    let x = x.contiguous()?;
    let rows = x.numel() / a.n;
    // Private copies of the parameters, as the CPU path takes with `to_vec`: an optimizer
    // step between forward and backward cannot change what the backward reads, and a copy
    // shares no storage with `x` (so each lock below is taken once).
    let copy = |p: Option<&Tensor>| p.map(|p| p.detach().contiguous_copy()).transpose();
    let (w, b) = (copy(weight)?, copy(bias)?);
    let (out, mean, rstd) = {
        let (xs, ws, bs) = (
            x.storage(),
            w.as_ref().map(|t| t.storage()),
            b.as_ref().map(|t| t.storage()),
        );
        let w_in = w.as_ref().zip(ws.as_deref());
        let b_in = b.as_ref().zip(bs.as_deref());
        kernel::forward(
            a.op,
            cuda_input(a.op, &x, &xs)?,
            rows,
            a.n,
            w_in.map(|(t, s)| cuda_input(a.op, t, s)).transpose()?,
            b_in.map(|(t, s)| cuda_input(a.op, t, s)).transpose()?,
            a.eps,
            a.kind,
        )?
    };
    let y = Tensor::from_contiguous(Storage::Cuda(out), x.shape());
    let inputs: Vec<&Tensor> = [Some(&x), weight, bias].into_iter().flatten().collect();
    if !needs_grad(&inputs) {
        return Ok(y);
    }
    let saved_x = x.save(a.op);
    let saved = Arc::new((w, mean, rstd));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let shape = x.shape().to_vec();
    let param_shape = normalized_shape.to_vec();
    Ok(y.record(a.op, &inputs, move |g, needs| {
        let (w, mean, rstd) = &*saved;
        let x = saved_x.get()?;
        let want = Wanted {
            x: needs[0],
            weight: has_w && needs[1],
            bias: has_b && needs[1 + has_w as usize],
        };
        let g = g.contiguous()?;
        // `w` is a private copy (see the forward): it aliases neither x nor g.
        let ws = w.as_ref().map(|t| t.storage());
        let grads = crate::ops::with_storages2(x, &g, |xs, gs| -> Result<_> {
            let weight = w
                .as_ref()
                .zip(ws.as_deref())
                .map(|(t, s)| cuda_input(a.op, t, s))
                .transpose()?;
            kernel::backward(
                a.op,
                cuda_input(a.op, x, xs)?,
                cuda_input(a.op, &g, gs)?,
                rows,
                a.n,
                weight,
                mean,
                rstd,
                a.kind,
                want,
            )
        })?;
        let wrap = |s: Option<crate::backend::cuda::CudaStorage>, shape: &[usize]| {
            s.map(|s| Tensor::from_contiguous(Storage::Cuda(s), shape))
        };
        let mut out = vec![wrap(grads.dx, &shape)];
        if has_w {
            out.push(wrap(grads.dweight, &param_shape));
        }
        if has_b {
            out.push(wrap(grads.dbias, &param_shape));
        }
        Ok(out)
    }))
}
