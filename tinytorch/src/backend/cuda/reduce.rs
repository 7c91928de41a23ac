//! Reductions on CUDA (kernels/reduce.cu): over any set of dims, arg-max/min, softmax and
//! scans along one dim. Dtype rules and argument checks are the CPU backend's.

use super::launch::{grid, grid_groups, launch, KShape, KStrides};
use super::{elementwise, suffix, CudaStorage};
use crate::backend::cpu::reduce::check_reduce;
use crate::backend::{ArgReduceOp, ReduceOp, ScanOp};
use crate::error::{Error, Result};
use crate::tensor::layout::merge_dims;
use crate::tensor::{DType, Layout};

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
    if matches!(x.dtype, DType::U8 | DType::Bool) && matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
        let wide = elementwise::cast(x, l, DType::I64)?;
        return reduce(&wide, &Layout::contiguous(l.shape()), op, dims);
    }
    let code: i32 = match op {
        ReduceOp::Sum => 0,
        ReduceOp::Prod => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
        ReduceOp::All => 4,
        ReduceOp::Any => 5,
    };
    let [(ksh, ks, m), (rsh, rs, r)] = split("reduce", l, dims)?;
    let out_dtype = if code >= 4 { DType::Bool } else { x.dtype };
    let out = x.alloc_like(out_dtype, m)?;
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
        let code: i32 = if op == ArgReduceOp::ArgMax { 0 } else { 1 };
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

/// The rows along `dim`: the other dims' common shape with the input's strides and the
/// contiguous output's strides (merged where both allow), and the number of rows.
fn rows(op: &'static str, l: &Layout, dim: usize) -> Result<(KShape, KStrides, KStrides, usize)> {
    let out_l = Layout::contiguous(l.shape());
    let others =
        |v: &[usize]| -> Vec<usize> { (0..l.ndim()).filter(|&d| d != dim).map(|d| v[d]).collect() };
    let shape = others(l.shape());
    let nrows = shape.iter().product();
    let (ms, mst) = merge_dims(&shape, &[&others(l.strides()), &others(out_l.strides())])
        .unwrap_or_else(|| (vec![0], vec![vec![1], vec![1]]));
    Ok((
        KShape::new(op, &ms)?,
        KStrides::new(op, &mst[0], l.offset())?,
        KStrides::new(op, &mst[1], 0)?,
        nrows,
    ))
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
    let (osh, is, os, nrows) = rows(op, l, dim)?;
    if nrows == 0 || l.numel() == 0 {
        return Ok(out);
    }
    let n = l.shape()[dim] as i64;
    let istride = l.strides()[dim] as i64;
    let ostride = Layout::contiguous(l.shape()).strides()[dim] as i64;
    let name = format!("softmax_{}", suffix(x.dtype));
    launch!(
        &x.dev,
        MODULE,
        name,
        grid_groups(nrows, 32),
        nrows as i64,
        n,
        log as i32,
        osh,
        is,
        istride,
        os,
        ostride,
        x.ptr(),
        out.ptr()
    );
    Ok(out)
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
        ScanOp::CumSum => 0,
        ScanOp::CumProd => 1,
        ScanOp::RevCumSum => 2,
    };
    let out = x.alloc_like(out_dtype, l.numel())?;
    let (osh, is, os, nrows) = rows("cumsum", l, dim)?;
    if nrows == 0 || l.numel() == 0 {
        return Ok(out);
    }
    let n = l.shape()[dim] as i64;
    let istride = l.strides()[dim] as i64;
    let ostride = Layout::contiguous(l.shape()).strides()[dim] as i64;
    let name = format!("scan_{}", suffix(x.dtype));
    launch!(
        &x.dev,
        MODULE,
        name,
        grid(nrows),
        nrows as i64,
        n,
        code,
        osh,
        is,
        istride,
        os,
        ostride,
        x.ptr(),
        out.ptr()
    );
    Ok(out)
}
