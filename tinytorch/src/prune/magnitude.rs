//! The masks of magnitude pruning, as `torch.nn.utils.prune` computes them: the smallest
//! |w| of one tensor (`l1_unstructured`) or of several together (`global_unstructured`), and
//! whole slices along a dim by their Ln norm (`ln_structured`). A mask is a tensor of the
//! weight's shape and dtype holding 1 (kept) and 0 (pruned). Given the mask of an earlier
//! round, a new round prunes among what is still kept, its amount counted against that
//! (PyTorch's `PruningContainer`).

use super::Amount;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Host copies of a weight and of its current mask (all ones without one).
fn values_and_mask(
    op: &'static str,
    w: &Tensor,
    mask: Option<&Tensor>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if !w.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("weights must be float, got {}", w.dtype()),
        ));
    }
    let values = w.to_vec_f64()?;
    let mask = match mask {
        Some(m) if m.shape() != w.shape() => {
            return Err(Error::shape(
                op,
                format!(
                    "mask of shape {:?} for a weight of shape {:?}",
                    m.shape(),
                    w.shape()
                ),
            ))
        }
        Some(m) => m.to_vec_f64()?,
        None => vec![1.0; values.len()],
    };
    Ok((values, mask))
}

/// A mask tensor of `like`'s shape, dtype and device from host values.
fn mask_tensor(values: Vec<f64>, like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(values, like.shape())?
        .to_dtype(like.dtype())?
        .to_device(like.device())
}

/// Zero, in `mask`, the `count` kept positions of smallest `score` (ties: the lower
/// position first, as a stable sort gives).
fn prune_smallest(scores: &[f64], mask: &mut [f64], count: usize) {
    let mut kept: Vec<usize> = (0..scores.len()).filter(|&i| mask[i] != 0.0).collect();
    kept.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    for &i in &kept[..count] {
        mask[i] = 0.0;
    }
}

/// `prune.l1_unstructured(module, name, amount)`'s mask for `weight`: the `amount` of its
/// still-kept entries with the smallest |w| pruned.
pub fn l1_unstructured(weight: &Tensor, amount: Amount, mask: Option<&Tensor>) -> Result<Tensor> {
    const OP: &str = "l1_unstructured";
    let (values, mut m) = values_and_mask(OP, weight, mask)?;
    let kept = m.iter().filter(|&&x| x != 0.0).count();
    let count = amount.count(OP, kept)?;
    let scores: Vec<f64> = values.iter().map(|v| v.abs()).collect();
    prune_smallest(&scores, &mut m, count);
    mask_tensor(m, weight)
}

/// `prune.global_unstructured(params, L1Unstructured, amount)`'s masks: the `amount` of all
/// still-kept entries of `weights` together with the smallest |w| pruned, wherever they are.
pub fn global_unstructured(
    weights: &[&Tensor],
    amount: Amount,
    masks: &[Option<&Tensor>],
) -> Result<Vec<Tensor>> {
    const OP: &str = "global_unstructured";
    if masks.len() != weights.len() {
        return Err(Error::invalid(
            OP,
            format!("{} masks for {} weights", masks.len(), weights.len()),
        ));
    }
    let (mut scores, mut all_masks, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for (w, m) in weights.iter().zip(masks) {
        let (values, mask) = values_and_mask(OP, w, *m)?;
        sizes.push(values.len());
        scores.extend(values.iter().map(|v| v.abs()));
        all_masks.extend(mask);
    }
    let kept = all_masks.iter().filter(|&&x| x != 0.0).count();
    prune_smallest(&scores, &mut all_masks, amount.count(OP, kept)?);
    let mut out = Vec::with_capacity(weights.len());
    let mut start = 0;
    for (w, n) in weights.iter().zip(sizes) {
        out.push(mask_tensor(all_masks[start..start + n].to_vec(), w)?);
        start += n;
    }
    Ok(out)
}

/// `prune.ln_structured(module, name, amount, n, dim)`'s mask for `weight`: of the slices
/// along `dim` still kept (output channels for `dim = 0`), the `amount` with the smallest
/// Ln norm (`n >= 1`, or infinity) pruned whole.
pub fn ln_structured(
    weight: &Tensor,
    amount: Amount,
    n: f64,
    dim: usize,
    mask: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "ln_structured";
    let shape = weight.shape().to_vec();
    if dim >= shape.len() {
        return Err(Error::invalid(
            OP,
            format!("dim {dim} is out of range for a weight of shape {shape:?}"),
        ));
    }
    if n.is_nan() || n < 1.0 {
        return Err(Error::invalid(
            OP,
            format!("the norm's order must be >= 1, got {n}"),
        ));
    }
    let (values, mut m) = values_and_mask(OP, weight, mask)?;
    let slices = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let slice_of = |i: usize| (i / inner) % slices;
    let mut norms = vec![0.0f64; slices];
    let mut alive = vec![false; slices];
    for (i, v) in values.iter().enumerate() {
        let s = slice_of(i);
        norms[s] = if n.is_infinite() {
            norms[s].max(v.abs())
        } else {
            norms[s] + v.abs().powf(n)
        };
        alive[s] |= m[i] != 0.0;
    }
    let kept = alive.iter().filter(|&&a| a).count();
    let mut slice_mask: Vec<f64> = alive.iter().map(|&a| f64::from(u8::from(a))).collect();
    prune_smallest(&norms, &mut slice_mask, amount.count(OP, kept)?);
    for (i, x) in m.iter_mut().enumerate() {
        *x *= slice_mask[slice_of(i)];
    }
    mask_tensor(m, weight)
}
