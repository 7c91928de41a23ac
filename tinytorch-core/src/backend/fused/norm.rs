//! Fused normalisations: layer and RMS norm over the last `n` elements of each row
//! (`Storage::norm_forward` / `norm_backward`: CPU `cpu/norm.rs`, CUDA `cuda/norm.rs`) and
//! training-mode batch norm over `(N, C, S)`, with a ReLU or a residual sum and ReLU after
//! it (`Storage::batch_norm_forward` /
//! `batch_norm_backward`: CPU `cpu/batch_norm.rs`, CUDA `cuda/batch_norm.rs`), batch norm in
//! evaluation from the running statistics and the running statistics' update
//! (`Storage::batch_norm_eval`, `batch_norm_update_running`: CUDA only; the CPU composes
//! them). Operands are contiguous and of one float dtype, f32 or f64 (the op layer widens half
//! types first), except batch norm's input, residual and upstream gradient, which may be
//! f16/bf16 (parameters and statistics f32).

use super::{host, Span};
use crate::backend::cpu::batch_norm as cpu_bn;
use crate::backend::cpu::float::KernelFloat;
use crate::backend::cpu::norm::{self as cpu, Affine, NormStats};
use crate::backend::cpu::unary::FloatStore;
use crate::backend::{CpuElement, Storage};
use crate::base::DType;
use crate::error::{Error, Result};
use half::{bf16, f16};

/// Which normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// `(x - mean) / sqrt(var + eps)`, biased variance.
    Layer,
    /// `x / sqrt(mean(x^2) + eps)`.
    Rms,
}

/// Which gradients a backward computes.
#[derive(Clone, Copy)]
pub struct NormWanted {
    /// Of the input.
    pub x: bool,
    /// Of the weight (when there is one).
    pub weight: bool,
    /// Of the bias (when there is one).
    pub bias: bool,
}

/// The gradients of a backward, each a new contiguous buffer of the input's dtype (`None`
/// when not wanted).
pub struct NormGrads {
    /// Like the input.
    pub dx: Option<Storage>,
    /// Like the weight.
    pub dweight: Option<Storage>,
    /// Like the bias.
    pub dbias: Option<Storage>,
}

/// The row (layer/RMS) or channel (batch) statistics a forward kept for its backward, where
/// its device keeps them.
pub struct NormSaved(Saved);

enum Saved {
    RowF32(NormStats<f32>),
    RowF64(NormStats<f64>),
    BatchF32(cpu_bn::Stats<f32>),
    BatchF64(cpu_bn::Stats<f64>),
    #[cfg(feature = "cuda")]
    RowCuda {
        mean: crate::backend::CudaStorage,
        rstd: crate::backend::CudaStorage,
    },
    #[cfg(feature = "cuda")]
    BatchCuda(crate::backend::cuda::batch_norm::Saved),
}

/// A forward's results.
pub struct NormForward {
    /// The normalised output, like the input.
    pub y: Storage,
    /// For the backward.
    pub saved: NormSaved,
}

/// Batch norm's forward results.
pub struct BatchNormForward {
    /// The normalised output, like the input.
    pub y: Storage,
    /// The batch mean per channel (for the running statistics).
    pub mean: Storage,
    /// The biased batch variance per channel (for the running statistics).
    pub var: Storage,
    /// For the backward.
    pub saved: NormSaved,
}

/// What a fused batch norm's output pass applies after the normalisation and affine.
#[derive(Clone, Copy)]
pub enum BatchNormThen<'a> {
    /// Nothing.
    Nothing,
    /// A ReLU.
    Relu,
    /// The sum with a residual laid out like the input, then a ReLU.
    AddRelu(Span<'a>),
}

/// The shape of a batch norm problem: `n * c` rows of `s` elements, channel `c` varying
/// fastest after the batch.
#[derive(Clone, Copy, Debug)]
pub struct BatchNormDims {
    /// Batch size.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Elements per (sample, channel).
    pub s: usize,
}

fn internal(op: &'static str) -> Error {
    Error::invalid(op, "the statistics do not belong to this device's kernel")
}

impl Storage {
    /// `kind` normalisation of the rows (`n` elements each) of `x`, then `* weight + bias`
    /// (each `n` long, of x's dtype). `Ok(None)` where the device has no kernel for these
    /// operands.
    pub fn norm_forward(
        op: &'static str,
        x: Span<'_>,
        weight: Option<Span<'_>>,
        bias: Option<Span<'_>>,
        n: usize,
        eps: f64,
        kind: NormKind,
    ) -> Result<Option<NormForward>> {
        match x.storage {
            Storage::Cpu(_) => match x.dtype() {
                DType::F32 => {
                    cpu_norm_forward::<f32>(op, x, weight, bias, n, eps, kind, Saved::RowF32)
                }
                DType::F64 => {
                    cpu_norm_forward::<f64>(op, x, weight, bias, n, eps, kind, Saved::RowF64)
                }
                _ => Ok(None),
            },
            #[cfg(feature = "cuda")]
            Storage::Cuda(_) => {
                use crate::backend::cuda::norm as kernel;
                let (y, mean, rstd) = kernel::forward(
                    op,
                    cuda_input(op, x)?,
                    x.len / n.max(1),
                    n,
                    weight.map(|w| cuda_input(op, w)).transpose()?,
                    bias.map(|b| cuda_input(op, b)).transpose()?,
                    eps,
                    kind,
                )?;
                Ok(Some(NormForward {
                    y: Storage::Cuda(y),
                    saved: NormSaved(Saved::RowCuda { mean, rstd }),
                }))
            }
        }
    }

    /// The gradients of [`Storage::norm_forward`] from the upstream gradient `g` (like `x`),
    /// the forward's input and weight and what it kept.
    #[allow(clippy::too_many_arguments)]
    pub fn norm_backward(
        op: &'static str,
        x: Span<'_>,
        g: Span<'_>,
        weight: Option<Span<'_>>,
        n: usize,
        saved: &NormSaved,
        kind: NormKind,
        want: NormWanted,
    ) -> Result<NormGrads> {
        match &saved.0 {
            Saved::RowF32(stats) => cpu_norm_backward(op, x, g, weight, n, stats, kind, want),
            Saved::RowF64(stats) => cpu_norm_backward(op, x, g, weight, n, stats, kind, want),
            #[cfg(feature = "cuda")]
            Saved::RowCuda { mean, rstd } => {
                use crate::backend::cuda::norm as kernel;
                let grads = kernel::backward(
                    op,
                    cuda_input(op, x)?,
                    cuda_input(op, g)?,
                    x.len / n.max(1),
                    n,
                    weight.map(|w| cuda_input(op, w)).transpose()?,
                    mean,
                    rstd,
                    kind,
                    want,
                )?;
                let wrap = |s: Option<crate::backend::CudaStorage>| s.map(Storage::Cuda);
                Ok(NormGrads {
                    dx: wrap(grads.dx),
                    dweight: wrap(grads.dweight),
                    dbias: wrap(grads.dbias),
                })
            }
            _ => Err(internal(op)),
        }
    }

    /// Training-mode batch normalisation of `x` (`n * c * s` elements) with the batch's
    /// statistics, then `* weight + bias` (one per channel, of x's dtype), then what `then`
    /// says: a ReLU (whose backward [`Storage::batch_norm_backward`] then includes), or a
    /// residual (laid out like `x`, of its dtype) added before the ReLU (the backward then
    /// expects the gradient through the ReLU already). `Ok(None)` where the device has no
    /// kernel for x's dtype (CPU and CUDA: f32, f64, f16, bf16).
    pub fn batch_norm_forward(
        x: Span<'_>,
        d: BatchNormDims,
        weight: Option<Span<'_>>,
        bias: Option<Span<'_>>,
        eps: f64,
        then: BatchNormThen<'_>,
    ) -> Result<Option<BatchNormForward>> {
        let f = BnForward {
            x,
            d,
            weight,
            bias,
            eps,
            then,
        };
        match (x.storage, x.dtype()) {
            (Storage::Cpu(_), DType::F32) => cpu_bn_forward::<f32>(f, Saved::BatchF32),
            (Storage::Cpu(_), DType::F64) => cpu_bn_forward::<f64>(f, Saved::BatchF64),
            // Read and written in their own type, computed in f32 (parameters in f32).
            (Storage::Cpu(_), DType::BF16) => cpu_bn_forward::<bf16>(f, Saved::BatchF32),
            (Storage::Cpu(_), DType::F16) => cpu_bn_forward::<f16>(f, Saved::BatchF32),
            #[cfg(feature = "cuda")]
            (Storage::Cuda(_), DType::F32 | DType::F64 | DType::F16 | DType::BF16) => {
                cuda_bn_forward(f).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The gradients of [`Storage::batch_norm_forward`] (`dweight` and `dbias` always, `dx`
    /// when `want_x`).
    pub fn batch_norm_backward(
        x: Span<'_>,
        g: Span<'_>,
        d: BatchNormDims,
        weight: Option<Span<'_>>,
        saved: &NormSaved,
        want_x: bool,
    ) -> Result<NormGrads> {
        match (&saved.0, x.dtype()) {
            (Saved::BatchF32(stats), DType::BF16) => {
                cpu_bn_backward::<bf16>(x, g, d, weight, stats, want_x)
            }
            (Saved::BatchF32(stats), DType::F16) => {
                cpu_bn_backward::<f16>(x, g, d, weight, stats, want_x)
            }
            (Saved::BatchF32(stats), _) => cpu_bn_backward::<f32>(x, g, d, weight, stats, want_x),
            (Saved::BatchF64(stats), _) => cpu_bn_backward::<f64>(x, g, d, weight, stats, want_x),
            #[cfg(feature = "cuda")]
            (Saved::BatchCuda(saved), _) => {
                use crate::backend::cuda::batch_norm as kernel;
                const OP: &str = "batch_norm";
                let weight = weight.map(|w| cuda_input(OP, w)).transpose()?;
                let (x, g) = (cuda_input(OP, x)?, cuda_input(OP, g)?);
                let grads = kernel::backward(x, g, cuda_dims(d), weight, saved, want_x)?;
                Ok(NormGrads {
                    dx: grads.dx.map(Storage::Cuda),
                    dweight: Some(Storage::Cuda(grads.dweight)),
                    dbias: Some(Storage::Cuda(grads.dbias)),
                })
            }
            _ => Err(internal("batch_norm")),
        }
    }

    /// Batch normalisation in evaluation: `x` (`n * c * s` elements) normalised with the
    /// running statistics, `(x - running_mean) * weight / sqrt(running_var + eps) + bias`,
    /// then what `then` says; no backward (the op layer composes the op when a gradient is
    /// needed). The running statistics and parameters are `(C)` of the compute type (f64
    /// for f64 data, else f32). `Ok(None)` where the device has no kernel (the CPU composes
    /// it).
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_eval(
        x: Span<'_>,
        d: BatchNormDims,
        running_mean: Span<'_>,
        running_var: Span<'_>,
        weight: Option<Span<'_>>,
        bias: Option<Span<'_>>,
        eps: f64,
        then: BatchNormThen<'_>,
    ) -> Result<Option<Storage>> {
        match (x.storage, x.dtype()) {
            #[cfg(feature = "cuda")]
            (Storage::Cuda(_), DType::F32 | DType::F64 | DType::F16 | DType::BF16) => {
                use crate::backend::cuda::batch_norm as kernel;
                const OP: &str = "batch_norm";
                let y = kernel::eval(
                    cuda_input(OP, x)?,
                    cuda_dims(d),
                    cuda_input(OP, running_mean)?,
                    cuda_input(OP, running_var)?,
                    cuda_opt(OP, weight)?,
                    cuda_opt(OP, bias)?,
                    eps,
                    cuda_then(then)?,
                )?;
                Ok(Some(Storage::Cuda(y)))
            }
            _ => {
                let _ = (d, running_mean, running_var, weight, bias, eps, then);
                Ok(None)
            }
        }
    }

    /// Training-mode batch norm's update of the running statistics in place, each optional
    /// `(buffer, element offset)` holding `C` contiguous elements of the dtype of the batch
    /// `mean` and biased `var` (`C` elements each, from [`Storage::batch_norm_forward`]):
    /// `running = running * (1 - momentum) + stat * momentum`, the variance unbiased first
    /// (`* count / (count - 1)`, `count` the elements per channel). `Ok(false)`, nothing done, where the
    /// device has no kernel (the CPU: the op layer composes it).
    pub fn batch_norm_update_running(
        running_mean: Option<(&mut Storage, usize)>,
        running_var: Option<(&mut Storage, usize)>,
        mean: Span<'_>,
        var: Span<'_>,
        count: usize,
        momentum: f64,
    ) -> Result<bool> {
        match (mean.storage, var.storage) {
            #[cfg(feature = "cuda")]
            (Storage::Cuda(_), Storage::Cuda(_)) => {
                const OP: &str = "batch_norm";
                let (rm, rv) = (cuda_running(running_mean)?, cuda_running(running_var)?);
                let (c, mean, var) = (mean.len, cuda_input(OP, mean)?, cuda_input(OP, var)?);
                crate::backend::cuda::batch_norm::update_running(
                    rm, rv, mean, var, c, count, momentum,
                )?;
                Ok(true)
            }
            _ => {
                let _ = (running_mean, running_var, count, momentum);
                Ok(false)
            }
        }
    }
}

/// The host slice of an optional operand.
fn opt_cpu<'a, T: CpuElement>(
    op: &'static str,
    what: &str,
    s: Option<Span<'a>>,
) -> Result<Option<&'a [T]>> {
    s.map(|s| s.cpu_or_err::<T>(op, what)).transpose()
}

#[allow(clippy::too_many_arguments)]
fn cpu_norm_forward<T: KernelFloat>(
    op: &'static str,
    x: Span<'_>,
    weight: Option<Span<'_>>,
    bias: Option<Span<'_>>,
    n: usize,
    eps: f64,
    kind: NormKind,
    keep: fn(NormStats<T>) -> Saved,
) -> Result<Option<NormForward>> {
    let affine = Affine {
        weight: opt_cpu(op, "weight", weight)?,
        bias: opt_cpu(op, "bias", bias)?,
    };
    let (y, stats) = cpu::forward(x.cpu_or_err::<T>(op, "input")?, n, affine, eps, kind);
    Ok(Some(NormForward {
        y: host(y),
        saved: NormSaved(keep(stats)),
    }))
}

#[allow(clippy::too_many_arguments)]
fn cpu_norm_backward<T: KernelFloat>(
    op: &'static str,
    x: Span<'_>,
    g: Span<'_>,
    weight: Option<Span<'_>>,
    n: usize,
    stats: &NormStats<T>,
    kind: NormKind,
    want: NormWanted,
) -> Result<NormGrads> {
    let grads = cpu::backward(
        x.cpu_or_err::<T>(op, "input")?,
        g.cpu_or_err::<T>(op, "grad_output")?,
        n,
        opt_cpu(op, "weight", weight)?,
        stats,
        kind,
        want,
    );
    Ok(NormGrads {
        dx: grads.dx.map(host),
        dweight: grads.dweight.map(host),
        dbias: grads.dbias.map(host),
    })
}

fn bn_dims(d: BatchNormDims) -> cpu_bn::Dims {
    cpu_bn::Dims {
        n: d.n,
        c: d.c,
        s: d.s,
    }
}

/// The operands of [`Storage::batch_norm_forward`].
#[derive(Clone, Copy)]
struct BnForward<'a> {
    x: Span<'a>,
    d: BatchNormDims,
    weight: Option<Span<'a>>,
    bias: Option<Span<'a>>,
    eps: f64,
    then: BatchNormThen<'a>,
}

fn cpu_bn_forward<S: FloatStore>(
    f: BnForward<'_>,
    keep: fn(cpu_bn::Stats<S::C>) -> Saved,
) -> Result<Option<BatchNormForward>>
where
    S::C: KernelFloat,
{
    const OP: &str = "batch_norm";
    let then = match f.then {
        BatchNormThen::Nothing => cpu_bn::Then::Nothing,
        BatchNormThen::Relu => cpu_bn::Then::Relu,
        BatchNormThen::AddRelu(r) => cpu_bn::Then::AddRelu(r.cpu_or_err::<S>(OP, "residual")?),
    };
    let (y, stats) = cpu_bn::forward(
        f.x.cpu_or_err::<S>(OP, "input")?,
        bn_dims(f.d),
        opt_cpu(OP, "weight", f.weight)?,
        opt_cpu(OP, "bias", f.bias)?,
        f.eps,
        then,
    );
    Ok(Some(BatchNormForward {
        y: host(y),
        mean: host(stats.mean.clone()),
        var: host(stats.var.clone()),
        saved: NormSaved(keep(stats)),
    }))
}

fn cpu_bn_backward<S: FloatStore>(
    x: Span<'_>,
    g: Span<'_>,
    d: BatchNormDims,
    weight: Option<Span<'_>>,
    stats: &cpu_bn::Stats<S::C>,
    want_x: bool,
) -> Result<NormGrads>
where
    S::C: KernelFloat,
{
    const OP: &str = "batch_norm";
    let grads = cpu_bn::backward(
        x.cpu_or_err::<S>(OP, "input")?,
        g.cpu_or_err::<S>(OP, "grad_output")?,
        bn_dims(d),
        opt_cpu(OP, "weight", weight)?,
        stats,
        want_x,
    );
    Ok(NormGrads {
        dx: grads.dx.map(host),
        dweight: Some(host(grads.dweight)),
        dbias: Some(host(grads.dbias)),
    })
}

/// Training forward on CUDA.
#[cfg(feature = "cuda")]
fn cuda_bn_forward(f: BnForward<'_>) -> Result<BatchNormForward> {
    use crate::backend::cuda::batch_norm as kernel;
    const OP: &str = "batch_norm";
    let fwd = kernel::forward(
        cuda_input(OP, f.x)?,
        cuda_dims(f.d),
        cuda_opt(OP, f.weight)?,
        cuda_opt(OP, f.bias)?,
        f.eps,
        cuda_then(f.then)?,
    )?;
    Ok(BatchNormForward {
        y: Storage::Cuda(fwd.y),
        mean: Storage::Cuda(fwd.mean),
        var: Storage::Cuda(fwd.var),
        saved: NormSaved(Saved::BatchCuda(fwd.saved)),
    })
}

/// An optional operand as a CUDA kernel input.
#[cfg(feature = "cuda")]
fn cuda_opt<'a>(
    op: &'static str,
    s: Option<Span<'a>>,
) -> Result<Option<crate::backend::cuda::norm::Input<'a>>> {
    s.map(|s| cuda_input(op, s)).transpose()
}

/// A running statistic's buffer as the CUDA kernel writes it; an error for a host buffer.
#[cfg(feature = "cuda")]
fn cuda_running(
    t: Option<(&mut Storage, usize)>,
) -> Result<Option<(&mut crate::backend::CudaStorage, usize)>> {
    match t {
        None => Ok(None),
        Some((Storage::Cuda(s), at)) => Ok(Some((s, at))),
        Some(_) => Err(Error::invalid(
            "batch_norm",
            "the running statistics must be on the batch statistics' GPU",
        )),
    }
}

#[cfg(feature = "cuda")]
fn cuda_dims(d: BatchNormDims) -> crate::backend::cuda::batch_norm::Dims {
    crate::backend::cuda::batch_norm::Dims {
        n: d.n,
        c: d.c,
        s: d.s,
    }
}

#[cfg(feature = "cuda")]
fn cuda_then(then: BatchNormThen<'_>) -> Result<crate::backend::cuda::batch_norm::Then<'_>> {
    use crate::backend::cuda::batch_norm::Then;
    Ok(match then {
        BatchNormThen::Nothing => Then::Nothing,
        BatchNormThen::Relu => Then::Relu,
        BatchNormThen::AddRelu(r) => Then::AddRelu(cuda_input("batch_norm", r)?),
    })
}

/// The CUDA buffer under `s` as a kernel input; an error for a host buffer.
#[cfg(feature = "cuda")]
fn cuda_input<'a>(op: &'static str, s: Span<'a>) -> Result<crate::backend::cuda::norm::Input<'a>> {
    Ok(crate::backend::cuda::norm::Input {
        storage: super::cuda_buffer(op, s.storage)?,
        offset: s.offset,
    })
}
