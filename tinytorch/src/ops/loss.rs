//! Loss functions with PyTorch's semantics (`torch.nn.functional.*`; the modules are in
//! `nn/loss.rs`). `cross_entropy` is one
//! fused op: with class-index targets, one row-wise kernel forward and one backward on the
//! input's device (`Storage::cross_entropy_forward`, `backend/fused/cross_entropy.rs`); elsewhere a single log-softmax pass forward,
//! `softmax - target` backward, composed from tensor ops (the readable reference path). The
//! other losses are composed from tensor ops, so autograd derives their gradients.

use crate::autograd::{needs_grad, no_grad};
use crate::backend::{CeParams, CeReduction, CeRowGrad, Span, Storage};
use crate::error::{Error, Result};
use crate::ops::{require_float, with_spans};
use crate::tensor::{DType, Tensor};

/// How per-element losses are combined (`reduction=` in PyTorch). The default is `Mean`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the per-element losses (`'none'`).
    None,
    /// Average them (`'mean'`, the default).
    #[default]
    Mean,
    /// Add them up (`'sum'`).
    Sum,
}

/// Reductions of [`kl_div`], which adds `'batchmean'` (sum divided by the batch size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KlDivReduction {
    /// Keep the per-element losses.
    None,
    /// Average over all elements (the PyTorch default, although it is not the true KL).
    #[default]
    Mean,
    /// Sum of all elements.
    Sum,
    /// Sum divided by `input.shape[0]`: the mathematically correct KL divergence per sample.
    BatchMean,
}

/// Apply `reduction` to a tensor of per-element losses.
fn reduce(loss: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean_all(),
        Reduction::Sum => loss.sum_all(),
    }
}

fn require_same_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() == target.shape() {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            format!(
                "target size {:?} must be the same as input size {:?}",
                target.shape(),
                input.shape()
            ),
        ))
    }
}

/// Class weights reshaped to broadcast along dim 1 of an input of `ndim` dims, as `dtype`.
fn class_weight(
    op: &'static str,
    weight: Option<&Tensor>,
    classes: usize,
    ndim: usize,
    dtype: DType,
) -> Result<Option<Tensor>> {
    let Some(w) = weight else { return Ok(None) };
    check_class_weight(op, w, classes)?;
    let mut shape = vec![1isize; ndim];
    shape[1] = classes as isize;
    Ok(Some(w.detach().to_dtype(dtype)?.reshape(&shape)?))
}

/// Error unless `w` holds one weight per class.
fn check_class_weight(op: &'static str, w: &Tensor, classes: usize) -> Result<()> {
    if w.shape() == [classes] {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "weight must have shape [{classes}] (one per class), got {:?}",
            w.shape()
        ),
    ))
}

/// Error unless `target` holds i64 class indices shaped like `input` `(N, C, ...)` without
/// dim 1.
fn check_index_target_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if target.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!(
                "class-index targets must be i64, got {} (use a float target of the input's shape for class probabilities)",
                target.dtype()
            ),
        ));
    }
    let mut expected = input.shape().to_vec();
    expected.remove(1);
    if target.shape() != expected.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "target shape {:?} does not match input shape {:?} (expected target shape {expected:?})",
                target.shape(),
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// Error naming the first target that is neither `ignore_index` nor a class in `0..classes`.
fn check_index_target_values(
    op: &'static str,
    values: &[i64],
    classes: usize,
    ignore_index: i64,
) -> Result<()> {
    let classes = classes as i64;
    match values
        .iter()
        .find(|&&v| v != ignore_index && !(0..classes).contains(&v))
    {
        None => Ok(()),
        Some(bad) => Err(Error::index(
            op,
            format!("target {bad} is out of bounds for {classes} classes"),
        )),
    }
}

/// Checked class-index targets: the targets with ignored entries replaced by 0, and a float
/// mask (1 = kept) shaped like the targets.
fn index_targets(
    op: &'static str,
    input: &Tensor,
    target: &Tensor,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    check_index_target_shape(op, input, target)?;
    let values = target.to_vec::<i64>()?;
    check_index_target_values(op, &values, input.shape()[1], ignore_index)?;
    let keep = target.ne_scalar(ignore_index as f64)?;
    let safe = target.masked_fill(&keep.logical_not()?, 0.0)?;
    Ok((safe, keep.to_dtype(input.dtype())?))
}

/// Move an unbatched input `(C,)` (and its target) to a batch of one.
fn batch_of_one(input: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    if input.ndim() == 1 {
        Ok((input.unsqueeze(0)?, target.unsqueeze(0)?))
    } else {
        Ok((input.clone(), target.clone()))
    }
}

/// Cross entropy between logits and targets (`torch.nn.functional.cross_entropy`).
///
/// `input` is `(N, C)`, `(N, C, d1, ...)` or unbatched `(C,)`. `target` holds either class
/// indices (i64, shape of `input` without dim 1; entries equal to `ignore_index` are skipped)
/// or class probabilities (float, same shape as `input`). `weight` is one weight per class;
/// `label_smoothing` in `[0, 1]` mixes the target with the uniform distribution. With `Mean`,
/// index targets divide by the total weight of the non-ignored targets, probability targets
/// by the number of samples. Stable for any finite logits.
///
/// One fused op: the log-softmax is computed once and the backward is
/// `g * (softmax * sum(q) - q)` where `q` is the (weighted, smoothed) target distribution.
/// Class-index targets take the row-wise kernel of the input's device where it has one
/// (`Storage::cross_entropy_forward`), which keeps two numbers per sample for the backward;
/// everything else is composed from tensor ops.
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    require_float(CE, "input", input)?;
    if input.ndim() == 0 {
        return Err(Error::shape(
            CE,
            "input must have at least 1 dim (C,) or (N, C, ...), got shape []",
        ));
    }
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::invalid(
            CE,
            format!("label_smoothing must be between 0.0 and 1.0, got {label_smoothing}"),
        ));
    }
    if fused_ce_applies(input, target, weight) {
        if let Some(loss) = fused_cross_entropy(
            input,
            target,
            weight,
            ignore_index,
            reduction,
            label_smoothing,
        )? {
            return Ok(loss);
        }
    }
    composite_cross_entropy(
        input,
        target,
        weight,
        ignore_index,
        reduction,
        label_smoothing,
    )
}

/// The op name in cross-entropy's errors and saved tensors.
const CE: &str = "cross_entropy";

/// True when the fused kernel may take these arguments (already checked by
/// [`cross_entropy`]): class-index (i64) targets and everything on one device, with at least
/// one class. Probability targets, mixed devices and zero classes take the composite path,
/// which also reports the errors of non-i64 integer targets and of mixed devices.
fn fused_ce_applies(input: &Tensor, target: &Tensor, weight: Option<&Tensor>) -> bool {
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
fn fused_cross_entropy(
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
        let mut dims: Vec<isize> = (0..x.ndim() as isize).filter(|&d| d != 1).collect();
        dims.push(1);
        x.permute(&dims)?
            .contiguous()?
            .reshape(&[samples as isize, classes as isize])?
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
        Reduction::None => loss.reshape(&dims_of(target.shape()))?,
        Reduction::Mean | Reduction::Sum => loss,
    };
    loss.to_dtype(input.dtype()).map(Some)
}

/// A shape as the `isize` dims that `reshape` takes.
fn dims_of(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
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
    let (saved, weight_total) = (fwd.saved, fwd.weight_total);
    Ok(Some(out.record(CE, &[x], move |g, _| {
        let (x, t) = (&saved_x.get()?, &saved_t.get()?);
        if crate::autograd::is_grad_enabled() {
            return Ok(vec![Some(differentiable_ce_rows_grad(
                x,
                t,
                w.as_ref(),
                &a,
                g,
                weight_total,
            )?)]);
        }
        let (per_row, uniform) = match a.reduction {
            Reduction::None => (Some(g.to_dtype(x.dtype())?.contiguous()?), 0.0),
            Reduction::Sum => (None, g.item_f64()?),
            Reduction::Mean => (None, g.item_f64()? / weight_total),
        };
        let dx = with_spans(&[Some(x), Some(t), w.as_ref(), per_row.as_ref()], |s| {
            let g = match s[3] {
                Some(rows) => CeRowGrad::PerRow(rows),
                None => CeRowGrad::Uniform(uniform),
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
/// must be differentiable again (the kernel's is not). `weight_total` divides for `Mean`.
fn differentiable_ce_rows_grad(
    x: &Tensor,
    t: &Tensor,
    w: Option<&Tensor>,
    a: &CeArgs,
    g: &Tensor,
    weight_total: f64,
) -> Result<Tensor> {
    let t = t.reshape(&[-1])?;
    let (q, _) = target_distribution(x, &t, w, a.ignore_index, a.label_smoothing)?;
    let g = match a.reduction {
        Reduction::None => g.to_dtype(x.dtype())?.reshape(&[-1, 1])?,
        Reduction::Sum => g.to_dtype(x.dtype())?,
        Reduction::Mean => g.to_dtype(x.dtype())?.div_scalar(weight_total)?,
    };
    let total = q.sum(&[1], true)?;
    x.softmax(1)?.mul(&total)?.sub(&q)?.mul(&g)
}

/// The composite cross entropy (any device, index or probability targets): log-softmax,
/// the target distribution `q` as a tensor, `-sum(q * logp)`; backward
/// `g * (exp(logp) * sum(q) - q)`. The reference the fused kernel is tested against.
fn composite_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    const OP: &str = CE;
    let unbatched = input.ndim() == 1;
    let (x, t) = batch_of_one(input, target)?;
    let (out, logp, q, denom) = {
        let _guard = no_grad();
        let x = x.detach();
        let logp = x.log_softmax(1)?;
        let (q, denom) = target_distribution(&x, &t, weight, ignore_index, label_smoothing)?;
        let per = q.mul(&logp)?.sum(&[1], false)?.neg()?;
        let out = match reduction {
            Reduction::None if unbatched => per.squeeze_dim(0)?,
            Reduction::None => per,
            Reduction::Sum => per.sum_all()?,
            Reduction::Mean => per.sum_all()?.div_scalar(denom)?,
        };
        (out, logp, q, denom)
    };
    if !needs_grad(&[input]) {
        return Ok(out);
    }
    let (logp, q, saved_x) = (logp.save(OP), q.save(OP), x.save(OP));
    let per_shape: Vec<isize> = {
        let mut s: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        s[1] = 1;
        s
    };
    let in_shape: Vec<isize> = input.shape().iter().map(|&d| d as isize).collect();
    Ok(out.record(OP, &[input], move |g, _| {
        let q = &q.get()?;
        // Under create_graph, log-softmax again from the logits in the graph, so that the
        // gradient is differentiable w.r.t. them.
        let logp = &if crate::autograd::is_grad_enabled() {
            saved_x.get()?.log_softmax(1)?
        } else {
            logp.get()?
        };
        // The upstream gradient of each sample, shaped to broadcast along the class dim.
        let g = match reduction {
            Reduction::None => g.reshape(&per_shape)?,
            Reduction::Sum => g.clone(),
            Reduction::Mean => g.div_scalar(denom)?,
        };
        let total = q.sum(&[1], true)?;
        let dx = logp.exp()?.mul(&total)?.sub(q)?.mul(&g)?;
        Ok(vec![Some(dx.reshape(&in_shape)?)])
    }))
}

/// The target distribution `q` `(N, C, ...)` of cross entropy on logits `x` (batched,
/// outside the graph) and `target` (class indices or probabilities), with class weights,
/// ignored targets and label smoothing folded in, and the divisor of the `Mean` reduction.
fn target_distribution(
    x: &Tensor,
    t: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<(Tensor, f64)> {
    const OP: &str = CE;
    let _guard = no_grad();
    let prob = t.dtype().is_float();
    let classes = x.shape()[1];
    let eps = label_smoothing;
    let w = class_weight(OP, weight, classes, x.ndim(), x.dtype())?;
    let (q, denom) = if prob {
        require_same_shape(OP, x, t)?;
        let mut q = t.detach().to_dtype(x.dtype())?;
        if eps > 0.0 {
            q = q.mul_scalar(1.0 - eps)?.add_scalar(eps / classes as f64)?;
        }
        if let Some(w) = &w {
            q = q.mul(w)?;
        }
        (q, (x.numel() / classes.max(1)) as f64)
    } else {
        let (safe, keep) = index_targets(OP, x, t, ignore_index)?;
        let onehot = x.zeros_like()?.scatter_value(1, &safe.unsqueeze(1)?, 1.0)?;
        let mut q = if eps > 0.0 {
            onehot
                .mul_scalar(1.0 - eps)?
                .add_scalar(eps / classes as f64)?
        } else {
            onehot.clone()
        };
        let mut picked_w = keep.clone();
        if let Some(w) = &w {
            q = q.mul(w)?;
            picked_w = onehot.mul(w)?.sum(&[1], false)?.mul(&keep)?;
        }
        q = q.mul(&keep.unsqueeze(1)?)?;
        let denom = picked_w.sum_all()?.to_dtype(DType::F64)?.item::<f64>()?;
        (q, denom)
    };
    Ok((q, denom))
}

/// Negative log-likelihood of log-probabilities `input` `(N, C, ...)` or `(C,)` at class
/// indices `target` (`torch.nn.functional.nll_loss`), with class weights and `ignore_index`;
/// `Mean` divides by the total weight of the non-ignored targets.
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "nll_loss";
    require_float(OP, "input", input)?;
    if input.ndim() == 0 {
        return Err(Error::shape(
            OP,
            "input must have at least 1 dim (C,) or (N, C, ...), got shape []",
        ));
    }
    let unbatched = input.ndim() == 1;
    let (x, t) = batch_of_one(input, target)?;
    let classes = x.shape()[1];
    let (safe, keep) = index_targets(OP, &x, &t, ignore_index)?;
    let w = class_weight(OP, weight, classes, x.ndim(), x.dtype())?;
    // The weight of each sample's target class (0 where ignored); no gradient flows to it.
    let picked_w = match &w {
        Some(w) => {
            let _guard = no_grad();
            x.detach()
                .zeros_like()?
                .scatter_value(1, &safe.unsqueeze(1)?, 1.0)?
                .mul(w)?
                .sum(&[1], false)?
                .mul(&keep)?
        }
        None => keep,
    };
    let picked = x.gather(1, &safe.unsqueeze(1)?)?.squeeze_dim(1)?;
    let per = picked.mul(&picked_w)?.neg()?;
    match reduction {
        Reduction::None if unbatched => per.squeeze_dim(0),
        Reduction::None => Ok(per),
        Reduction::Sum => per.sum_all(),
        Reduction::Mean => per.sum_all()?.div(&picked_w.sum_all()?),
    }
}

/// `input - target` for the loss `op`: a shape error names the loss, not the subtraction.
fn difference(op: &'static str, input: &Tensor, target: &Tensor) -> Result<Tensor> {
    input.sub(target).map_err(|e| match e {
        Error::Shape { msg, .. } => Error::shape(op, format!("input and target: {msg}")),
        other => other,
    })
}

/// Mean squared error `(input - target)^2` (`torch.nn.functional.mse_loss`); shapes must
/// broadcast.
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduce(difference("mse_loss", input, target)?.square()?, reduction)
}

/// Mean absolute error `|input - target|` (`torch.nn.functional.l1_loss`).
pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduce(difference("l1_loss", input, target)?.abs()?, reduction)
}

/// `0.5 d^2 / beta` where `|d| < beta`, else `|d| - 0.5 beta`, with `d = input - target`
/// (`torch.nn.functional.smooth_l1_loss`; `beta = 0` is the L1 loss).
pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(Error::invalid(
            "smooth_l1_loss",
            format!("beta must be non-negative, got {beta}"),
        ));
    }
    let d = difference("smooth_l1_loss", input, target)?.abs()?;
    if beta == 0.0 {
        return reduce(d, reduction);
    }
    let quad = d.square()?.mul_scalar(0.5 / beta)?;
    let lin = d.sub_scalar(0.5 * beta)?;
    reduce(
        Tensor::where_cond(&d.lt_scalar(beta)?, &quad, &lin)?,
        reduction,
    )
}

/// `0.5 d^2` where `|d| < delta`, else `delta (|d| - 0.5 delta)`
/// (`torch.nn.functional.huber_loss`).
pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    if delta <= 0.0 {
        return Err(Error::invalid(
            "huber_loss",
            format!("delta must be positive, got {delta}"),
        ));
    }
    let d = difference("huber_loss", input, target)?.abs()?;
    let quad = d.square()?.mul_scalar(0.5)?;
    let lin = d.sub_scalar(0.5 * delta)?.mul_scalar(delta)?;
    reduce(
        Tensor::where_cond(&d.lt_scalar(delta)?, &quad, &lin)?,
        reduction,
    )
}

/// Binary cross entropy of probabilities `input` in `[0, 1]`
/// (`torch.nn.functional.binary_cross_entropy`): `-w (t log p + (1 - t) log(1 - p))`, each
/// log clamped to `>= -100` as PyTorch does, so `p = 0` or `1` gives a finite loss.
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    require_float(OP, "input", input)?;
    require_same_shape(OP, input, target)?;
    let (lo, hi) = if input.numel() == 0 {
        (0.0, 0.0)
    } else {
        let d = input.detach();
        (d.min_all()?.item_f64()?, d.max_all()?.item_f64()?)
    };
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
        return Err(Error::invalid(
            OP,
            format!("all elements of input should be between 0 and 1, got range [{lo}, {hi}]"),
        ));
    }
    let log_p = input.log()?.clamp_min(-100.0)?;
    let log_q = input.rsub_scalar(1.0)?.log()?.clamp_min(-100.0)?;
    let mut loss = target
        .mul(&log_p)?
        .add(&target.rsub_scalar(1.0)?.mul(&log_q)?)?
        .neg()?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    reduce(loss, reduction)
}

/// Binary cross entropy on logits (`torch.nn.functional.binary_cross_entropy_with_logits`),
/// in the stable form `(1 - t) x + (1 + (pw - 1) t) (log1p(exp(-|x|)) + max(-x, 0))`.
/// `pos_weight` (broadcast along the last dim) weighs the positive term.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    require_float(OP, "input", input)?;
    require_same_shape(OP, input, target)?;
    // log(1 + exp(-x)) without overflow for any x.
    let softplus_neg = input
        .abs()?
        .neg()?
        .exp()?
        .log1p()?
        .add(&input.neg()?.relu()?)?;
    let scaled = match pos_weight {
        Some(pw) => target
            .mul(&pw.sub_scalar(1.0)?)?
            .add_scalar(1.0)?
            .mul(&softplus_neg)?,
        None => softplus_neg,
    };
    let mut loss = target.rsub_scalar(1.0)?.mul(input)?.add(&scaled)?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    reduce(loss, reduction)
}

/// Kullback-Leibler divergence `target * (log(target) - input)` with `input` given as
/// log-probabilities (`torch.nn.functional.kl_div`); with `log_target` the target is given as
/// log-probabilities too. Terms with `target = 0` contribute 0.
pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: KlDivReduction,
    log_target: bool,
) -> Result<Tensor> {
    const OP: &str = "kl_div";
    require_float(OP, "input", input)?;
    let loss = if log_target {
        target.exp()?.mul(&target.sub(input)?)?
    } else {
        // xlogy(t, t): log of 1 where t = 0 keeps 0 * log(0) out of the value and gradient.
        let pos = target.gt_scalar(0.0)?;
        let safe = target.masked_fill(&pos.logical_not()?, 1.0)?;
        target.mul(&safe.log()?)?.sub(&target.mul(input)?)?
    };
    match reduction {
        KlDivReduction::None => Ok(loss),
        KlDivReduction::Mean => loss.mean_all(),
        KlDivReduction::Sum => loss.sum_all(),
        KlDivReduction::BatchMean => {
            let n = if input.ndim() == 0 {
                1
            } else {
                input.shape()[0]
            };
            loss.sum_all()?.div_scalar(n as f64)
        }
    }
}

/// Knowledge distillation (Hinton et al., 2015): `alpha * T² * KL(p_T || q_T) + (1 - alpha) *
/// cross_entropy(student_logits, targets)`, where `p_T` and `q_T` are the teacher's and the
/// student's softmax at temperature `T` and the KL divergence is averaged over the batch
/// (`kl_div(..., reduction="batchmean")`). The `T²` keeps the soft term's gradients on the
/// scale of the hard one's as `T` grows. The teacher's logits are taken as constants.
///
/// Logits are `(N, C)`, targets `(N,)` class indices; `temperature > 0`, `alpha` in `[0, 1]`.
pub fn distillation_loss(
    student_logits: &Tensor,
    teacher_logits: &Tensor,
    targets: &Tensor,
    temperature: f64,
    alpha: f64,
) -> Result<Tensor> {
    const OP: &str = "distillation_loss";
    require_float(OP, "student_logits", student_logits)?;
    require_float(OP, "teacher_logits", teacher_logits)?;
    if student_logits.ndim() != 2 || student_logits.shape() != teacher_logits.shape() {
        return Err(Error::shape(
            OP,
            format!(
                "student and teacher logits must both be (N, C), got {:?} and {:?}",
                student_logits.shape(),
                teacher_logits.shape()
            ),
        ));
    }
    if !(temperature > 0.0 && temperature.is_finite()) {
        return Err(Error::invalid(
            OP,
            format!("temperature must be positive, got {temperature}"),
        ));
    }
    if !(0.0..=1.0).contains(&alpha) {
        return Err(Error::invalid(
            OP,
            format!("alpha must be between 0 and 1, got {alpha}"),
        ));
    }
    let soft_student = student_logits.div_scalar(temperature)?.log_softmax(-1)?;
    let soft_teacher = teacher_logits
        .detach()
        .to_dtype(student_logits.dtype())?
        .div_scalar(temperature)?
        .log_softmax(-1)?;
    let soft = kl_div(
        &soft_student,
        &soft_teacher,
        KlDivReduction::BatchMean,
        true,
    )?
    .mul_scalar(temperature * temperature)?;
    let hard = cross_entropy(student_logits, targets, None, -100, Reduction::Mean, 0.0)?;
    soft.mul_scalar(alpha)?.add(&hard.mul_scalar(1.0 - alpha)?)
}
