//! Cross entropy with class-index targets through the fused row-wise kernel of the input's
//! device (`Storage::cross_entropy_forward`), forward and backward.

use super::cross_entropy::{target_distribution, CE};
use super::targets::{batch_of_one, check_class_weight, check_index_target_shape};
use super::Reduction;
use crate::autograd::needs_grad;
use crate::backend::{CeParams, CeReduction, CeRowGrad, Span, Storage};
use crate::error::{Error, Result};
use crate::ops::with_spans;
use crate::tensor::{DType, Tensor};

/// True when the fused kernel may take these arguments (already checked by
/// [`cross_entropy`](super::cross_entropy)): class-index (i64) targets and everything on one
/// device, with at least one class. Probability targets, mixed devices and zero classes take
/// the composite path, which also reports the errors of non-i64 integer targets and of mixed
/// devices.
pub(super) fn fused_ce_applies(input: &Tensor, target: &Tensor, weight: Option<&Tensor>) -> bool {
    let classes = if input.ndim() == 1 {
        input.shape()[0]
    } else {
        input.shape()[1]
    };
    let device = input.device();
    target.dtype() == DType::I64
        && target.device() == device
        && weight.is_none_or(|w| w.device() == device)
        && classes > 0
}

/// Cross entropy with class-index targets through the fused row-wise kernel of the input's
/// device (`Storage::cross_entropy_forward`), or `None` where that device has none. The
/// input is brought to contiguous rows `(samples, C)` by differentiable tensor ops (a batch
/// of one for `(C,)`; for `(N, C, d1, ...)` the class dim moved last, which copies), so
/// autograd carries the kernel's gradient back through them. f16/bf16 compute in f32.
pub(super) fn fused_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Option<Tensor>> {
    let (x, t) = batch_of_one(input, target)?;
    let classes = x.shape()[1];
    if let Some(w) = weight {
        check_class_weight(CE, w, classes)?;
    }
    check_index_target_shape(CE, &x, &t)?;
    let samples = t.numel();
    let rows = if x.ndim() > 2 {
        // (N, C, d1, ...) -> (N, d1, ..., C): one row per sample and position, in the
        // targets' row-major order.
        let mut dims: Vec<usize> = (0..x.ndim()).filter(|&d| d != 1).collect();
        dims.push(1);
        x.permute(&dims)?
            .contiguous()?
            .reshape(&[samples, classes])?
    } else {
        x.contiguous()?
    };
    let compute = if rows.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let rows = rows.to_dtype(compute)?.contiguous()?;
    // A private copy of the class weights: the backward reads them after the forward, and a
    // copy shares no buffer with the logits.
    let w = weight
        .map(|w| w.detach().to_dtype(compute)?.contiguous_copy())
        .transpose()?;
    let args = CeArgs {
        classes,
        ignore_index,
        reduction,
        label_smoothing,
    };
    let Some(loss) = fused_ce_rows(&rows, &t.contiguous()?, w, args)? else {
        return Ok(None);
    };
    // Per-sample losses take the targets' shape (0-d for an unbatched input).
    let loss = match reduction {
        Reduction::None => loss.reshape(target.shape())?,
        Reduction::Mean | Reduction::Sum => loss,
    };
    loss.to_dtype(input.dtype()).map(Some)
}

/// The scalar arguments of the fused cross-entropy.
#[derive(Clone, Copy)]
struct CeArgs {
    classes: usize,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
}

impl CeArgs {
    /// The reduction, as the kernel takes it.
    fn kernel_reduction(self) -> CeReduction {
        match self.reduction {
            Reduction::None => CeReduction::None,
            Reduction::Sum => CeReduction::Sum,
            Reduction::Mean => CeReduction::Mean,
        }
    }

    /// The kernel's parameters, with the class weights read in place.
    fn params(self, weight: Option<Span<'_>>) -> CeParams<'_> {
        CeParams {
            classes: self.classes,
            weight,
            ignore_index: self.ignore_index,
            label_smoothing: self.label_smoothing,
        }
    }
}

/// The kernel on contiguous rows `x` `(samples, C)` (f32 or f64) and contiguous targets
/// (`samples` of them, any shape): per-sample losses `(samples,)` for `None`, else a scalar,
/// of x's dtype; `None` where x's device has no kernel. Records the backward, which saves
/// `x`, the targets and the statistics the kernel kept (two numbers per sample).
fn fused_ce_rows(x: &Tensor, t: &Tensor, w: Option<Tensor>, a: CeArgs) -> Result<Option<Tensor>> {
    let fwd = with_spans(&[Some(x), Some(t), w.as_ref()], |s| {
        let (xs, ts) = (s[0].expect("given"), s[1].expect("given"));
        Storage::cross_entropy_forward(xs, ts, &a.params(s[2]), a.kernel_reduction())
    })?;
    let Some(fwd) = fwd else {
        return Ok(None);
    };
    // Reduced in f64 by the kernel, rounded once here. The mean of no (unignored) target is
    // 0 / 0 = NaN, as in PyTorch.
    let shape: &[usize] = match a.reduction {
        Reduction::None => &[t.numel()],
        Reduction::Sum | Reduction::Mean => &[],
    };
    let out = Tensor::from_contiguous(fwd.loss, shape).to_dtype(x.dtype())?;
    if !needs_grad(&[x]) {
        return Ok(Some(out));
    }
    let (saved_x, saved_t) = (x.save(CE), t.save(CE));
    let saved = fwd.saved;
    // The mean's denominator stays where the kernel left it: on a GPU, reading it (or the
    // loss's gradient) on the host would make the host wait for the device.
    let weight_total = Tensor::from_contiguous(fwd.weight_total, &[]);
    Ok(Some(out.record(CE, &[x], move |g, _| {
        let (x, t) = (&saved_x.get()?, &saved_t.get()?);
        if crate::autograd::is_grad_enabled() {
            return Ok(vec![Some(differentiable_ce_rows_grad(
                x,
                t,
                w.as_ref(),
                &a,
                g,
                &weight_total,
            )?)]);
        }
        let (per_row, uniform) = match a.reduction {
            Reduction::None => (Some(g.to_dtype(x.dtype())?.contiguous()?), None),
            Reduction::Sum => (None, Some(g.to_dtype(DType::F64)?)),
            Reduction::Mean => (None, Some(g.to_dtype(DType::F64)?.div(&weight_total)?)),
        };
        let operands = [
            Some(x),
            Some(t),
            w.as_ref(),
            per_row.as_ref(),
            uniform.as_ref(),
        ];
        let dx = with_spans(&operands, |s| {
            let g = match (s[3], s[4]) {
                (Some(rows), _) => CeRowGrad::PerRow(rows),
                (None, Some(one)) => CeRowGrad::Uniform(one),
                (None, None) => return Err(Error::invalid(CE, "no upstream gradient")),
            };
            let (xs, ts) = (s[0].expect("given"), s[1].expect("given"));
            Storage::cross_entropy_backward(xs, ts, &a.params(s[2]), &saved, g)
        })?
        .ok_or_else(|| {
            Error::invalid(CE, "the device that ran the forward has no backward kernel")
        })?;
        Ok(vec![Some(Tensor::from_contiguous(dx, x.shape()))])
    })))
}

/// The gradient of the fused cross entropy w.r.t. its rows `x` `(samples, C)` written with
/// tensor ops, `g * (softmax(x) * sum(q) - q)`, for a backward under create_graph, where it
/// must be differentiable again (the kernel's is not). `weight_total` (0-d f64) divides for
/// `Mean`.
fn differentiable_ce_rows_grad(
    x: &Tensor,
    t: &Tensor,
    w: Option<&Tensor>,
    a: &CeArgs,
    g: &Tensor,
    weight_total: &Tensor,
) -> Result<Tensor> {
    let t = t.reshape(&[-1])?;
    let (q, _) = target_distribution(x, &t, w, a.ignore_index, a.label_smoothing)?;
    let g = match a.reduction {
        Reduction::None => g.to_dtype(x.dtype())?.reshape(&[-1, 1])?,
        Reduction::Sum => g.to_dtype(x.dtype())?,
        Reduction::Mean => g
            .to_dtype(x.dtype())?
            .div(&weight_total.to_dtype(x.dtype())?)?,
    };
    let total = q.sum(&[1], true)?;
    x.softmax(1)?.mul(&total)?.sub(&q)?.mul(&g)
}
