//! Fused cross-entropy on CUDA (kernels/cross_entropy.cu): the CPU kernel's maths
//! (`backend/cpu/cross_entropy.rs`), one thread block per row, in double. f32 and f64 logits.
//! Operands are contiguous buffers given as (storage, element offset). The forward keeps
//! each row's max and sum of exponentials, `(rows, 2)` doubles, for the backward.

use super::launch::{launch, row_grid};
use super::{reduce, suffix, CudaStorage};
use crate::backend::{BackendStorage, BinaryOp, CeReduction, ReduceOp};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};

const MODULE: &str = "cross_entropy";
const OP: &str = "cross_entropy";

/// An operand to check: its name, (buffer, element offset) if present, the dtype it must
/// have and how many elements are read from its offset.
type Check<'a> = (&'a str, Option<(&'a CudaStorage, usize)>, DType, usize);

/// Every operand is on x's device, of the dtype it must have, and holds the elements it is
/// read at.
fn check(operands: &[Check<'_>]) -> Result<()> {
    let dev = operands[0].1.map(|(s, _)| s.device());
    for &(name, operand, dtype, len) in operands {
        let Some((s, at)) = operand else { continue };
        if s.dtype != dtype {
            return Err(Error::dtype(
                OP,
                format!("{name} must be {dtype}, got {}", s.dtype),
            ));
        }
        if Some(s.device()) != dev {
            return Err(Error::Device {
                op: OP,
                lhs: dev.expect("x is given"),
                rhs: s.device(),
            });
        }
        if at + len > s.len {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} needs {len} elements from offset {at} but its buffer holds {}",
                    s.len
                ),
            ));
        }
    }
    Ok(())
}

/// What the forward returns.
pub(crate) struct Forward {
    /// The loss, f64: one per row, or one element when reduced.
    pub loss: CudaStorage,
    /// The total weight of the rows not ignored: one f64, on the device.
    pub weight_total: CudaStorage,
    /// Each row's max and sum of exponentials, f64 `(rows, 2)`.
    pub stats: CudaStorage,
}

/// Forward over `rows` rows of `classes` logits, reduced as `reduction` says. `Ok(None)`
/// for a dtype without kernels. Nothing is read back: the reductions and the mean's division
/// run on the device, and an out-of-range target is reported at the next synchronisation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn forward(
    x: (&CudaStorage, usize),
    targets: (&CudaStorage, usize),
    weight: Option<(&CudaStorage, usize)>,
    rows: usize,
    classes: usize,
    ignore_index: i64,
    label_smoothing: f64,
    reduction: CeReduction,
) -> Result<Option<Forward>> {
    let dtype = x.0.dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Ok(None);
    }
    check(&[
        ("input", Some(x), dtype, rows * classes),
        ("target", Some(targets), DType::I64, rows),
        ("weight", weight, dtype, classes),
    ])?;
    let s = x.0;
    let losses = s.alloc_like(DType::F64, rows)?;
    let row_weight = s.alloc_like(DType::F64, rows)?;
    let stats = s.alloc_like(DType::F64, rows * 2)?;
    if rows > 0 {
        launch!(
            &s.dev,
            MODULE,
            format!("ce_fwd_{}", suffix(dtype)),
            row_grid(rows),
            rows as i64,
            classes as i64,
            ignore_index,
            label_smoothing,
            x.0.ptr_at(x.1),
            targets.0.ptr_at(targets.1),
            weight.map_or(0u64, |(w, at)| w.ptr_at(at)),
            losses.ptr(),
            row_weight.ptr(),
            stats.ptr(),
            s.dev.error_flag_ptr()
        );
    }
    let total =
        |v: &CudaStorage| reduce::reduce(v, &Layout::contiguous(&[rows]), ReduceOp::Sum, &[0]);
    let weight_total = total(&row_weight)?;
    let scalar = Layout::contiguous(&[]);
    let loss = match reduction {
        CeReduction::None => losses,
        CeReduction::Sum => total(&losses)?,
        CeReduction::Mean => {
            total(&losses)?.binary(&scalar, &weight_total, &scalar, BinaryOp::Div)?
        }
    };
    Ok(Some(Forward {
        loss,
        weight_total,
        stats,
    }))
}

/// `dx` `(rows, classes)` of x's dtype from the forward's operands and statistics; the
/// upstream gradient per row from `g_rows` (x's dtype), or one for all rows: the f64 at
/// `g_uniform`, on the device. Exactly one of the two is given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    x: (&CudaStorage, usize),
    targets: (&CudaStorage, usize),
    weight: Option<(&CudaStorage, usize)>,
    stats: &CudaStorage,
    g_rows: Option<(&CudaStorage, usize)>,
    g_uniform: Option<(&CudaStorage, usize)>,
    rows: usize,
    classes: usize,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<CudaStorage> {
    let dtype = x.0.dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::unsupported_dtype(OP, dtype));
    }
    check(&[
        ("input", Some(x), dtype, rows * classes),
        ("target", Some(targets), DType::I64, rows),
        ("weight", weight, dtype, classes),
        ("statistics", Some((stats, 0)), DType::F64, rows * 2),
        ("grad_output", g_rows, dtype, rows),
        ("grad_output", g_uniform, DType::F64, 1),
    ])?;
    if g_rows.is_none() == g_uniform.is_none() {
        return Err(Error::invalid(
            OP,
            "give the upstream gradient per row or uniform, not both",
        ));
    }
    let s = x.0;
    let dx = s.alloc_like(dtype, rows * classes)?;
    if rows > 0 {
        launch!(
            &s.dev,
            MODULE,
            format!("ce_bwd_{}", suffix(dtype)),
            row_grid(rows),
            rows as i64,
            classes as i64,
            ignore_index,
            label_smoothing,
            x.0.ptr_at(x.1),
            targets.0.ptr_at(targets.1),
            weight.map_or(0u64, |(w, at)| w.ptr_at(at)),
            stats.ptr(),
            g_rows.map_or(0u64, |(g, at)| g.ptr_at(at)),
            g_uniform.map_or(0u64, |(g, at)| g.ptr_at(at)),
            dx.ptr(),
            s.dev.error_flag_ptr()
        );
    }
    Ok(dx)
}
