//! Fused LayerNorm and RMSNorm on CUDA (kernels/norm.cu): the CPU kernel's maths
//! (`backend/cpu/norm.rs`) with one thread block per row. The forward saves each row's mean
//! and rstd; the backward computes dx per row and dweight / dbias as column sums over chunks
//! of rows, added up by the reduction kernel. f32 and f64 only: the op layer
//! (`ops/norm/`) widens half types to f32 first, exactly as for the CPU kernel.
//!
//! Inputs are contiguous buffers given as (storage, element offset); outputs are new
//! contiguous buffers.

use super::launch::{launch, row_grid, BLOCK};
use super::op_codes::norm;
use super::{reduce, suffix, CudaStorage};
use crate::backend::ReduceOp;
use crate::backend::{NormKind, NormWanted};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

const MODULE: &str = "norm";
/// Most row chunks of the dweight / dbias partial sums (bounds the partial buffers).
const MAX_CHUNKS: usize = 1024;
/// Fewest rows per chunk (below that a chunk is not worth its partial row).
const MIN_ROWS_PER_CHUNK: usize = 64;

/// A contiguous input: the buffer and the element where the tensor starts.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// The buffer.
    pub storage: &'a CudaStorage,
    /// Offset of the first element, in elements.
    pub offset: usize,
}

impl Input<'_> {
    /// The device address of the first element.
    fn ptr(&self) -> u64 {
        self.storage.ptr_at(self.offset)
    }
}

/// The device address of an optional input (null when absent, as the kernels expect).
fn opt_ptr(x: Option<Input>) -> u64 {
    x.map_or(0, |x| x.ptr())
}

fn kind_code(kind: NormKind) -> i32 {
    match kind {
        NormKind::Layer => norm::LAYER,
        NormKind::Rms => norm::RMS,
    }
}

/// Every operand has the dtype of `x` (f32 or f64) and holds the elements it is read at.
fn check(op: &'static str, x: Input, others: &[(&str, Option<Input>, usize)]) -> Result<()> {
    let dtype = x.storage.dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::unsupported_dtype(op, dtype));
    }
    for (name, t, len) in others {
        let Some(t) = t else { continue };
        if t.storage.dtype != dtype {
            return Err(Error::dtype(
                op,
                format!("{name} is {} but the input is {dtype}", t.storage.dtype),
            ));
        }
        if t.offset + len > t.storage.len {
            return Err(Error::shape(
                op,
                format!(
                    "{name} needs {len} elements from offset {} but its buffer holds {}",
                    t.offset, t.storage.len
                ),
            ));
        }
    }
    Ok(())
}

/// Forward over `rows` rows of `n` elements: `(out, mean, rstd)`, with `out` `(rows, n)` and
/// the statistics `(rows)` (mean 0 for RMSNorm), all of x's dtype.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    op: &'static str,
    x: Input,
    rows: usize,
    n: usize,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
    kind: NormKind,
) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
    check(
        op,
        x,
        &[
            ("input", Some(x), rows * n),
            ("weight", weight, n),
            ("bias", bias, n),
        ],
    )?;
    let (s, dtype) = (x.storage, x.storage.dtype);
    let out = s.alloc_like(dtype, rows * n)?;
    let mean = s.alloc_like(dtype, rows)?;
    let rstd = s.alloc_like(dtype, rows)?;
    if rows > 0 && n > 0 {
        launch!(
            &s.dev,
            MODULE,
            format!("norm_fwd_{}", suffix(dtype)),
            row_grid(rows),
            rows as i64,
            n as i64,
            kind_code(kind),
            eps,
            x.ptr(),
            opt_ptr(weight),
            opt_ptr(bias),
            out.ptr(),
            mean.ptr(),
            rstd.ptr()
        );
    }
    Ok((out, mean, rstd))
}

/// The gradients the backward returns (each `None` when not asked for).
pub struct NormGrads {
    /// `(rows, n)`.
    pub dx: Option<CudaStorage>,
    /// `(n)`.
    pub dweight: Option<CudaStorage>,
    /// `(n)`.
    pub dbias: Option<CudaStorage>,
}

/// Backward from the upstream gradient `g` `(rows, n)`, with the forward's input, weight and
/// statistics (contiguous buffers of x's dtype).
#[allow(clippy::too_many_arguments)]
pub fn backward(
    op: &'static str,
    x: Input,
    g: Input,
    rows: usize,
    n: usize,
    weight: Option<Input>,
    mean: &CudaStorage,
    rstd: &CudaStorage,
    kind: NormKind,
    want: NormWanted,
) -> Result<NormGrads> {
    let stat = |s| Input {
        storage: s,
        offset: 0,
    };
    check(
        op,
        x,
        &[
            ("input", Some(x), rows * n),
            ("gradient", Some(g), rows * n),
            ("weight", weight, n),
            ("mean", Some(stat(mean)), rows),
            ("rstd", Some(stat(rstd)), rows),
        ],
    )?;
    let (s, dtype) = (x.storage, x.storage.dtype);
    let empty = rows == 0 || n == 0;
    let dx = if want.x {
        let dx = s.alloc_like(dtype, rows * n)?;
        if !empty {
            launch!(
                &s.dev,
                MODULE,
                format!("norm_bwd_dx_{}", suffix(dtype)),
                row_grid(rows),
                rows as i64,
                n as i64,
                kind_code(kind),
                x.ptr(),
                g.ptr(),
                opt_ptr(weight),
                mean.ptr(),
                rstd.ptr(),
                dx.ptr()
            );
        }
        Some(dx)
    } else {
        None
    };
    let (dweight, dbias) = if (want.weight || want.bias) && !empty {
        // Partial sums per chunk of rows, then the sum over the chunks.
        let per_chunk = rows.div_ceil(MAX_CHUNKS).max(MIN_ROWS_PER_CHUNK);
        let chunks = rows.div_ceil(per_chunk);
        let part = |wanted: bool| -> Result<Option<CudaStorage>> {
            wanted.then(|| s.alloc_like(dtype, chunks * n)).transpose()
        };
        let (dw_part, db_part) = (part(want.weight)?, part(want.bias)?);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(32) as u32, chunks as u32, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            &s.dev,
            MODULE,
            format!("norm_param_grads_{}", suffix(dtype)),
            cfg,
            rows as i64,
            n as i64,
            per_chunk as i64,
            x.ptr(),
            g.ptr(),
            mean.ptr(),
            rstd.ptr(),
            dw_part.as_ref().map_or(0, CudaStorage::ptr),
            db_part.as_ref().map_or(0, CudaStorage::ptr)
        );
        let total = |p: Option<CudaStorage>| -> Result<Option<CudaStorage>> {
            match p {
                Some(p) if chunks > 1 => Ok(Some(reduce::reduce(
                    &p,
                    &Layout::contiguous(&[chunks, n]),
                    ReduceOp::Sum,
                    &[0],
                )?)),
                p => Ok(p),
            }
        };
        (total(dw_part)?, total(db_part)?)
    } else {
        // No rows: the sums are zero.
        let zeros = |wanted: bool| -> Result<Option<CudaStorage>> {
            wanted
                .then(|| CudaStorage::zeros(s.dev.ordinal(), dtype, n))
                .transpose()
        };
        (zeros(want.weight)?, zeros(want.bias)?)
    };
    Ok(NormGrads { dx, dweight, dbias })
}
