//! Fused cross-entropy with class-index targets over contiguous `(rows, C)` logits:
//! `Storage::cross_entropy_forward` / `cross_entropy_backward` send it to the CPU kernel
//! (`cpu/cross_entropy.rs`) or the CUDA one (`cuda/cross_entropy.rs`). Both keep two numbers
//! per row (the max and the sum of `exp(x - max)`) for the backward, never a log-softmax.

use super::{host, Span};
use crate::backend::cpu::cross_entropy::{self as cpu, Params, RowGrad, RowStats};
use crate::backend::cpu::float::KernelFloat;
use crate::backend::Storage;
use crate::base::DType;
use crate::error::{Error, Result};

const OP: &str = "cross_entropy";

/// The loss's settings, shared by forward and backward.
#[derive(Clone, Copy)]
pub struct CeParams<'a> {
    /// Number of classes `C` (the row length), at least 1.
    pub classes: usize,
    /// One weight per class, of the logits' dtype, or `None` for all ones.
    pub weight: Option<Span<'a>>,
    /// Rows whose target equals this contribute nothing.
    pub ignore_index: i64,
    /// `eps` in `[0, 1]`: the target is mixed with the uniform distribution.
    pub label_smoothing: f64,
}

/// How the forward combines the rows' losses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeReduction {
    /// One loss per row.
    None,
    /// Their sum.
    Sum,
    /// Their sum over the total weight of the rows not ignored (0 / 0 = NaN when none is).
    Mean,
}

/// The upstream gradient of each row's loss.
#[derive(Clone, Copy)]
pub enum CeRowGrad<'a> {
    /// One value for every row (`sum`, or `mean` already divided by its denominator): one
    /// f64 on the logits' device, which the host need not read.
    Uniform(Span<'a>),
    /// One value per row (reduction `none`), of the logits' dtype.
    PerRow(Span<'a>),
}

/// What the forward kept for the backward: each row's max and sum of exponentials, where
/// its device keeps them.
pub struct CeSaved(Saved);

enum Saved {
    F32(Vec<RowStats<f32>>),
    F64(Vec<RowStats<f64>>),
    #[cfg(feature = "cuda")]
    Cuda(crate::backend::CudaStorage),
}

/// The forward's results.
pub struct CeForward {
    /// The loss as an f64 buffer on the logits' device (reduced in f64, so that the rows add
    /// unrounded): one per row for `None` (0 for ignored rows), else one element.
    pub loss: Storage,
    /// The `mean` denominator, the total weight `w_t` of the rows not ignored: one f64 on the
    /// logits' device.
    pub weight_total: Storage,
    /// For the backward.
    pub saved: CeSaved,
}

impl Storage {
    /// The loss of the logits `x` (`rows x C`, f32 or f64) against `targets` (i64, `rows` of
    /// them, each in `0..C` or `ignore_index`: an error otherwise), reduced as `reduction`
    /// says. `Ok(None)`, nothing done, where the device has no kernel for these operands.
    pub fn cross_entropy_forward(
        x: Span<'_>,
        targets: Span<'_>,
        p: &CeParams<'_>,
        reduction: CeReduction,
    ) -> Result<Option<CeForward>> {
        check_lengths(x, targets, p)?;
        match (x.storage, targets.storage) {
            (Storage::Cpu(_), Storage::Cpu(_)) => match x.dtype() {
                DType::F32 => cpu_forward::<f32>(x, targets, p, reduction, Saved::F32).map(Some),
                DType::F64 => cpu_forward::<f64>(x, targets, p, reduction, Saved::F64).map(Some),
                _ => Ok(None),
            },
            #[cfg(feature = "cuda")]
            (Storage::Cuda(xs), Storage::Cuda(ts)) => {
                let weight = match p.weight.map(|w| w.storage) {
                    Some(Storage::Cuda(w)) => Some((w, p.weight.unwrap().offset)),
                    Some(_) => return Ok(None),
                    None => None,
                };
                let Some(out) = crate::backend::cuda::cross_entropy::forward(
                    (xs, x.offset),
                    (ts, targets.offset),
                    weight,
                    targets.len,
                    p.classes,
                    p.ignore_index,
                    p.label_smoothing,
                    reduction,
                )?
                else {
                    return Ok(None);
                };
                Ok(Some(CeForward {
                    loss: Storage::Cuda(out.loss),
                    weight_total: Storage::Cuda(out.weight_total),
                    saved: CeSaved(Saved::Cuda(out.stats)),
                }))
            }
            #[allow(unreachable_patterns)] // reachable with the `cuda` feature
            _ => Ok(None),
        }
    }

    /// `dx` (`rows x C`, x's dtype) from the forward's operands, what it kept and the
    /// upstream gradient of each row's loss. `Ok(None)` where the device has no kernel.
    pub fn cross_entropy_backward(
        x: Span<'_>,
        targets: Span<'_>,
        p: &CeParams<'_>,
        saved: &CeSaved,
        g: CeRowGrad<'_>,
    ) -> Result<Option<Storage>> {
        check_lengths(x, targets, p)?;
        match &saved.0 {
            Saved::F32(stats) => cpu_backward::<f32>(x, targets, p, stats, g).map(Some),
            Saved::F64(stats) => cpu_backward::<f64>(x, targets, p, stats, g).map(Some),
            #[cfg(feature = "cuda")]
            Saved::Cuda(stats) => {
                let cuda = cuda_span;
                let weight = p.weight.map(cuda).transpose()?;
                let (per_row, uniform) = match g {
                    CeRowGrad::PerRow(s) => (Some(cuda(s)?), None),
                    CeRowGrad::Uniform(s) => (None, Some(cuda(s)?)),
                };
                crate::backend::cuda::cross_entropy::backward(
                    cuda(x)?,
                    cuda(targets)?,
                    weight,
                    stats,
                    per_row,
                    uniform,
                    targets.len,
                    p.classes,
                    p.ignore_index,
                    p.label_smoothing,
                )
                .map(|dx| Some(Storage::Cuda(dx)))
            }
        }
    }
}

/// The GPU buffer under `s` and where the operand starts in it.
#[cfg(feature = "cuda")]
fn cuda_span(s: Span<'_>) -> Result<(&crate::backend::CudaStorage, usize)> {
    Ok((super::cuda_buffer(OP, s.storage)?, s.offset))
}

/// The operands hold `rows x C` logits, `rows` targets and `C` weights.
fn check_lengths(x: Span<'_>, targets: Span<'_>, p: &CeParams<'_>) -> Result<()> {
    let weight_ok = p.weight.is_none_or(|w| w.len == p.classes);
    if p.classes == 0 || x.len != targets.len * p.classes || !weight_ok {
        return Err(Error::shape(
            OP,
            format!(
                "{} logits do not make rows of {} classes for {} targets (or the class weights are not {} long)",
                x.len, p.classes, targets.len, p.classes
            ),
        ));
    }
    if targets.dtype() != DType::I64 {
        return Err(Error::unsupported_dtype(OP, targets.dtype()));
    }
    Ok(())
}

/// The CPU kernel's parameters, reading the weights in place.
fn cpu_params<'a, T: KernelFloat>(p: &CeParams<'a>) -> Result<Params<'a, T>> {
    Ok(Params {
        classes: p.classes,
        weight: p
            .weight
            .map(|w| w.cpu_or_err::<T>(OP, "weight"))
            .transpose()?,
        ignore_index: p.ignore_index,
        label_smoothing: p.label_smoothing,
    })
}

fn cpu_forward<T: KernelFloat>(
    x: Span<'_>,
    targets: Span<'_>,
    p: &CeParams<'_>,
    reduction: CeReduction,
    keep: fn(Vec<RowStats<T>>) -> Saved,
) -> Result<CeForward> {
    let xs = x.cpu_or_err::<T>(OP, "input")?;
    let ts = targets.cpu_or_err::<i64>(OP, "target")?;
    cpu::check_targets(ts, p.classes, p.ignore_index)?;
    let cpu::Forward {
        losses,
        stats,
        weight_total,
    } = cpu::forward(xs, ts, cpu_params(p)?);
    let total = || losses.iter().sum::<f64>();
    let loss = match reduction {
        CeReduction::None => losses,
        CeReduction::Sum => vec![total()],
        CeReduction::Mean => vec![total() / weight_total],
    };
    Ok(CeForward {
        loss: host(loss),
        weight_total: host(vec![weight_total]),
        saved: CeSaved(keep(stats)),
    })
}

fn cpu_backward<T: KernelFloat>(
    x: Span<'_>,
    targets: Span<'_>,
    p: &CeParams<'_>,
    stats: &[RowStats<T>],
    g: CeRowGrad<'_>,
) -> Result<Storage> {
    let xs = x.cpu_or_err::<T>(OP, "input")?;
    let ts = targets.cpu_or_err::<i64>(OP, "target")?;
    let g = match g {
        CeRowGrad::Uniform(s) => match s.cpu_or_err::<f64>(OP, "grad_output")? {
            &[g] => RowGrad::Uniform(g),
            g => {
                return Err(Error::shape(
                    OP,
                    format!("a uniform grad_output is one f64, got {} of them", g.len()),
                ))
            }
        },
        CeRowGrad::PerRow(s) => RowGrad::PerRow(s.cpu_or_err::<T>(OP, "grad_output")?),
    };
    Ok(host(cpu::backward(xs, ts, cpu_params(p)?, stats, g)))
}
