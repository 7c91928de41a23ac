//! Reductions on CUDA (kernels/reduce.cu): over any set of dims, arg-max/min, softmax and
//! scans along one dim. Dtype rules and argument checks are the CPU backend's.

use super::launch::{grid, grid_groups, launch, KShape, KStrides, BLOCK};
use super::op_codes::{arg, reduce as codes, scan};
use super::{elementwise, suffix, CudaStorage};
use crate::backend::cpu::reduce::check_reduce;
use crate::backend::{ArgReduceOp, ReduceOp, ScanOp};
use crate::base::layout::merge_dims;
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

const MODULE: &str = "reduce";

/// The dims of `l` split into (kept, along): shape and strides of each, merged where
/// contiguous; `along` lists the dims walked by one reduction.
fn split(op: &'static str, l: &Layout, along: &[usize]) -> Result<[(KShape, KStrides, usize); 2]> {
    let part = |keep: bool, offset: usize| -> Result<(KShape, KStrides, usize)> {
        let dims: Vec<usize> = (0..l.ndim())
            .filter(|d| along.contains(d) != keep)
            .collect();
        let shape: Vec<usize> = dims.iter().map(|&d| l.shape()[d]).collect();
        let strides: Vec<usize> = dims.iter().map(|&d| l.strides()[d]).collect();
        let numel = shape.iter().product();
        let (ms, mst) = Layout::from_parts(shape, strides, 0).merged();
        Ok((
            KShape::new(op, &ms)?,
            KStrides::new(op, &mst, offset)?,
            numel,
        ))
    };
    Ok([part(true, l.offset())?, part(false, 0)?])
}

pub fn reduce(x: &CudaStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CudaStorage> {
    check_reduce(l, op, dims)?;
    // As on the CPU: sums and products of u8/bool are taken in i64; max/min of bool are
    // any/all.
    let op = match (x.dtype, op) {
        (DType::Bool, ReduceOp::Max) => ReduceOp::Any,
        (DType::Bool, ReduceOp::Min) => ReduceOp::All,
        _ => op,
    };
    if matches!(x.dtype, DType::U8 | DType::I32 | DType::Bool)
        && matches!(op, ReduceOp::Sum | ReduceOp::Prod)
    {
        let wide = elementwise::cast(x, l, DType::I64)?;
        return reduce(&wide, &Layout::contiguous(l.shape()), op, dims);
    }
    let code: i32 = match op {
        ReduceOp::Sum => codes::SUM,
        ReduceOp::Prod => codes::PROD,
        ReduceOp::Max => codes::MAX,
        ReduceOp::Min => codes::MIN,
        ReduceOp::All => codes::ALL,
        ReduceOp::Any => codes::ANY,
    };
    let parts = split("reduce", l, dims)?;
    let [(_, _, m), (_, _, r)] = parts;
    if outputs_are_unit_stride(l, dims, m) {
        return reduce_columns(x, op, code, parts);
    }
    let splits = slices_per_output(m, r);
    if splits > 1 {
        return reduce_in_slices(x, op, code, splits, parts);
    }
    let [(ksh, ks, _), (rsh, rs, _)] = parts;
    let out = x.alloc_like(output_dtype(x.dtype, code), m)?;
    if m == 0 {
        return Ok(out);
    }
    // A warp per output when outputs are many or short; a block of 256 for long ones.
    let group: i32 = if m >= 2048 || r <= 256 { 32 } else { 256 };
    let name = format!("reduce_{}", suffix(x.dtype));
    let cfg = grid_groups(m, group as u32);
    launch!(
        &x.dev,
        MODULE,
        name,
        cfg,
        m as i64,
        r as i64,
        code,
        group,
        ksh,
        ks,
        rsh,
        rs,
        x.ptr(),
        out.ptr()
    );
    Ok(out)
}

/// The dtype of a reduction's result: bool for all/any, else the input's.
fn output_dtype(dtype: DType, code: i32) -> DType {
    if code >= codes::ALL {
        DType::Bool
    } else {
        dtype
    }
}

/// Blocks a reduction should keep busy: a few per SM of the largest devices (132 on an H200).
const BUSY_BLOCKS: usize = 1024;

/// Fewest elements one slice of a sliced reduction takes (a block of 256 threads, 16 each).
const MIN_SLICE: usize = 4096;

/// Into how many slices to cut each of `m` reductions of length `r`: 1 (one group of
/// threads per output) unless the outputs are too few to fill the device and the rows long
/// enough to share out. A whole-tensor sum was one block on one SM: 12 ms for 2^23 f32 on an
/// H200, where the memory allows 0.01.
fn slices_per_output(m: usize, r: usize) -> usize {
    if m == 0 || m >= BUSY_BLOCKS || r < 2 * MIN_SLICE {
        return 1;
    }
    BUSY_BLOCKS.div_ceil(m).min(r / MIN_SLICE).max(1)
}

/// The storage dtype of `reduce_partial`'s accumulators for inputs of `dtype` (the kernel's
/// `Ty<T>::C`).
fn accumulator_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 => DType::F32,
        DType::F64 => DType::F64,
        _ => DType::I64,
    }
}

/// [`reduce`] of `m` outputs each cut into `splits` slices: the first pass writes each
/// slice's accumulator (`[m, splits]`, in the accumulator dtype), the second reduces those
/// rows as an ordinary reduction.
fn reduce_in_slices(
    x: &CudaStorage,
    op: ReduceOp,
    code: i32,
    splits: usize,
    [(ksh, ks, m), (rsh, rs, r)]: [(KShape, KStrides, usize); 2],
) -> Result<CudaStorage> {
    let partial = x.alloc_like(accumulator_dtype(x.dtype), m * splits)?;
    let name = format!("reduce_partial_{}", suffix(x.dtype));
    launch!(
        &x.dev,
        MODULE,
        name,
        grid_groups(m * splits, BLOCK),
        m as i64,
        r as i64,
        code,
        splits as i64,
        r.div_ceil(splits) as i64,
        ksh,
        ks,
        rsh,
        rs,
        x.ptr(),
        partial.ptr()
    );
    combine_slices(x, &partial, op, [m, splits], 1)
}

/// Whether [`reduce_columns`] suits: the input's unit-stride dim is kept, at least a warp
/// long, and the outputs fill at least a block (with fewer, a sliced row reduction keeps more
/// threads busy).
fn outputs_are_unit_stride(l: &Layout, dims: &[usize], m: usize) -> bool {
    let unit = (0..l.ndim())
        .rev()
        .find(|&d| l.shape()[d] > 1 && l.strides()[d] == 1);
    m >= BLOCK as usize && unit.is_some_and(|d| !dims.contains(&d) && l.shape()[d] >= 32)
}

/// Fewest reduced elements one thread of [`reduce_columns`] takes per slice.
const MIN_COLUMN_SLICE: usize = 64;

/// [`reduce`] with one thread per output, for outputs that are unit-stride in the input
/// (kernels/reduce.cu `reduce_columns_impl`); the reduced range is cut into slices when the
/// outputs alone would not fill the device, and the slices combined by a second pass.
fn reduce_columns(
    x: &CudaStorage,
    op: ReduceOp,
    code: i32,
    [(ksh, ks, m), (rsh, rs, r)]: [(KShape, KStrides, usize); 2],
) -> Result<CudaStorage> {
    let blocks = m.div_ceil(BLOCK as usize);
    let splits = BUSY_BLOCKS
        .div_ceil(blocks)
        .min(r / MIN_COLUMN_SLICE)
        .clamp(1, 65_535);
    let out = if splits > 1 {
        x.alloc_like(accumulator_dtype(x.dtype), splits * m)?
    } else {
        x.alloc_like(output_dtype(x.dtype, code), m)?
    };
    if m > 0 {
        let cfg = LaunchConfig {
            grid_dim: (blocks.min(65_535 * 4) as u32, splits as u32, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let name = format!("reduce_columns_{}", suffix(x.dtype));
        launch!(
            &x.dev,
            MODULE,
            name,
            cfg,
            m as i64,
            r as i64,
            code,
            r.div_ceil(splits) as i64,
            ksh,
            ks,
            rsh,
            rs,
            x.ptr(),
            out.ptr()
        );
    }
    if splits == 1 {
        return Ok(out);
    }
    combine_slices(x, &out, op, [splits, m], 0)
}

/// The second pass of a sliced reduction: reduce the slices' accumulators (`shape`, sliced
/// along `dim`) as an ordinary reduction, then cast back to the input's dtype (half-precision
/// sums are rounded once, from f32, as in one pass).
fn combine_slices(
    x: &CudaStorage,
    partial: &CudaStorage,
    op: ReduceOp,
    shape: [usize; 2],
    dim: usize,
) -> Result<CudaStorage> {
    let combined = reduce(partial, &Layout::contiguous(&shape), op, &[dim])?;
    if combined.dtype == x.dtype || combined.dtype == DType::Bool {
        return Ok(combined);
    }
    let m = shape[1 - dim];
    elementwise::cast(&combined, &Layout::contiguous(&[m]), x.dtype)
}

pub fn arg_reduce(x: &CudaStorage, l: &Layout, op: ArgReduceOp, dim: usize) -> Result<CudaStorage> {
    if l.ndim() == 0 {
        let mut out = x.alloc_like(DType::I64, 1)?;
        elementwise::fill(&mut out, &Layout::contiguous(&[1]), 0.0)?;
        return Ok(out);
    }
    let [(ksh, ks, m), _] = split("argmax/argmin", l, &[dim])?;
    let n = l.shape()[dim];
    if n == 0 && m > 0 {
        return Err(Error::invalid(
            "argmax/argmin",
            format!(
                "cannot reduce over dim {dim} of shape {:?}: it is empty",
                l.shape()
            ),
        ));
    }
    let out = x.alloc_like(DType::I64, m)?;
    if m > 0 {
        let code = if op == ArgReduceOp::ArgMax {
            arg::MAX
        } else {
            arg::MIN
        };
        let name = format!("arg_reduce_{}", suffix(x.dtype));
        let stride = l.strides()[dim] as i64;
        launch!(
            &x.dev,
            MODULE,
            name,
            grid_groups(m, 32),
            m as i64,
            n as i64,
            code,
            ksh,
            ks,
            stride,
            x.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}

/// The rows along `dim` of an input layout and of its contiguous output, as the row kernels
/// (softmax, scans, sort) address them.
pub(super) struct Rows {
    /// The other dims' common shape (merged where both layouts allow).
    pub shape: KShape,
    /// Where each row starts in the input.
    pub input: KStrides,
    /// Where each row starts in the output.
    pub output: KStrides,
    /// Number of rows.
    pub count: usize,
    /// Elements per row.
    pub len: i64,
    /// Stride along the row in the input and in the output.
    pub in_stride: i64,
    pub out_stride: i64,
}

pub(super) fn rows(op: &'static str, l: &Layout, dim: usize) -> Result<Rows> {
    let out_l = Layout::contiguous(l.shape());
    let others =
        |v: &[usize]| -> Vec<usize> { (0..l.ndim()).filter(|&d| d != dim).map(|d| v[d]).collect() };
    let shape = others(l.shape());
    let (ms, mst) = merge_dims(&shape, [&others(l.strides()), &others(out_l.strides())])
        .unwrap_or_else(|| {
            let one = || smallvec::smallvec![1];
            (smallvec::smallvec![0], [one(), one()])
        });
    Ok(Rows {
        shape: KShape::new(op, &ms)?,
        input: KStrides::new(op, &mst[0], l.offset())?,
        output: KStrides::new(op, &mst[1], 0)?,
        count: shape.iter().product(),
        len: l.shape()[dim] as i64,
        in_stride: l.strides()[dim] as i64,
        out_stride: out_l.strides()[dim] as i64,
    })
}

pub fn softmax(x: &CudaStorage, l: &Layout, dim: usize, log: bool) -> Result<CudaStorage> {
    let op = if log { "log_softmax" } else { "softmax" };
    if !x.dtype.is_float() {
        return Err(Error::unsupported_dtype(op, x.dtype));
    }
    let mut out = x.alloc_like(x.dtype, l.numel())?;
    if l.ndim() == 0 {
        elementwise::fill(
            &mut out,
            &Layout::contiguous(&[]),
            if log { 0.0 } else { 1.0 },
        )?;
        return Ok(out);
    }
    let r = rows(op, l, dim)?;
    if r.count == 0 || l.numel() == 0 {
        return Ok(out);
    }
    let name = format!("softmax_{}", suffix(x.dtype));
    launch!(
        &x.dev,
        MODULE,
        name,
        grid_groups(r.count, 32),
        r.count as i64,
        r.len,
        log as i32,
        r.shape,
        r.input,
        r.in_stride,
        r.output,
        r.out_stride,
        x.ptr(),
        out.ptr()
    );
    Ok(out)
}

/// Threads that scan one row (kernels/reduce.cu): 1 when the rows alone give the GPU enough
/// threads, or are a few elements long (the serial kernel); a block of [`BLOCK`] when there
/// are too few rows for a warp each to fill the GPU and they are long; a warp otherwise.
/// (Chosen by reasoning, not yet measured on a GPU.)
fn scan_group(rows: usize, n: usize) -> u32 {
    if rows >= 65_536 || n <= 8 {
        1
    } else if rows < 2048 && n > 1024 {
        BLOCK
    } else {
        32
    }
}

pub fn scan(x: &CudaStorage, l: &Layout, op: ScanOp, dim: usize) -> Result<CudaStorage> {
    let out_dtype = if x.dtype.is_float() {
        x.dtype
    } else {
        DType::I64
    };
    if l.ndim() == 0 {
        return elementwise::cast(x, l, out_dtype);
    }
    let code: i32 = match op {
        ScanOp::CumSum => scan::CUMSUM,
        ScanOp::CumProd => scan::CUMPROD,
        ScanOp::RevCumSum => scan::REV_CUMSUM,
    };
    let out = x.alloc_like(out_dtype, l.numel())?;
    let r = rows("cumsum", l, dim)?;
    if r.count == 0 || l.numel() == 0 {
        return Ok(out);
    }
    let group = scan_group(r.count, r.len as usize);
    if group == 1 {
        launch!(
            &x.dev,
            MODULE,
            format!("scan_serial_{}", suffix(x.dtype)),
            grid(r.count),
            r.count as i64,
            r.len,
            code,
            r.shape,
            r.input,
            r.in_stride,
            r.output,
            r.out_stride,
            x.ptr(),
            out.ptr()
        );
    } else {
        launch!(
            &x.dev,
            MODULE,
            format!("scan_{}", suffix(x.dtype)),
            grid_groups(r.count, group),
            r.count as i64,
            r.len,
            code,
            group as i32,
            r.shape,
            r.input,
            r.in_stride,
            r.output,
            r.out_stride,
            x.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}
