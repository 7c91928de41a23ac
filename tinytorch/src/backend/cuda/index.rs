//! Index primitives on CUDA (kernels/index.cu). Shape and dtype checks are the CPU
//! backend's; index values are checked by the kernels, which raise the device's error flag
//! (reported at the next synchronisation) instead of reading indices back to the host.

use super::launch::{elementwise, grid, launch, KShape, KStrides};
use super::reduce::rows;
use super::{suffix, CudaStorage};
use crate::backend::cpu::index::{check_fits, lift_0d};
use crate::error::{Error, Result};
use crate::tensor::{DType, Layout};

const MODULE: &str = "index";

fn check_index(op: &'static str, index: &CudaStorage) -> Result<()> {
    if index.dtype != DType::I64 {
        return Err(Error::dtype(
            op,
            format!("index must be int64, got {}", index.dtype),
        ));
    }
    Ok(())
}

fn check_same(op: &'static str, dst: &CudaStorage, src: &CudaStorage) -> Result<()> {
    if dst.dtype != src.dtype {
        return Err(Error::dtype(
            op,
            format!("destination is {} but source is {}", dst.dtype, src.dtype),
        ));
    }
    Ok(())
}

/// Offset and stride of a 0-d or 1-d index.
fn vector(op: &'static str, il: &Layout) -> Result<(i64, i64, usize)> {
    match il.ndim() {
        0 => Ok((il.offset() as i64, 0, 1)),
        1 => Ok((il.offset() as i64, il.strides()[0] as i64, il.shape()[0])),
        _ => Err(Error::shape(
            op,
            format!("index must be 1-D, got shape {:?}", il.shape()),
        )),
    }
}

/// Shape and strides of dims `range` of `l` (merged), offset `offset`.
fn part(
    op: &'static str,
    l: &Layout,
    range: std::ops::Range<usize>,
    offset: usize,
) -> Result<(KShape, KStrides, usize)> {
    let shape = l.shape()[range.clone()].to_vec();
    let numel = shape.iter().product();
    let (ms, mst) = Layout::from_parts(shape, l.strides()[range].to_vec(), 0).merged();
    Ok((
        KShape::new(op, &ms)?,
        KStrides::new(op, &mst, offset)?,
        numel,
    ))
}

pub fn index_select(
    x: &CudaStorage,
    l: &Layout,
    dim: usize,
    index: &CudaStorage,
    il: &Layout,
) -> Result<CudaStorage> {
    const OP: &str = "index_select";
    check_index(OP, index)?;
    let l = lift_0d(l);
    let (ioff, istride, k) = vector(OP, il)?;
    let (osh, os, outer) = part(OP, &l, 0..dim, l.offset())?;
    let (qsh, qs, inner) = part(OP, &l, dim + 1..l.ndim(), 0)?;
    let n = outer * k * inner;
    let out = x.alloc_like(x.dtype, n)?;
    if n > 0 {
        let name = format!("index_select_{}", suffix(x.dtype));
        let (dstride, dsize) = (l.strides()[dim] as i64, l.shape()[dim] as i64);
        let err = x.dev.error_flag_ptr();
        launch!(
            &x.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            k as i64,
            inner as i64,
            osh,
            os,
            qsh,
            qs,
            dstride,
            dsize,
            x.ptr(),
            index.ptr(),
            ioff,
            istride,
            out.ptr(),
            err
        );
    }
    Ok(out)
}

/// `l` with `dim`'s stride set to 0, over the index's shape: where gather/scatter add
/// `index * stride[dim]`.
fn pinned(l: &Layout, shape: &[usize], dim: usize) -> Layout {
    let mut strides = l.strides().to_vec();
    strides[dim] = 0;
    Layout::from_parts(shape.to_vec(), strides, l.offset())
}

pub fn gather(
    x: &CudaStorage,
    l: &Layout,
    dim: usize,
    index: &CudaStorage,
    il: &Layout,
) -> Result<CudaStorage> {
    const OP: &str = "gather";
    let (l, il) = (lift_0d(l), lift_0d(il));
    check_fits(OP, il.shape(), &l, dim, false, "input")?;
    check_index(OP, index)?;
    let n = il.numel();
    let out = x.alloc_like(x.dtype, n)?;
    if n > 0 {
        let (sh, st) = elementwise(OP, &[&il, &pinned(&l, il.shape(), dim)])?;
        let name = format!("gather_{}", suffix(x.dtype));
        let (dstride, dsize) = (l.strides()[dim] as i64, l.shape()[dim] as i64);
        let err = x.dev.error_flag_ptr();
        launch!(
            &x.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            sh,
            st[1],
            st[0],
            dstride,
            dsize,
            x.ptr(),
            index.ptr(),
            out.ptr(),
            err
        );
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub fn scatter_inplace(
    dst: &mut CudaStorage,
    l: &Layout,
    dim: usize,
    index: &CudaStorage,
    il: &Layout,
    src: &CudaStorage,
    sl: &Layout,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "scatter_add" } else { "scatter" };
    let (l, il, sl) = (lift_0d(l), lift_0d(il), lift_0d(sl));
    check_fits(op, il.shape(), &l, dim, false, "destination")?;
    check_fits(op, il.shape(), &sl, dim, true, "source")?;
    check_index(op, index)?;
    check_same(op, dst, src)?;
    let n = il.numel();
    if n == 0 {
        return Ok(());
    }
    let src_l = Layout::from_parts(il.shape().to_vec(), sl.strides().to_vec(), sl.offset());
    let (sh, st) = elementwise(op, &[&il, &pinned(&l, il.shape(), dim), &src_l])?;
    let name = format!("scatter_{}", suffix(dst.dtype));
    let (dstride, dsize) = (l.strides()[dim] as i64, l.shape()[dim] as i64);
    let err = dst.dev.error_flag_ptr();
    launch!(
        &dst.dev,
        MODULE,
        name,
        grid(n),
        n as i64,
        accumulate as i32,
        sh,
        st[1],
        st[0],
        st[2],
        dstride,
        dsize,
        dst.ptr(),
        index.ptr(),
        src.ptr(),
        err
    );
    Ok(())
}

pub fn index_add_inplace(
    dst: &mut CudaStorage,
    l: &Layout,
    dim: usize,
    index: &CudaStorage,
    il: &Layout,
    src: &CudaStorage,
    sl: &Layout,
) -> Result<()> {
    const OP: &str = "index_add";
    let (l, sl) = (lift_0d(l), lift_0d(sl));
    check_index(OP, index)?;
    let (ioff, istride, k) = vector(OP, il)?;
    let mut expected = l.shape().to_vec();
    expected[dim] = k;
    if sl.shape() != expected.as_slice() {
        return Err(Error::shape(
            OP,
            format!(
                "source has shape {:?} but {expected:?} was expected",
                sl.shape()
            ),
        ));
    }
    check_same(OP, dst, src)?;
    let (osh, os, outer) = part(OP, &l, 0..dim, l.offset())?;
    let (qsh, qs, inner) = part(OP, &l, dim + 1..l.ndim(), 0)?;
    let n = outer * k * inner;
    if n == 0 {
        return Ok(());
    }
    let (ssh, ss) = elementwise(OP, &[&sl])?;
    let name = format!("index_add_{}", suffix(dst.dtype));
    let (dstride, dsize) = (l.strides()[dim] as i64, l.shape()[dim] as i64);
    let err = dst.dev.error_flag_ptr();
    launch!(
        &dst.dev,
        MODULE,
        name,
        grid(n),
        n as i64,
        k as i64,
        inner as i64,
        osh,
        os,
        qsh,
        qs,
        dstride,
        dsize,
        dst.ptr(),
        index.ptr(),
        ioff,
        istride,
        ssh,
        ss[0],
        src.ptr(),
        err
    );
    Ok(())
}

pub fn sort(
    x: &CudaStorage,
    l: &Layout,
    dim: usize,
    descending: bool,
) -> Result<(CudaStorage, CudaStorage)> {
    const OP: &str = "sort";
    let l = lift_0d(l);
    let total = l.numel();
    let values = x.alloc_like(x.dtype, total)?;
    let indices = x.alloc_like(DType::I64, total)?;
    if total == 0 {
        return Ok((values, indices));
    }
    let r = rows(OP, &l, dim)?;
    let name = format!("sort_{}", suffix(x.dtype));
    launch!(
        &x.dev,
        MODULE,
        name,
        grid(total),
        total as i64,
        r.len,
        descending as i32,
        r.shape,
        r.input,
        r.in_stride,
        r.output,
        r.out_stride,
        x.ptr(),
        values.ptr(),
        indices.ptr()
    );
    Ok((values, indices))
}
