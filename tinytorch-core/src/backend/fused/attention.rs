//! Fused scaled-dot-product attention: `Storage::attention_forward` / `attention_backward`
//! send it to the CPU's blocked kernel (`cpu/attention.rs`, f32 and f64; bf16 and f16
//! through it a group of heads at a time, `cpu/attention_half.rs`) or CUDA's
//! flash-attention kernels (`cuda/attention.rs`, every float dtype, head dims up to its
//! tiles). Operands are `(batch..., rows, features)` views read in place, features
//! contiguous; the mask is additive and of the query's dtype. Both keep each query row's
//! log-sum-exp for the backward.

use crate::backend::cpu::attention::{
    self as cpu, AttnDims, AttnInput, AttnMask, AttnOptions, Interleave,
};
use crate::backend::cpu::attention_half as cpu_half;
use crate::backend::cpu::float::KernelFloat;
use crate::backend::{CpuElement, Storage};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use half::{bf16, f16};

const OP: &str = "scaled_dot_product_attention";

/// The problem: `bh` (batch x heads) problems of `l` queries and `s` keys of `e` features,
/// values of `ev` features, and what the scores see besides `q k^T * scale`.
#[derive(Clone, Copy, Debug)]
pub struct AttnConfig {
    /// Number of problems (the product of the batch shape).
    pub bh: usize,
    /// Queries per problem.
    pub l: usize,
    /// Keys (and values) per problem.
    pub s: usize,
    /// Features of queries and keys.
    pub e: usize,
    /// Features of values.
    pub ev: usize,
    /// Multiplies `q . k`.
    pub scale: f64,
    /// Query `i` sees keys `j <= i` only.
    pub causal: bool,
    /// Probability of dropping an attention weight (0: no dropout).
    pub dropout: f64,
    /// Seed of the dropout mask: the same mask on every device for one seed.
    pub seed: u64,
    /// The layout asked of the output and of the query's, key's and value's gradients: the
    /// number of heads (the last batch dim) interleaved in each row, `(B, rows, H, f)`, or 1
    /// for contiguous `(bh, rows, f)`. A device may answer contiguous instead (the results
    /// say which they are).
    pub heads: [usize; 4],
}

/// A `(batch..., rows, cols)` operand: a buffer and the view of it that a kernel reads (the
/// batch dims broadcast to the problem's, the last dim contiguous or of size 1).
#[derive(Clone, Copy)]
pub struct AttnOperand<'a> {
    /// The buffer.
    pub storage: &'a Storage,
    /// Shape, strides and offset of the view.
    pub layout: &'a Layout,
}

/// What the forward kept for the backward: each query row's log-sum-exp, `(bh, l)`.
pub struct AttnSaved(Lse);

enum Lse {
    F32(Vec<f32>),
    F64(Vec<f64>),
    #[cfg(feature = "cuda")]
    Cuda(crate::backend::CudaStorage),
}

impl From<Vec<f32>> for Lse {
    fn from(v: Vec<f32>) -> Lse {
        Lse::F32(v)
    }
}

impl From<Vec<f64>> for Lse {
    fn from(v: Vec<f64>) -> Lse {
        Lse::F64(v)
    }
}

/// The gradients of the three operands, `(bh, l, e)`, `(bh, s, e)`, `(bh, s, ev)`.
pub struct AttnGrads {
    /// Of the queries.
    pub dq: Storage,
    /// Of the keys.
    pub dk: Storage,
    /// Of the values.
    pub dv: Storage,
    /// How each is laid out: the heads interleaved in a row (see [`AttnConfig::heads`]).
    pub heads: [usize; 3],
}

/// The forward's output `(bh, l, ev)`, with its layout (heads interleaved in a row, see
/// [`AttnConfig::heads`]), and what the backward needs.
pub struct AttnForward {
    /// The output.
    pub out: Storage,
    /// Its layout.
    pub heads: usize,
    /// What the backward needs.
    pub saved: AttnSaved,
}

impl Storage {
    /// `softmax(q k^T * scale + mask) v` per problem: the output `(bh, l, ev)` of the query's
    /// dtype, and what the backward needs. `Ok(None)` where the device has no kernel for
    /// this problem (a dtype, an empty dim or a head too wide).
    pub fn attention_forward(
        q: AttnOperand<'_>,
        k: AttnOperand<'_>,
        v: AttnOperand<'_>,
        mask: Option<AttnOperand<'_>>,
        c: &AttnConfig,
    ) -> Result<Option<AttnForward>> {
        match q.storage {
            Storage::Cpu(_) => {
                let nonempty = c.bh > 0 && c.l > 0 && c.s > 0 && c.e > 0 && c.ev > 0;
                match q.storage.dtype() {
                    _ if !nonempty => return Ok(None),
                    DType::F32 => cpu_forward([q, k, v], mask, c, float_forward::<f32>),
                    DType::F64 => cpu_forward([q, k, v], mask, c, float_forward::<f64>),
                    DType::BF16 => cpu_forward([q, k, v], mask, c, half_forward::<bf16>),
                    DType::F16 => cpu_forward([q, k, v], mask, c, half_forward::<f16>),
                    _ => return Ok(None),
                }
                .map(Some)
            }
            #[cfg(feature = "cuda")]
            Storage::Cuda(_) => {
                use crate::backend::cuda::attention as kernel;
                let batch_ndim = q.layout.ndim().saturating_sub(2);
                if !kernel::supports(q.storage.dtype(), c, batch_ndim) {
                    return Ok(None);
                }
                let (out, lse) = kernel::forward(
                    cuda_operand(q)?,
                    cuda_operand(k)?,
                    cuda_operand(v)?,
                    mask.map(cuda_operand).transpose()?,
                    c,
                )?;
                Ok(Some(AttnForward {
                    out: Storage::Cuda(out),
                    heads: 1,
                    saved: AttnSaved(Lse::Cuda(lse)),
                }))
            }
        }
    }

    /// The gradients of [`Storage::attention_forward`] from the output's gradient `dout`,
    /// given the forward's operands, its output and what it kept.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        [q, k, v]: [AttnOperand<'_>; 3],
        out: AttnOperand<'_>,
        dout: AttnOperand<'_>,
        mask: Option<AttnOperand<'_>>,
        saved: &AttnSaved,
        c: &AttnConfig,
    ) -> Result<AttnGrads> {
        match &saved.0 {
            Lse::F32(lse) => {
                let qkv = [q, k, v];
                match q.storage.dtype() {
                    DType::BF16 => {
                        cpu_backward(qkv, out, dout, mask, lse, c, cpu_half::backward::<bf16>)
                    }
                    DType::F16 => {
                        cpu_backward(qkv, out, dout, mask, lse, c, cpu_half::backward::<f16>)
                    }
                    _ => cpu_backward(qkv, out, dout, mask, lse, c, cpu::backward::<f32>),
                }
            }
            Lse::F64(lse) => cpu_backward([q, k, v], out, dout, mask, lse, c, cpu::backward::<f64>),
            #[cfg(feature = "cuda")]
            Lse::Cuda(lse) => {
                let (dq, dk, dv) = crate::backend::cuda::attention::backward(
                    cuda_operand(q)?,
                    cuda_operand(k)?,
                    cuda_operand(v)?,
                    cuda_operand(out)?,
                    lse,
                    cuda_operand(dout)?,
                    mask.map(cuda_operand).transpose()?,
                    c,
                )?;
                Ok(AttnGrads {
                    dq: Storage::Cuda(dq),
                    dk: Storage::Cuda(dk),
                    dv: Storage::Cuda(dv),
                    heads: [1; 3],
                })
            }
        }
    }
}

/// Where each of the `bh` problems of a `(batch..., n, f)` view starts in its buffer.
fn problem_bases(l: &Layout, bh: usize) -> Vec<usize> {
    let (shape, strides) = (l.shape(), l.strides());
    let nb = shape.len() - 2;
    (0..bh)
        .map(|b| {
            let (mut rem, mut off) = (b, l.offset());
            for dim in (0..nb).rev() {
                off += (rem % shape[dim]) * strides[dim];
                rem /= shape[dim];
            }
            off
        })
        .collect()
}

/// An operand as the CPU kernel reads it: its host buffer and where each problem starts.
struct HostOperand<'a, T> {
    data: &'a [T],
    base: Vec<usize>,
    row_stride: usize,
    col_stride: usize,
}

impl<'a, T: CpuElement> HostOperand<'a, T> {
    fn of(o: AttnOperand<'a>, bh: usize, what: &str) -> Result<Self> {
        let data = o
            .storage
            .as_cpu()
            .and_then(|s| s.as_slice::<T>())
            .ok_or_else(|| {
                Error::dtype(
                    OP,
                    format!(
                        "{what} must be a host buffer of {}, got {} on {}",
                        T::DTYPE,
                        o.storage.dtype(),
                        o.storage.device()
                    ),
                )
            })?;
        let (n, strides) = (o.layout.ndim(), o.layout.strides());
        Ok(HostOperand {
            data,
            base: problem_bases(o.layout, bh),
            row_stride: strides[n - 2],
            col_stride: strides[n - 1],
        })
    }

    fn input(&self) -> AttnInput<'_, T> {
        AttnInput {
            data: self.data,
            base: &self.base,
            row_stride: self.row_stride,
        }
    }

    fn mask(&self) -> AttnMask<'_, T> {
        AttnMask {
            data: self.data,
            base: &self.base,
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }
}

fn dims(c: &AttnConfig) -> AttnDims {
    AttnDims {
        bh: c.bh,
        l: c.l,
        s: c.s,
        e: c.e,
        ev: c.ev,
    }
}

fn options<'a, T>(c: &AttnConfig, mask: Option<&'a HostOperand<'a, T>>) -> AttnOptions<'a, T>
where
    T: CpuElement,
{
    AttnOptions {
        scale: c.scale,
        causal: c.causal,
        mask: mask.map(HostOperand::mask),
        dropout: c.dropout,
        seed: c.seed,
        first_problem: 0,
    }
}

fn host_operands<'a, T: CpuElement>(
    ops: &[AttnOperand<'a>],
    names: &[&str],
    bh: usize,
) -> Result<Vec<HostOperand<'a, T>>> {
    ops.iter()
        .zip(names)
        .map(|(&o, name)| HostOperand::of(o, bh, name))
        .collect()
}

/// An error unless every layout of `c.heads` splits the `bh` problems into whole rows.
fn check_heads(c: &AttnConfig) -> Result<()> {
    match c.heads.iter().find(|&&h| h == 0 || !c.bh.is_multiple_of(h)) {
        Some(h) => Err(Error::invalid(
            OP,
            format!("{} problems do not split into rows of {h} heads", c.bh),
        )),
        None => Ok(()),
    }
}

/// The kernels' `(output, log-sum-exp)` of a forward: `attention.rs`'s, or for half
/// operands `attention_half.rs`'s (an f32 log-sum-exp).
type ForwardKernel<T> =
    fn([AttnInput<T>; 3], AttnDims, &AttnOptions<T>, Interleave) -> (Vec<T>, Lse);

/// [`ForwardKernel`] of f32 and f64 operands.
fn float_forward<T: KernelFloat>(
    [q, k, v]: [AttnInput<T>; 3],
    d: AttnDims,
    o: &AttnOptions<T>,
    order: Interleave,
) -> (Vec<T>, Lse)
where
    Lse: From<Vec<T>>,
{
    let (out, lse) = cpu::forward(q, k, v, d, o, order);
    (out, lse.into())
}

/// [`ForwardKernel`] of bf16 and f16 operands, computed in f32 a group of heads at a time.
fn half_forward<H: CpuElement>(
    qkv: [AttnInput<H>; 3],
    d: AttnDims,
    o: &AttnOptions<H>,
    order: Interleave,
) -> (Vec<H>, Lse) {
    let (out, lse) = cpu_half::forward(qkv, d, o, order);
    (out, Lse::F32(lse))
}

fn cpu_forward<T: CpuElement>(
    qkv: [AttnOperand<'_>; 3],
    mask: Option<AttnOperand<'_>>,
    c: &AttnConfig,
    kernel: ForwardKernel<T>,
) -> Result<AttnForward> {
    check_heads(c)?;
    let h = host_operands::<T>(&qkv, &["query", "key", "value"], c.bh)?;
    let mask = mask
        .map(|m| HostOperand::of(m, c.bh, "attn_mask"))
        .transpose()?;
    let (out, lse) = kernel(
        [h[0].input(), h[1].input(), h[2].input()],
        dims(c),
        &options(c, mask.as_ref()),
        Interleave { heads: c.heads[0] },
    );
    Ok(AttnForward {
        out: super::host(out),
        heads: c.heads[0],
        saved: AttnSaved(lse),
    })
}

/// The kernels' `(dq, dk, dv)`: the operands, the output, the forward's log-sum-exp and the
/// output's gradient.
type BackwardKernel<T, L> = fn(
    [AttnInput<T>; 3],
    AttnInput<T>,
    &[L],
    AttnInput<T>,
    AttnDims,
    &AttnOptions<T>,
    [Interleave; 3],
) -> (Vec<T>, Vec<T>, Vec<T>);

fn cpu_backward<T: CpuElement, L>(
    qkv: [AttnOperand<'_>; 3],
    out: AttnOperand<'_>,
    dout: AttnOperand<'_>,
    mask: Option<AttnOperand<'_>>,
    lse: &[L],
    c: &AttnConfig,
    kernel: BackwardKernel<T, L>,
) -> Result<AttnGrads> {
    check_heads(c)?;
    let h = host_operands::<T>(&qkv, &["query", "key", "value"], c.bh)?;
    let g = HostOperand::<T>::of(dout, c.bh, "output gradient")?;
    let mask = mask
        .map(|m| HostOperand::of(m, c.bh, "attn_mask"))
        .transpose()?;
    let out = HostOperand::<T>::of(out, c.bh, "output")?;
    let [_, hq, hk, hv] = c.heads;
    let (dq, dk, dv) = kernel(
        [h[0].input(), h[1].input(), h[2].input()],
        out.input(),
        lse,
        g.input(),
        dims(c),
        &options(c, mask.as_ref()),
        [hq, hk, hv].map(|heads| Interleave { heads }),
    );
    Ok(AttnGrads {
        dq: super::host(dq),
        dk: super::host(dk),
        dv: super::host(dv),
        heads: [hq, hk, hv],
    })
}

/// The CUDA view of an operand; a device error for a host one.
#[cfg(feature = "cuda")]
fn cuda_operand(o: AttnOperand<'_>) -> Result<crate::backend::cuda::attention::Operand<'_>> {
    Ok(crate::backend::cuda::attention::Operand {
        storage: super::cuda_buffer(OP, o.storage)?,
        layout: o.layout,
    })
}
