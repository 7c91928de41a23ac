//! Fused scaled-dot-product attention on CUDA (kernels/attention.cu), FlashAttention-2
//! style: the forward tiles over keys with an online softmax and keeps each query row's
//! log-sum-exp; the backward computes `D = rowsum(dO * O)`, then dK/dV in one pass over key
//! tiles and dQ in a second pass over query tiles, recomputing the probabilities from the
//! log-sum-exp. Memory is linear in the sequence lengths, as in the CPU kernel
//! (`backend/cpu/attention.rs`), whose masking rules and dropout mask it reproduces.
//!
//! Operands are `(batch..., rows, cols)` views of one batch shape (the op layer broadcasts
//! them), read in place with any strides; outputs are contiguous `(BH, rows, cols)`. The op
//! layer (`ops/attention.rs`) asks [`supports`] first and takes the composite path otherwise.
//!
//! These kernels are compiled by NVRTC in CI (tests/cuda_kernels_compile.rs); the GPU tests
//! comparing them with the CPU kernel are in tests/cuda_attention.rs.

use super::launch::{grid_groups, launch, KShape, KStrides, MAX_DIMS};
use super::{suffix, CudaStorage};
use crate::backend::AttnConfig;
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::driver::{DeviceRepr, LaunchConfig};

const MODULE: &str = "attention";
const OP: &str = "scaled_dot_product_attention";
/// Threads per block of the tiled kernels (4 warps; the softmax gives each warp rows).
const THREADS: u32 = 128;
/// Shared memory a block may use without opting in to more (every GPU since Kepler).
const MAX_SHARED_BYTES: usize = 48 * 1024;
/// Tile sizes tried, largest first: the first whose tiles fit in shared memory is used.
const TILES: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// A `(batch..., rows, cols)` operand: a buffer and the view of it that the kernels read.
#[derive(Clone, Copy)]
pub struct Operand<'a> {
    /// The buffer.
    pub storage: &'a CudaStorage,
    /// Shape, strides and offset of the view.
    pub layout: &'a Layout,
}

/// `struct AttnParams` of attention.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct KParams {
    bh: i64,
    l: i64,
    s: i64,
    e: i64,
    ev: i64,
    bq: i64,
    bk: i64,
    scale: f64,
    dropout: f64,
    seed: u64,
    causal: i64,
    has_mask: i64,
}

/// `struct AttnOperand` of attention.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct KOperand {
    batch: KStrides,
    row: i64,
    col: i64,
}

// SAFETY: `repr(C)` structs of 8-byte integers and floats (KStrides likewise), laid out as
// their C twins (no padding on either side).
unsafe impl DeviceRepr for KParams {}
unsafe impl DeviceRepr for KOperand {}

/// The three tiled kernels, each with its own shared-memory layout.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    Forward,
    KeyValue,
    Query,
}

/// Elements of the compute type a block of `kernel` keeps in shared memory with square
/// tiles of `t` rows: the layouts written out at the top of each kernel in attention.cu.
fn shared_elems(kernel: Kernel, t: usize, e: usize, ev: usize) -> usize {
    let (bq, bk) = (t, t);
    match kernel {
        // Q [bq][e], K [bk][e+1], V [bk][ev], scores [bq][bk], acc [bq][ev], 3 x [bq].
        Kernel::Forward => bq * e + bk * (e + 1) + bk * ev + bq * bk + bq * ev + 3 * bq,
        // K [bk][e+1], V [bk][ev+1], dK [bk][e], dV [bk][ev], Q [bq][e], dO [bq][ev],
        // P' and dS [bq][bk], L and D [bq].
        Kernel::KeyValue => {
            bk * ((e + 1) + (ev + 1) + e + ev) + bq * e + bq * ev + 2 * bq * bk + 2 * bq
        }
        // Q [bq][e], dO [bq][ev], dQ [bq][e], K [bk][e+1], V [bk][ev+1], dS [bq][bk],
        // L and D [bq].
        Kernel::Query => bq * (2 * e + ev) + bk * ((e + 1) + (ev + 1)) + bq * bk + 2 * bq,
    }
}

/// The compute (and log-sum-exp) dtype: f64 for f64, f32 for the other float types.
fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// The largest tile whose shared memory fits, for `kernel` on operands of `dtype`.
fn tile(kernel: Kernel, dtype: DType, e: usize, ev: usize) -> Option<usize> {
    let size = acc_dtype(dtype).size_in_bytes();
    TILES
        .into_iter()
        .find(|&t| shared_elems(kernel, t, e, ev) * size <= MAX_SHARED_BYTES)
}

/// Launch geometry: `blocks` blocks of [`THREADS`] with `kernel`'s shared memory for tile `t`.
fn config(kernel: Kernel, blocks: usize, t: usize, dtype: DType, c: &AttnConfig) -> LaunchConfig {
    let bytes = shared_elems(kernel, t, c.e, c.ev) * acc_dtype(dtype).size_in_bytes();
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: bytes as u32,
    }
}

/// True when the fused kernels take this problem: a float dtype, no empty dimension, at most
/// `MAX_DIMS` batch dims, head dims small enough for a tile of one row in 48 KiB of shared
/// memory (up to about 2000 features in f32, 1000 in f64), and a grid that fits the launch
/// limits. Otherwise the op layer composes tensor ops.
pub fn supports(dtype: DType, c: &AttnConfig, batch_ndim: usize) -> bool {
    let kernels = [Kernel::Forward, Kernel::KeyValue, Kernel::Query];
    let nonempty = c.bh > 0 && c.l > 0 && c.s > 0 && c.e > 0 && c.ev > 0;
    nonempty
        && dtype.is_float()
        && batch_ndim <= MAX_DIMS
        && kernels.iter().all(|&k| {
            tile(k, dtype, c.e, c.ev).is_some_and(|t| {
                // One block per (problem, tile) along grid x (at most 2^31 - 1).
                let rows = if matches!(k, Kernel::KeyValue) {
                    c.s
                } else {
                    c.l
                };
                c.bh.checked_mul(rows.div_ceil(t))
                    .is_some_and(|b| b <= i32::MAX as usize)
            })
        })
}

/// The kernel parameters for tile `t`.
fn params(c: &AttnConfig, t: usize, has_mask: bool) -> KParams {
    KParams {
        bh: c.bh as i64,
        l: c.l as i64,
        s: c.s as i64,
        e: c.e as i64,
        ev: c.ev as i64,
        bq: t as i64,
        bk: t as i64,
        scale: c.scale,
        dropout: c.dropout,
        seed: c.seed,
        causal: c.causal as i64,
        has_mask: has_mask as i64,
    }
}

/// The batch shape shared by all operands: the query's leading dims, which must number
/// `c.bh` problems.
fn batch_shape<'a>(q: &Operand<'a>, c: &AttnConfig) -> Result<&'a [usize]> {
    let shape = q.layout.shape();
    if shape.len() < 2 || shape.len() - 2 > MAX_DIMS {
        return Err(Error::shape(
            OP,
            format!(
                "the CUDA kernel takes queries of 2 to {} dims, got {shape:?}",
                MAX_DIMS + 2
            ),
        ));
    }
    let batch = &shape[..shape.len() - 2];
    if batch.iter().product::<usize>() != c.bh {
        return Err(Error::shape(
            OP,
            format!(
                "query {shape:?} does not hold {} problems of {} x {}",
                c.bh, c.l, c.e
            ),
        ));
    }
    Ok(batch)
}

/// The kernel's view of operand `name`: it must be `(batch..., rows, cols)` of `dtype`.
fn operand(
    name: &str,
    o: &Operand,
    dtype: DType,
    batch: &[usize],
    rows: usize,
    cols: usize,
) -> Result<KOperand> {
    if o.storage.dtype != dtype {
        return Err(Error::dtype(
            OP,
            format!(
                "{name} is {} but the query is {dtype} (the CUDA kernel needs one dtype)",
                o.storage.dtype
            ),
        ));
    }
    let (shape, strides) = (o.layout.shape(), o.layout.strides());
    let nb = batch.len();
    if shape.len() != nb + 2 || shape[..nb] != *batch || shape[nb] != rows || shape[nb + 1] != cols
    {
        let mut want = batch.to_vec();
        want.extend([rows, cols]);
        return Err(Error::shape(
            OP,
            format!("{name} has shape {shape:?}, the CUDA kernel expects {want:?}"),
        ));
    }
    Ok(KOperand {
        batch: KStrides::new(OP, &strides[..nb], o.layout.offset())?,
        row: strides[nb] as i64,
        col: strides[nb + 1] as i64,
    })
}

/// The error for a problem [`supports`] refuses (the op layer never sends one).
fn unsupported(c: &AttnConfig, dtype: DType) -> Error {
    Error::NotImplemented {
        op: OP,
        what: format!(
            "the CUDA kernel with {dtype} query/key heads of {} and value heads of {} \
             features (too wide for its shared-memory tiles), an empty problem or too many \
             blocks: {c:?}",
            c.e, c.ev
        ),
    }
}

/// Forward: the output `(BH, L, Ev)` in the query's dtype and each row's log-sum-exp
/// `(BH, L)` (f32, or f64 for f64 inputs; -inf for a row that sees no key, whose output is
/// 0). `q`: `(batch..., L, E)`, `k`: `(batch..., S, E)`, `v`: `(batch..., S, Ev)`, `mask`:
/// additive, `(batch..., L, S)` of the query's dtype.
pub fn forward(
    q: Operand,
    k: Operand,
    v: Operand,
    mask: Option<Operand>,
    c: &AttnConfig,
) -> Result<(CudaStorage, CudaStorage)> {
    let dtype = q.storage.dtype;
    if !supports(dtype, c, q.layout.ndim().saturating_sub(2)) {
        return Err(unsupported(c, dtype));
    }
    let batch = batch_shape(&q, c)?;
    let qo = operand("query", &q, dtype, batch, c.l, c.e)?;
    let ko = operand("key", &k, dtype, batch, c.s, c.e)?;
    let vo = operand("value", &v, dtype, batch, c.s, c.ev)?;
    let mo = mask
        .map(|m| operand("attn_mask", &m, dtype, batch, c.l, c.s))
        .transpose()?;
    let t = tile(Kernel::Forward, dtype, c.e, c.ev).ok_or_else(|| unsupported(c, dtype))?;
    let out = q.storage.alloc_like(dtype, c.bh * c.l * c.ev)?;
    let lse = q.storage.alloc_like(acc_dtype(dtype), c.bh * c.l)?;
    let cfg = config(Kernel::Forward, c.bh * c.l.div_ceil(t), t, dtype, c);
    launch!(
        &q.storage.dev,
        MODULE,
        format!("attn_fwd_{}", suffix(dtype)),
        cfg,
        params(c, t, mask.is_some()),
        KShape::new(OP, batch)?,
        qo,
        ko,
        vo,
        mo.unwrap_or_default(),
        q.storage.ptr(),
        k.storage.ptr(),
        v.storage.ptr(),
        mask.map_or(0, |m| m.storage.ptr()),
        out.ptr(),
        lse.ptr()
    );
    Ok((out, lse))
}

/// Backward: the gradients `(dq, dk, dv)` as contiguous `(BH, L, E)`, `(BH, S, E)` and
/// `(BH, S, Ev)` buffers of the query's dtype, from the forward's operands, its output
/// `out` `(batch..., L, Ev)`, its log-sum-exp `lse` and the output's gradient `dout`
/// `(batch..., L, Ev)`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    q: Operand,
    k: Operand,
    v: Operand,
    out: Operand,
    lse: &CudaStorage,
    dout: Operand,
    mask: Option<Operand>,
    c: &AttnConfig,
) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
    let dtype = q.storage.dtype;
    if !supports(dtype, c, q.layout.ndim().saturating_sub(2)) {
        return Err(unsupported(c, dtype));
    }
    let batch = batch_shape(&q, c)?;
    let qo = operand("query", &q, dtype, batch, c.l, c.e)?;
    let ko = operand("key", &k, dtype, batch, c.s, c.e)?;
    let vo = operand("value", &v, dtype, batch, c.s, c.ev)?;
    let oo = operand("output", &out, dtype, batch, c.l, c.ev)?;
    let go = operand("output gradient", &dout, dtype, batch, c.l, c.ev)?;
    let mo = mask
        .map(|m| operand("attn_mask", &m, dtype, batch, c.l, c.s))
        .transpose()?
        .unwrap_or_default();
    let acc = acc_dtype(dtype);
    if lse.dtype != acc || lse.len < c.bh * c.l {
        return Err(Error::shape(
            OP,
            format!(
                "the saved log-sum-exp holds {} x {} values, expected {} x {acc}",
                lse.len,
                lse.dtype,
                c.bh * c.l
            ),
        ));
    }
    let bs = KShape::new(OP, batch)?;
    let mask_ptr = mask.map_or(0, |m| m.storage.ptr());
    let dev = &q.storage.dev;
    let name = |kernel: &str| format!("attn_bwd_{kernel}_{}", suffix(dtype));

    // D = rowsum(dO * O), one warp per row.
    let delta = q.storage.alloc_like(acc, c.bh * c.l)?;
    launch!(
        dev,
        MODULE,
        name("delta"),
        grid_groups(c.bh * c.l, 32),
        params(c, 1, mask.is_some()),
        bs,
        oo,
        go,
        out.storage.ptr(),
        dout.storage.ptr(),
        delta.ptr()
    );

    // dK and dV: one block per (problem, key tile).
    let t = tile(Kernel::KeyValue, dtype, c.e, c.ev).ok_or_else(|| unsupported(c, dtype))?;
    let dk = q.storage.alloc_like(dtype, c.bh * c.s * c.e)?;
    let dv = q.storage.alloc_like(dtype, c.bh * c.s * c.ev)?;
    launch!(
        dev,
        MODULE,
        name("kv"),
        config(Kernel::KeyValue, c.bh * c.s.div_ceil(t), t, dtype, c),
        params(c, t, mask.is_some()),
        bs,
        qo,
        ko,
        vo,
        go,
        mo,
        q.storage.ptr(),
        k.storage.ptr(),
        v.storage.ptr(),
        dout.storage.ptr(),
        mask_ptr,
        lse.ptr(),
        delta.ptr(),
        dk.ptr(),
        dv.ptr()
    );

    // dQ: one block per (problem, query tile).
    let t = tile(Kernel::Query, dtype, c.e, c.ev).ok_or_else(|| unsupported(c, dtype))?;
    let dq = q.storage.alloc_like(dtype, c.bh * c.l * c.e)?;
    launch!(
        dev,
        MODULE,
        name("q"),
        config(Kernel::Query, c.bh * c.l.div_ceil(t), t, dtype, c),
        params(c, t, mask.is_some()),
        bs,
        qo,
        ko,
        vo,
        go,
        mo,
        q.storage.ptr(),
        k.storage.ptr(),
        v.storage.ptr(),
        dout.storage.ptr(),
        mask_ptr,
        lse.ptr(),
        delta.ptr(),
        dq.ptr()
    );
    Ok((dq, dk, dv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_fit_in_shared_memory() {
        // Head dim 64 in f32 gets 32-row tiles, 128 gets 16 (forward); f64 halves them.
        assert_eq!(tile(Kernel::Forward, DType::F32, 64, 64), Some(32));
        assert_eq!(tile(Kernel::Forward, DType::F32, 128, 128), Some(16));
        assert_eq!(tile(Kernel::Forward, DType::F64, 128, 128), Some(8));
        for k in [Kernel::Forward, Kernel::KeyValue, Kernel::Query] {
            for dt in [DType::F32, DType::F64, DType::F16] {
                for e in [1, 3, 63, 64, 65, 128, 255] {
                    let t = tile(k, dt, e, e).unwrap();
                    let bytes = shared_elems(k, t, e, e) * acc_dtype(dt).size_in_bytes();
                    assert!(bytes <= MAX_SHARED_BYTES, "{k:?} {dt} {e}: {bytes}");
                }
            }
        }
        // Far too wide for one row in 48 KiB: the op layer composes tensor ops instead.
        let c = AttnConfig {
            bh: 1,
            l: 4,
            s: 4,
            e: 4096,
            ev: 4096,
            scale: 1.0,
            causal: false,
            dropout: 0.0,
            seed: 0,
            heads: [1; 4],
        };
        assert!(!supports(DType::F64, &c, 0));
        assert!(supports(DType::F32, &AttnConfig { e: 64, ev: 64, ..c }, 2));
        assert!(!supports(
            DType::F32,
            &AttnConfig {
                e: 64,
                ev: 64,
                l: 0,
                ..c
            },
            2
        ));
    }
}
