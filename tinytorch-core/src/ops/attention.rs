//! `scaled_dot_product_attention` (`torch.nn.functional.scaled_dot_product_attention`):
//! `softmax(q k^T * scale + mask) v`, with a boolean or additive mask, the causal rule and
//! dropout on the weights. It runs the fused kernels of the query's device through
//! `Storage::attention_forward` (the CPU's blocked kernel and CUDA's flash-attention kernels:
//! memory linear in the sequence length, the same masks, the same dropout mask for a seed);
//! for empty problems, a mask that needs a gradient, or problems a device's kernels do not
//! take, the same maths composed of tensor ops.

use crate::autograd::needs_grad;
use crate::backend::{AttnConfig, AttnForward, AttnOperand, Storage};
use crate::error::{Error, Result};
use crate::ops::lock_storages;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Device, Layout, Tensor};

const OP: &str = "scaled_dot_product_attention";

/// Checked arguments: the broadcast batch shape and the problem sizes.
struct Plan {
    batch: Vec<usize>,
    dims: Dims,
    scale: f64,
}

/// `bh` (batch x heads) problems of `l` queries and `s` keys of `e` features, values of `ev`.
#[derive(Clone, Copy)]
struct Dims {
    bh: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

fn plan(q: &Tensor, k: &Tensor, v: &Tensor, scale: Option<f64>) -> Result<Plan> {
    for (name, t) in [("query", q), ("key", k), ("value", v)] {
        if t.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} must have at least 2 dims (..., length, features), got {:?}",
                    t.shape()
                ),
            ));
        }
        if !t.dtype().is_float() || t.dtype() != q.dtype() {
            return Err(Error::dtype(
                OP,
                format!(
                    "query, key and value must share a float dtype, got {}, {}, {}",
                    q.dtype(),
                    k.dtype(),
                    v.dtype()
                ),
            ));
        }
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let (l, e) = (qs[qs.len() - 2], qs[qs.len() - 1]);
    let (s, ek) = (ks[ks.len() - 2], ks[ks.len() - 1]);
    let (sv, ev) = (vs[vs.len() - 2], vs[vs.len() - 1]);
    if ek != e || sv != s {
        return Err(Error::shape(
            OP,
            format!("query {qs:?}, key {ks:?} and value {vs:?} do not fit: key needs query's feature size and value key's length"),
        ));
    }
    let batch = broadcast_shapes(OP, &qs[..qs.len() - 2], &ks[..ks.len() - 2])?;
    let batch = broadcast_shapes(OP, &batch, &vs[..vs.len() - 2])?;
    let bh = batch.iter().product();
    Ok(Plan {
        dims: Dims { bh, l, s, e, ev },
        scale: scale.unwrap_or(1.0 / (e as f64).sqrt()),
        batch,
    })
}

impl Tensor {
    /// Attention of queries `self` `(..., L, E)` over keys `(..., S, E)` and values
    /// `(..., S, Ev)` (batch dims broadcast): `softmax(q k^T * scale + mask) v` with `scale`
    /// defaulting to `1/sqrt(E)`. `attn_mask` broadcasts to `(..., L, S)`: bool (true = may
    /// attend) or additive floats of the query's dtype. `is_causal` lets query `i` see keys
    /// `j <= i` (no mask allowed with it). `dropout_p` zeroes attention weights with that
    /// probability (scaling the rest), as PyTorch does whenever it is non-zero. A query
    /// that may attend to no key gets zeros, as in PyTorch.
    pub fn scaled_dot_product_attention(
        &self,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let q = self;
        crate::ops::same_device(OP, &[q, key, value])?;
        let p = plan(q, key, value, scale)?;
        if !(0.0..1.0).contains(&dropout_p) {
            return Err(Error::invalid(
                OP,
                format!("dropout_p must be in [0, 1), got {dropout_p}"),
            ));
        }
        if is_causal && attn_mask.is_some() {
            return Err(Error::invalid(
                OP,
                "is_causal and attn_mask cannot both be given",
            ));
        }
        let mask = attn_mask
            .map(|m| additive_mask(m, q.dtype(), &p))
            .transpose()?;
        let seed = if dropout_p > 0.0 {
            Tensor::randint(0, i64::MAX, &[], Device::Cpu)?.item::<i64>()? as u64
        } else {
            0
        };
        // A mask that needs a gradient takes the composite path, whose graph provides it (as
        // does a mask on another device, whose error it reports).
        let mask_ok = mask
            .as_ref()
            .is_none_or(|m| !needs_grad(&[m]) && m.device() == q.device());
        if mask_ok {
            let c = Kind {
                causal: is_causal,
                dropout: dropout_p,
                seed,
            };
            if let Some(y) = fused(q, key, value, mask.as_ref(), c, &p)? {
                return Ok(y);
            }
            // Kernels that compute in f32 only (the CPU's) take half types widened, rounding
            // once at the end (the casts carry the gradients).
            if matches!(q.dtype(), DType::F16 | DType::BF16) {
                let up = |t: &Tensor| t.to_dtype(DType::F32);
                let m32 = mask.as_ref().map(up).transpose()?;
                if let Some(y) = fused(&up(q)?, &up(key)?, &up(value)?, m32.as_ref(), c, &p)? {
                    return y.to_dtype(q.dtype());
                }
            }
        }
        composite(q, key, value, mask.as_ref(), dropout_p, is_causal, &p)
    }
}

/// The mask as additive values of `dtype` broadcast to `(batch..., L, S)` (a bool mask
/// becomes 0 / -inf; a float mask keeps its gradient, as in PyTorch).
fn additive_mask(m: &Tensor, dtype: DType, p: &Plan) -> Result<Tensor> {
    let mut full = p.batch.clone();
    full.extend([p.dims.l, p.dims.s]);
    let add = match m.dtype() {
        DType::Bool => {
            let m = m.detach();
            let zero = Tensor::zeros(&[], dtype, m.device())?;
            let ninf = Tensor::full(&[], f64::NEG_INFINITY, dtype, m.device())?;
            Tensor::where_cond(&m, &zero, &ninf)?
        }
        dt if dt == dtype => m.clone(),
        dt => {
            return Err(Error::dtype(
                OP,
                format!("attn_mask must be bool or {dtype} like the query, got {dt}"),
            ))
        }
    };
    add.broadcast_to(&full).map_err(|_| {
        Error::shape(
            OP,
            format!(
                "attn_mask of shape {:?} does not broadcast to {full:?}",
                add.shape()
            ),
        )
    })
}

/// `q k^T * scale + mask`, with -inf where the causal rule forbids a key: the scores both the
/// composite attention and `MultiheadAttention`'s returned weights are softmaxes of.
pub(crate) fn masked_scores(
    q: &Tensor,
    k: &Tensor,
    mask: Option<&Tensor>,
    is_causal: bool,
    scale: f64,
) -> Result<Tensor> {
    let mut scores = q.matmul(&k.transpose(-2, -1)?)?.mul_scalar(scale)?;
    if let Some(m) = mask {
        scores = scores.add(m)?;
    }
    if is_causal {
        let (l, s) = (
            scores.shape()[scores.ndim() - 2],
            scores.shape()[scores.ndim() - 1],
        );
        let allowed = Tensor::ones(&[l, s], DType::Bool, q.device())?.tril(0)?;
        scores = scores.masked_fill(&allowed.logical_not()?, f64::NEG_INFINITY)?;
    }
    Ok(scores)
}

/// The same maths from tensor ops (any device; memory grows with L x S).
fn composite(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    p: &Plan,
) -> Result<Tensor> {
    let scores = masked_scores(q, k, mask, is_causal, p.scale)?;
    if p.dims.s == 0 {
        // No keys: the empty weights times the empty values are zeros (as in PyTorch).
        return scores.matmul(v);
    }
    // A row with no allowed key gives zeros (PyTorch's safe softmax), not NaN, and a zero
    // gradient: its scores are replaced before the softmax, whose backward would
    // otherwise meet the NaN weights of an all -inf row.
    let row_max = scores.detach().amax(&[-1], true)?;
    let empty = row_max.eq_scalar(f64::NEG_INFINITY)?;
    let safe = scores.masked_fill(&empty, 0.0)?;
    let mut w = safe.softmax(-1)?.masked_fill(&empty, 0.0)?;
    if dropout_p > 0.0 {
        w = super::dropout(&w, dropout_p, true)?;
    }
    w.matmul(v)
}

/// `t` (detached) broadcast to `(batch..., n, f)`, as the kernel reads it: a view when its
/// features are contiguous (the heads of a QKV projection, a KV cache's filled part), else
/// a contiguous copy.
fn operand_view(t: &Tensor, batch: &[usize]) -> Result<Tensor> {
    let (n, f) = (t.shape()[t.ndim() - 2], t.shape()[t.ndim() - 1]);
    let mut shape = batch.to_vec();
    shape.extend([n, f]);
    let t = t.detach();
    let t = if f == 1 || t.stride()[t.ndim() - 1] == 1 {
        t
    } else {
        t.contiguous()?
    };
    t.broadcast_to(&shape)
}

/// How many heads a result laid out like `view` (an operand view from [`operand_view`])
/// interleaves in each row: the last batch dim's size when that dim steps inside the rows
/// (`(B, L, H, E)` memory seen as `(B, H, L, E)`, as the heads of a QKV projection are), so
/// that the result's `transpose(-3, -2)` is contiguous as the operand's was; 1 (contiguous
/// `(bh, rows, f)`) otherwise.
fn interleaved_heads(view: &Tensor) -> usize {
    let (shape, strides) = (view.shape(), view.stride());
    let n = shape.len();
    if n < 3 || shape[n - 3] < 2 || shape[n - 2] < 2 {
        return 1;
    }
    let (head_stride, row_stride) = (strides[n - 3], strides[n - 2]);
    if head_stride != 0 && head_stride < row_stride {
        shape[n - 3]
    } else {
        1
    }
}

/// A kernel's result `(batch..., rows, f)` laid out with `heads` interleaved in each row (see
/// [`interleaved_heads`]) as a tensor.
fn result_tensor(data: Storage, batch: &[usize], rows: usize, f: usize, heads: usize) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([rows, f]);
    if heads == 1 {
        return Tensor::from_contiguous(data, &shape);
    }
    // Memory (outer..., rows, heads, f): strides from the innermost out.
    let n = shape.len();
    let mut strides = vec![0; n];
    strides[n - 1] = 1;
    strides[n - 3] = f;
    strides[n - 2] = heads * f;
    let mut step = rows * heads * f;
    for d in (0..n - 3).rev() {
        strides[d] = step;
        step *= shape[d];
    }
    Tensor::from_storage(data, Layout::from_parts(shape, strides, 0))
}

/// What the scores see besides the operands: the causal rule and dropout.
#[derive(Clone, Copy)]
struct Kind {
    causal: bool,
    dropout: f64,
    seed: u64,
}

/// The kernels' description of the problem; `views` are the operand views, whose layouts
/// the output's and the gradients' follow.
fn config(p: &Plan, kind: Kind, views: &[Tensor; 3]) -> AttnConfig {
    let (
        d,
        Kind {
            causal,
            dropout,
            seed,
        },
    ) = (p.dims, kind);
    let heads = views.each_ref().map(interleaved_heads);
    AttnConfig {
        bh: d.bh,
        l: d.l,
        s: d.s,
        e: d.e,
        ev: d.ev,
        scale: p.scale,
        causal,
        dropout,
        seed,
        heads: [heads[0], heads[0], heads[1], heads[2]],
    }
}

/// Run `f` on the kernel operands under `views` (from [`operand_view`]), read in place with
/// one lock per distinct storage.
fn with_operands<R>(views: &[&Tensor], f: impl FnOnce(&[AttnOperand<'_>]) -> R) -> R {
    let (guards, which) = lock_storages(views);
    let operands: Vec<AttnOperand<'_>> = views
        .iter()
        .zip(&which)
        .map(|(v, &g)| AttnOperand {
            storage: &guards[g],
            layout: v.layout(),
        })
        .collect();
    f(&operands)
}

/// Attention through the fused kernels of the query's device (`Storage::attention_forward`),
/// as one autograd op; `None` where that device has no kernel for the problem. The backward
/// reruns the kernels from the saved operand views, output and per-row log-sum-exp. `mask`
/// is the additive mask from [`additive_mask`], already known not to need a gradient.
fn fused(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    kind: Kind,
    p: &Plan,
) -> Result<Option<Tensor>> {
    let views = [
        operand_view(q, &p.batch)?,
        operand_view(k, &p.batch)?,
        operand_view(v, &p.batch)?,
    ];
    let c = &config(p, kind, &views);
    let mask = mask.map(|m| m.detach());
    let mut inputs: Vec<&Tensor> = views.iter().collect();
    inputs.extend(mask.as_ref());
    let fwd = with_operands(&inputs, |ops| {
        Storage::attention_forward(ops[0], ops[1], ops[2], ops.get(3).copied(), c)
    })?;
    let Some(AttnForward {
        out,
        heads,
        saved: lse,
    }) = fwd
    else {
        return Ok(None);
    };
    let result = result_tensor(out, &p.batch, c.l, c.ev, heads);
    if !needs_grad(&[q, k, v]) {
        return Ok(Some(result));
    }
    // The operands are saved as the views they are (no copies), the output as itself; the
    // log-sum-exp is internal (no handle escapes), so it needs no version check. An in-place
    // write to an operand, the output or the mask before the backward is an error, not a
    // wrong gradient.
    let saved = views.each_ref().map(|t| t.save(OP));
    let saved_out = result.save(OP);
    let saved_mask = mask.as_ref().map(|m| m.save(OP));
    let shapes = (q.shape().to_vec(), k.shape().to_vec(), v.shape().to_vec());
    let (batch, c) = (p.batch.clone(), *c);
    Ok(Some(result.record(OP, &[q, k, v], move |g, _| {
        let [qv, kv, vv] = [&saved[0].get()?, &saved[1].get()?, &saved[2].get()?];
        let out = &saved_out.get()?;
        let mask = saved_mask.as_ref().map(|m| m.get()).transpose()?;
        let g = operand_view(g, &batch)?;
        let mut inputs = vec![qv, kv, vv, out, &g];
        inputs.extend(mask.as_ref());
        let grads = with_operands(&inputs, |ops| {
            Storage::attention_backward(
                [ops[0], ops[1], ops[2]],
                ops[3],
                ops[4],
                ops.get(5).copied(),
                &lse,
                &c,
            )
        })?;
        let [hq, hk, hv] = grads.heads;
        let grad = |data: Storage, n: usize, f: usize, heads: usize, want: &[usize]| {
            // Reduce over the dims a broadcast input was expanded along.
            result_tensor(data, &batch, n, f, heads)
                .first_order_only(OP, &[&g, qv, kv, vv])
                .sum_to_shape(want)
        };
        Ok(vec![
            Some(grad(grads.dq, c.l, c.e, hq, &shapes.0)?),
            Some(grad(grads.dk, c.s, c.e, hk, &shapes.1)?),
            Some(grad(grads.dv, c.s, c.ev, hv, &shapes.2)?),
        ])
    })))
}
