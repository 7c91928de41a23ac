//! `scaled_dot_product_attention` (`torch.nn.functional.scaled_dot_product_attention`):
//! `softmax(q k^T * scale + mask) v`, with a boolean or additive mask, the causal rule and
//! dropout on the weights. On the CPU it runs the fused, blocked kernel of
//! `backend/cpu/attention.rs` (memory linear in the sequence length, forward and backward);
//! on CUDA the flash-attention kernels of `backend/cuda/attention.rs`, which take the same
//! masks and draw the same dropout mask for a seed; for empty problems, a mask that needs a
//! gradient, or head dims too wide for the CUDA kernels' tiles, the same maths composed of
//! tensor ops.

use crate::autograd::needs_grad;
use crate::backend::cpu::attention::{self, AttnDims, AttnFloat, AttnInput, AttnMask, AttnOptions};
#[cfg(feature = "cuda")]
use crate::backend::cuda::{attention as cuda_attention, CudaStorage};
use crate::backend::CpuElement;
use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Device, Tensor};
use std::sync::{Arc, RwLockReadGuard};

const OP: &str = "scaled_dot_product_attention";

/// Checked arguments: the broadcast batch shape and the problem sizes.
struct Plan {
    batch: Vec<usize>,
    dims: AttnDims,
    scale: f64,
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
        dims: AttnDims { bh, l, s, e, ev },
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
        let d = p.dims;
        let mask = attn_mask
            .map(|m| additive_mask(m, q.dtype(), &p))
            .transpose()?;
        let seed = if dropout_p > 0.0 {
            Tensor::randint(0, i64::MAX, &[], Device::Cpu)?.item::<i64>()? as u64
        } else {
            0
        };
        // A mask that needs a gradient takes the composite path, whose graph provides it.
        let mask_ok = !mask.as_ref().is_some_and(|m| needs_grad(&[m]));
        #[cfg(feature = "cuda")]
        if matches!(q.device(), Device::Cuda(_))
            && mask_ok
            && mask.as_ref().is_none_or(|m| m.device() == q.device())
            && cuda_attention::supports(
                q.dtype(),
                &cuda_config(&p, is_causal, dropout_p, seed),
                p.batch.len(),
            )
        {
            return fused_cuda(q, key, value, mask, dropout_p, seed, is_causal, &p);
        }
        let fused = q.device() == Device::Cpu
            && d.bh > 0
            && d.l > 0
            && d.s > 0
            && d.e > 0
            && d.ev > 0
            && mask_ok;
        if !fused {
            return composite(q, key, value, mask.as_ref(), dropout_p, is_causal, &p);
        }
        match q.dtype() {
            DType::F64 => fused_cpu::<f64>(q, key, value, mask, dropout_p, seed, is_causal, &p),
            DType::F32 => fused_cpu::<f32>(q, key, value, mask, dropout_p, seed, is_causal, &p),
            // Half types run in f32 and round once (the casts carry the gradients).
            half => {
                let up = |t: &Tensor| t.to_dtype(DType::F32);
                let m32 = mask.as_ref().map(up).transpose()?;
                fused_cpu::<f32>(
                    &up(q)?,
                    &up(key)?,
                    &up(value)?,
                    m32,
                    dropout_p,
                    seed,
                    is_causal,
                    &p,
                )?
                .to_dtype(half)
            }
        }
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

/// Where each of the `bh` problems of a `(batch..., n, f)` view starts in its buffer.
fn problem_bases(t: &Tensor, bh: usize) -> Vec<usize> {
    let (shape, strides) = (t.shape(), t.layout().strides());
    let nb = shape.len() - 2;
    (0..bh)
        .map(|b| {
            let (mut rem, mut off) = (b, t.layout().offset());
            for dim in (0..nb).rev() {
                off += (rem % shape[dim]) * strides[dim];
                rem /= shape[dim];
            }
            off
        })
        .collect()
}

/// Read guards on the distinct storages of `views` (q, k and v often share one: the fused
/// QKV projection) and, per view, the index of its guard. One lock per storage: a second
/// read lock on the same RwLock from one thread can deadlock.
fn lock_storages<'a>(views: &[&'a Tensor]) -> (Vec<RwLockReadGuard<'a, Storage>>, Vec<usize>) {
    let mut owners: Vec<&Tensor> = Vec::new();
    let mut which = Vec::new();
    for &v in views {
        match owners.iter().position(|o| o.shares_storage(v)) {
            Some(i) => which.push(i),
            None => {
                which.push(owners.len());
                owners.push(v);
            }
        }
    }
    (owners.iter().map(|o| o.storage()).collect(), which)
}

/// Run `f` on kernel operands reading `views` (from [`operand_view`]) in place.
fn with_operands<T: CpuElement, R>(
    views: &[&Tensor],
    bh: usize,
    f: impl FnOnce(&[AttnInput<T>]) -> R,
) -> Result<R> {
    let (guards, which) = lock_storages(views);
    let bases: Vec<Vec<usize>> = views.iter().map(|v| problem_bases(v, bh)).collect();
    let inputs = views
        .iter()
        .zip(&which)
        .zip(&bases)
        .map(|((v, &g), base)| {
            let data = guards[g]
                .as_cpu()
                .and_then(|s| s.as_slice::<T>())
                .ok_or_else(|| Error::dtype(OP, format!("expected CPU tensors of {}", T::DTYPE)))?;
            Ok(AttnInput {
                data,
                base,
                row_stride: v.stride()[v.ndim() - 2],
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(f(&inputs))
}

/// A mask's buffer (the storage under its broadcast view) and where each problem's
/// `(L, S)` slice starts in it.
struct MaskData<T> {
    data: Vec<T>,
    base: Vec<usize>,
    row_stride: usize,
    col_stride: usize,
}

impl<T: CpuElement> MaskData<T> {
    fn of(m: &Tensor, bh: usize) -> Result<Self> {
        let data = m
            .storage()
            .as_cpu()
            .and_then(|s| s.as_slice::<T>())
            .map(<[T]>::to_vec)
            .ok_or_else(|| {
                Error::dtype(OP, "attn_mask must be a CPU tensor of the query's dtype")
            })?;
        let strides = m.layout().strides();
        let nb = m.ndim() - 2;
        Ok(MaskData {
            data,
            base: problem_bases(m, bh),
            row_stride: strides[nb],
            col_stride: strides[nb + 1],
        })
    }
}

/// The scalar settings shared by forward and backward.
#[derive(Clone, Copy)]
struct Config {
    scale: f64,
    causal: bool,
    dropout: f64,
    seed: u64,
}

impl Config {
    fn options<'a, T>(&self, mask: &'a Option<MaskData<T>>) -> AttnOptions<'a, T> {
        AttnOptions {
            scale: self.scale,
            causal: self.causal,
            mask: mask.as_ref().map(|m| AttnMask {
                data: &m.data,
                base: &m.base,
                row_stride: m.row_stride,
                col_stride: m.col_stride,
            }),
            dropout: self.dropout,
            seed: self.seed,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fused_cpu<T: AttnFloat + CpuElement>(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<Tensor>,
    dropout: f64,
    seed: u64,
    causal: bool,
    p: &Plan,
) -> Result<Tensor> {
    let d = p.dims;
    let views = [
        operand_view(q, &p.batch)?,
        operand_view(k, &p.batch)?,
        operand_view(v, &p.batch)?,
    ];
    // The mask stays a broadcast view: one base offset per (batch, head) problem.
    let mask_data = mask.as_ref().map(|m| MaskData::of(m, d.bh)).transpose()?;
    let cfg = Config {
        scale: p.scale,
        causal,
        dropout,
        seed,
    };
    let (out, lse) = with_operands::<T, _>(&[&views[0], &views[1], &views[2]], d.bh, |ops| {
        attention::forward(ops[0], ops[1], ops[2], d, &cfg.options(&mask_data))
    })?;
    let mut out_shape = p.batch.clone();
    out_shape.extend([d.l, d.ev]);
    let result = Tensor::from_vec(out, &out_shape)?;
    if !needs_grad(&[q, k, v]) {
        return Ok(result);
    }
    // The operands are saved as the views they are (no copies), the output as itself.
    let saved = views.each_ref().map(|t| t.save(OP));
    let saved_out = result.save(OP);
    let lse = Arc::new((lse, mask_data));
    let shapes = (q.shape().to_vec(), k.shape().to_vec(), v.shape().to_vec());
    let batch = p.batch.clone();
    Ok(result.record(OP, &[q, k, v], move |g, _| {
        let (lse, mask_data) = &*lse;
        let [qv, kv, vv] = [saved[0].get()?, saved[1].get()?, saved[2].get()?];
        let out = saved_out.get()?;
        let g = operand_view(g, &batch)?;
        let (dq, dk, dv) = with_operands::<T, _>(&[qv, kv, vv, &g, out], d.bh, |ops| {
            // `out` is contiguous (made just above): its whole buffer in problem order.
            let out_data = &ops[4].data[ops[4].base[0]..];
            attention::backward(
                [ops[0], ops[1], ops[2]],
                &out_data[..d.bh * d.l * d.ev],
                lse,
                ops[3],
                d,
                &cfg.options(mask_data),
            )
        })?;
        let grad = |data: Vec<T>, n: usize, f: usize, want: &[usize]| -> Result<Tensor> {
            let mut shape = batch.clone();
            shape.extend([n, f]);
            // Reduce over the dims a broadcast input was expanded along.
            Tensor::from_vec(data, &shape)?.sum_to_shape(want)
        };
        Ok(vec![
            Some(grad(dq, d.l, d.e, &shapes.0)?),
            Some(grad(dk, d.s, d.e, &shapes.1)?),
            Some(grad(dv, d.s, d.ev, &shapes.2)?),
        ])
    }))
}

/// The CUDA kernels' description of the problem.
#[cfg(feature = "cuda")]
fn cuda_config(p: &Plan, causal: bool, dropout: f64, seed: u64) -> cuda_attention::AttnConfig {
    let d = p.dims;
    cuda_attention::AttnConfig {
        bh: d.bh,
        l: d.l,
        s: d.s,
        e: d.e,
        ev: d.ev,
        scale: p.scale,
        causal,
        dropout,
        seed,
    }
}

/// Run `f` on the CUDA buffers under `views`, read in place (one lock per distinct storage,
/// as [`with_operands`] takes them).
#[cfg(feature = "cuda")]
fn with_cuda_operands<R>(
    views: &[&Tensor],
    f: impl FnOnce(&[cuda_attention::Operand]) -> Result<R>,
) -> Result<R> {
    let (guards, which) = lock_storages(views);
    let operands = views
        .iter()
        .zip(&which)
        .map(|(v, &g)| match &*guards[g] {
            Storage::Cuda(storage) => Ok(cuda_attention::Operand {
                storage,
                layout: v.layout(),
            }),
            Storage::Cpu(_) => Err(Error::Device {
                op: OP,
                lhs: views[0].device(),
                rhs: v.device(),
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    f(&operands)
}

/// [`fused_cpu`]'s CUDA twin: the flash-attention kernels read the operand views in place
/// (any dtype: half types compute in f32 inside the kernels); the backward reruns them from
/// the saved operands, output and per-row log-sum-exp. `mask` is the additive mask from
/// [`additive_mask`], already known not to need a gradient.
#[cfg(feature = "cuda")]
#[allow(clippy::too_many_arguments)]
fn fused_cuda(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<Tensor>,
    dropout: f64,
    seed: u64,
    causal: bool,
    p: &Plan,
) -> Result<Tensor> {
    let d = p.dims;
    let cfg = cuda_config(p, causal, dropout, seed);
    let views = [
        operand_view(q, &p.batch)?,
        operand_view(k, &p.batch)?,
        operand_view(v, &p.batch)?,
    ];
    let mask = mask.map(|m| m.detach());
    let mut inputs: Vec<&Tensor> = views.iter().collect();
    inputs.extend(mask.as_ref());
    let (out, lse) = with_cuda_operands(&inputs, |ops| {
        cuda_attention::forward(ops[0], ops[1], ops[2], ops.get(3).copied(), &cfg)
    })?;
    let mut out_shape = p.batch.clone();
    out_shape.extend([d.l, d.ev]);
    let result = Tensor::from_contiguous(Storage::Cuda(out), &out_shape);
    if !needs_grad(&[q, k, v]) {
        return Ok(result);
    }
    // The per-row log-sum-exp is internal (no handle escapes), so it needs no version check;
    // the operands, the output and the mask are saved, so an in-place write before the
    // backward is an error, not a wrong gradient.
    let lse = Tensor::from_contiguous(Storage::Cuda(lse), &[d.bh, d.l]);
    let saved = views.each_ref().map(|t| t.save(OP));
    let saved_out = result.save(OP);
    let saved_mask = mask.as_ref().map(|m| m.save(OP));
    let shapes = (q.shape().to_vec(), k.shape().to_vec(), v.shape().to_vec());
    let batch = p.batch.clone();
    Ok(result.record(OP, &[q, k, v], move |g, _| {
        let [qv, kv, vv] = [saved[0].get()?, saved[1].get()?, saved[2].get()?];
        let out = saved_out.get()?;
        let mask = saved_mask.as_ref().map(|m| m.get()).transpose()?;
        let g = operand_view(g, &batch)?;
        let mut inputs = vec![qv, kv, vv, out, &g, &lse];
        inputs.extend(mask);
        let (dq, dk, dv) = with_cuda_operands(&inputs, |ops| {
            cuda_attention::backward(
                ops[0],
                ops[1],
                ops[2],
                ops[3],
                ops[5].storage,
                ops[4],
                ops.get(6).copied(),
                &cfg,
            )
        })?;
        let grad = |data: CudaStorage, n: usize, f: usize, want: &[usize]| -> Result<Tensor> {
            let mut shape = batch.clone();
            shape.extend([n, f]);
            // Reduce over the dims a broadcast input was expanded along.
            Tensor::from_contiguous(Storage::Cuda(data), &shape).sum_to_shape(want)
        };
        Ok(vec![
            Some(grad(dq, d.l, d.e, &shapes.0)?),
            Some(grad(dk, d.s, d.e, &shapes.1)?),
            Some(grad(dv, d.s, d.ev, &shapes.2)?),
        ])
    }))
}
