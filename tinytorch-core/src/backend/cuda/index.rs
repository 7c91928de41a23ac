//! Index primitives on CUDA (kernels/index.cu). Shape and dtype checks are the CPU
//! backend's; index values are checked by the kernels, which raise the device's error flag
//! (reported at the next synchronisation) instead of reading indices back to the host.

use super::launch::{elementwise, grid, launch, KShape, KStrides, BLOCK};
use super::reduce::{rows, Rows};
use super::{suffix, CudaStorage};
use crate::backend::cpu::index::{check_fits, lift_0d};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

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

/// Rows of at most this many elements are sorted in shared memory, one block per row (or per
/// group of short rows); longer rows go through a scratch buffer in chunks of this many.
/// kernels/index.cu's SORT_CHUNK.
const SORT_CHUNK: usize = 2048;
/// Most (key, index) pairs of the long-row sort's scratch buffers (16 bytes each: 512 MiB),
/// unless a single row needs more.
const MAX_SORT_SLOTS: usize = 1 << 25;
/// Most blocks of the block-per-row and block-per-chunk sort kernels (each loops over its
/// share).
const MAX_SORT_BLOCKS: usize = 65_535;

/// `count` blocks of [`BLOCK`] threads, at most [`MAX_SORT_BLOCKS`] (the kernels loop).
fn sort_blocks(count: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.clamp(1, MAX_SORT_BLOCKS) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Stable sort along `dim` in torch.sort's order (kernels/index.cu explains the bitonic
/// network on (key, index) pairs that gives exactly the CPU's stable order): contiguous values
/// of the input's shape and the i64 positions they came from. O(n log^2 n) work per row.
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
    let (n, desc) = (r.len as usize, descending as i32);
    // Slots per row: the bitonic network sorts power-of-two lengths.
    let m = n.next_power_of_two();
    if m <= SORT_CHUNK {
        // Several rows per block when they are short: the block's shared slots hold
        // rows_per_block rows of m slots.
        let rows_per_block = (SORT_CHUNK / m).min(r.count);
        let groups = r.count.div_ceil(rows_per_block);
        launch!(
            &x.dev,
            MODULE,
            format!("sort_rows_{}", suffix(x.dtype)),
            sort_blocks(groups),
            r.count as i64,
            n as i64,
            m as i64,
            rows_per_block as i64,
            desc,
            r.shape,
            r.input,
            r.in_stride,
            r.output,
            r.out_stride,
            x.ptr(),
            values.ptr(),
            indices.ptr()
        );
        return Ok((values, indices));
    }
    sort_long_rows(x, &r, m, desc, &values, &indices)?;
    Ok((values, indices))
}

/// The sort of rows longer than [`SORT_CHUNK`] (m slots each, a multiple of SORT_CHUNK):
/// batches of rows go through scratch buffers of (key, index) pairs, m per row, which hold at
/// most [`MAX_SORT_SLOTS`] pairs unless one row needs more.
fn sort_long_rows(
    x: &CudaStorage,
    r: &Rows,
    m: usize,
    desc: i32,
    values: &CudaStorage,
    indices: &CudaStorage,
) -> Result<()> {
    let n = r.len;
    let batch = (MAX_SORT_SLOTS / m).clamp(1, r.count);
    // The keys are u64 in the kernels; an i64 buffer has their size.
    let keys = x.alloc_like(DType::I64, batch * m)?;
    let idx = x.alloc_like(DType::I64, batch * m)?;
    for first in (0..r.count).step_by(batch) {
        let rows = batch.min(r.count - first);
        let slots = rows * m;
        launch!(
            &x.dev,
            MODULE,
            format!("sort_fill_{}", suffix(x.dtype)),
            grid(slots),
            slots as i64,
            first as i64,
            n,
            m as i64,
            desc,
            r.shape,
            r.input,
            r.in_stride,
            x.ptr(),
            keys.ptr(),
            idx.ptr()
        );
        // The bitonic network's stages k = 2, 4, ..., m, each of steps j = k/2, ..., 1, in
        // order: a step with j < SORT_CHUNK stays inside SORT_CHUNK-slot chunks, so all the
        // steps of the stages up to SORT_CHUNK, and the last steps of each later stage, run
        // in shared memory (sort_chunks); a step with j >= SORT_CHUNK is one launch over the
        // whole batch (sort_step).
        let chunks = slots / SORT_CHUNK;
        let in_chunks = |k_first: usize, k_last: usize| -> Result<()> {
            launch!(
                &x.dev,
                MODULE,
                "sort_chunks",
                sort_blocks(chunks),
                chunks as i64,
                m as i64,
                k_first as i64,
                k_last as i64,
                keys.ptr(),
                idx.ptr()
            );
            Ok(())
        };
        in_chunks(2, SORT_CHUNK)?;
        let mut k = 2 * SORT_CHUNK;
        while k <= m {
            let mut j = k / 2;
            while j >= SORT_CHUNK {
                launch!(
                    &x.dev,
                    MODULE,
                    "sort_step",
                    grid(slots / 2),
                    (slots / 2) as i64,
                    m as i64,
                    k as i64,
                    j as i64,
                    keys.ptr(),
                    idx.ptr()
                );
                j /= 2;
            }
            in_chunks(k, k)?;
            k *= 2;
        }
        let total = rows * n as usize;
        launch!(
            &x.dev,
            MODULE,
            format!("sort_gather_{}", suffix(x.dtype)),
            grid(total),
            total as i64,
            first as i64,
            n,
            m as i64,
            r.shape,
            r.input,
            r.in_stride,
            r.output,
            r.out_stride,
            x.ptr(),
            idx.ptr(),
            values.ptr(),
            indices.ptr()
        );
    }
    // `keys` and `idx` go back to the device's cache here; the stream orders their reuse
    // (and the next batch's writes) after these kernels.
    Ok(())
}
