//! Index kernels: index_select, gather, scatter (write or accumulate), index_add and a stable
//! sort. Every kernel accepts any strides for its source, index and destination layouts, and
//! checks every index against its dimension before it reads or writes anything, so a bad index
//! is an `Err`, never an out-of-bounds access. Indices are i64.

use super::strided::{map1, offsets, PAR_THRESHOLD};
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::Layout;
use crate::error::{Error, Result};
use crate::with_cpu_storage;
use half::{bf16, f16};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::mem::MaybeUninit;

/// `a + b` with PyTorch's semantics per dtype: integers wrap, bool is logical or, half types
/// add in f32 and round once.
trait Accumulate: CpuElement {
    fn accumulate(self, other: Self) -> Self;
}

macro_rules! accumulate_plain {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline(always)]
            fn accumulate(self, other: Self) -> Self {
                self + other
            }
        }
    )*};
}
accumulate_plain!(f32, f64);

macro_rules! accumulate_int {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline(always)]
            fn accumulate(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    )*};
}
accumulate_int!(u8, i32, i64);

macro_rules! accumulate_half {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline(always)]
            fn accumulate(self, other: Self) -> Self {
                <$t>::from_f32(self.to_f32() + other.to_f32())
            }
        }
    )*};
}
accumulate_half!(f16, bf16);

impl Accumulate for bool {
    #[inline(always)]
    fn accumulate(self, other: Self) -> Self {
        self || other
    }
}

/// A 0-d layout as a 1-element 1-D one, so that every kernel can assume `dim < ndim`
/// (PyTorch treats a scalar as having one index along dim 0).
pub(crate) fn lift_0d(l: &Layout) -> Layout {
    if l.ndim() == 0 {
        l.unsqueeze(0)
    } else {
        l.clone()
    }
}

/// The i64 values of an index layout in row-major order.
fn index_values(op: &'static str, index: &CpuStorage, il: &Layout) -> Result<Vec<i64>> {
    match index {
        CpuStorage::I64(v) => Ok(map1(v, il, |x| x)),
        other => Err(Error::dtype(
            op,
            format!("index must be int64, got {}", other.dtype()),
        )),
    }
}

/// Every index must lie in `0..size`.
fn check_range(op: &'static str, idx: &[i64], dim: usize, size: usize) -> Result<()> {
    match idx.iter().find(|&&i| i < 0 || i as u64 >= size as u64) {
        Some(&bad) => Err(Error::index(
            op,
            format!("index {bad} is out of bounds for dimension {dim} with size {size}"),
        )),
        None => Ok(()),
    }
}

/// Storage offsets (relative to the layout's offset) of the dims before `dim` and of the dims
/// after it, each in row-major order. An element `(o, k, i)` sits at
/// `offset + outer[o] + k * stride[dim] + inner[i]`.
fn outer_inner_offsets(l: &Layout, dim: usize) -> (Vec<usize>, Vec<usize>) {
    let (shape, strides) = (l.shape(), l.strides());
    let outer = Layout::from_parts(shape[..dim].to_vec(), strides[..dim].to_vec(), 0);
    let inner = Layout::from_parts(shape[dim + 1..].to_vec(), strides[dim + 1..].to_vec(), 0);
    (offsets(&outer), offsets(&inner))
}

/// `l` restricted to the shape `shape` (no larger than `l`'s in any dim) with dimension `dim`
/// pinned to index 0: the base offsets that gather and scatter add `index * stride[dim]` to.
fn pinned_view(l: &Layout, shape: &[usize], dim: usize) -> Layout {
    let mut strides = l.strides().to_vec();
    strides[dim] = 0;
    Layout::from_parts(shape.to_vec(), strides, l.offset())
}

/// `shape` must have `l`'s rank and be no larger in every dim (but `dim`, unless `all_dims`).
pub(crate) fn check_fits(
    op: &'static str,
    shape: &[usize],
    l: &Layout,
    dim: usize,
    all_dims: bool,
    what: &str,
) -> Result<()> {
    let fits = shape.len() == l.ndim()
        && shape
            .iter()
            .zip(l.shape())
            .enumerate()
            .all(|(d, (&a, &b))| (d == dim && !all_dims) || a <= b);
    if fits {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            format!(
                "index of shape {shape:?} does not fit the {what} of shape {:?}",
                l.shape()
            ),
        ))
    }
}

// ---- index_select ------------------------------------------------------------------------

fn index_select_typed<T: CpuElement>(src: &[T], l: &Layout, dim: usize, idx: &[i64]) -> Vec<T> {
    let (outer, inner) = outer_inner_offsets(l, dim);
    let (n, row_len, sd) = (idx.len(), inner.len(), l.strides()[dim]);
    let len = outer.len() * n * row_len;
    // Every output element is written below, so the buffer is not zeroed first (a data
    // loader's batch gather is one such copy per step).
    let mut out = super::allocator::take::<T>(len);
    if len == 0 {
        return out;
    }
    // When the dims after `dim` are contiguous each output row is one slice copy: the
    // embedding-lookup case (dim 0 of a contiguous table).
    let inner_contiguous = inner.iter().enumerate().all(|(i, &o)| i == o);
    let fill_row = |r: usize, row: &mut [MaybeUninit<T>]| {
        let base = l.offset() + outer[r / n] + idx[r % n] as usize * sd;
        if inner_contiguous {
            for (x, &v) in row.iter_mut().zip(&src[base..base + row_len]) {
                x.write(v);
            }
        } else {
            for (x, &o) in row.iter_mut().zip(&inner) {
                x.write(src[base + o]);
            }
        }
    };
    let dst = &mut out.spare_capacity_mut()[..len];
    if len >= PAR_THRESHOLD {
        dst.par_chunks_mut(row_len)
            .enumerate()
            .for_each(|(r, row)| fill_row(r, row));
    } else {
        dst.chunks_mut(row_len)
            .enumerate()
            .for_each(|(r, row)| fill_row(r, row));
    }
    // SAFETY: each of the `len / row_len` rows was written whole above.
    unsafe { out.set_len(len) };
    out
}

/// Slices along `dim` picked by the 1-D i64 `index`; the output has `layout`'s shape with
/// `dim` resized to the number of indices (a 0-d source counts as shape `[1]`).
pub fn index_select(
    s: &CpuStorage,
    l: &Layout,
    dim: usize,
    i: &CpuStorage,
    il: &Layout,
) -> Result<CpuStorage> {
    let l = lift_0d(l);
    let idx = index_values("index_select", i, il)?;
    check_range("index_select", &idx, dim, l.shape()[dim])?;
    Ok(with_cpu_storage!(s, v => CpuStorage::from_vec(index_select_typed(v, &l, dim, &idx))))
}

// ---- gather ------------------------------------------------------------------------------

fn gather_typed<T: CpuElement>(
    src: &[T],
    l: &Layout,
    dim: usize,
    idx: &[i64],
    idx_shape: &[usize],
) -> Vec<T> {
    let base = offsets(&pinned_view(l, idx_shape, dim));
    let sd = l.strides()[dim];
    base.iter()
        .zip(idx)
        .map(|(&b, &k)| src[b + k as usize * sd])
        .collect()
}

/// `out[p] = src[p with coordinate dim replaced by index[p]]`; the output has the index's
/// shape, which must be no larger than the source's in every dim but `dim`.
pub fn gather(
    s: &CpuStorage,
    l: &Layout,
    dim: usize,
    i: &CpuStorage,
    il: &Layout,
) -> Result<CpuStorage> {
    let (l, il) = (lift_0d(l), lift_0d(il));
    check_fits("gather", il.shape(), &l, dim, false, "input")?;
    let idx = index_values("gather", i, &il)?;
    check_range("gather", &idx, dim, l.shape()[dim])?;
    Ok(with_cpu_storage!(s, v => CpuStorage::from_vec(gather_typed(v, &l, dim, &idx, il.shape()))))
}

// ---- scatter -----------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn scatter_typed<T: Accumulate>(
    dst: &mut [T],
    l: &Layout,
    dim: usize,
    idx: &[i64],
    idx_shape: &[usize],
    src: &[T],
    sl: &Layout,
    accumulate: bool,
) {
    let dst_base = offsets(&pinned_view(l, idx_shape, dim));
    let src_offs = offsets(&Layout::from_parts(
        idx_shape.to_vec(),
        sl.strides().to_vec(),
        sl.offset(),
    ));
    let sd = l.strides()[dim];
    // Sequential: duplicate indices make two positions write the same element.
    for ((&b, &k), &so) in dst_base.iter().zip(idx).zip(&src_offs) {
        let p = b + k as usize * sd;
        dst[p] = if accumulate {
            dst[p].accumulate(src[so])
        } else {
            src[so]
        };
    }
}

/// Scatter `src` into `dst[layout]` at `index` along `dim` (`dst.scatter_(dim, index, src)`,
/// or `scatter_add_` with `accumulate`). The index must be no larger than `src` in every dim
/// and than `dst` in every dim but `dim`. With duplicate indices and no accumulation the last
/// write wins.
#[allow(clippy::too_many_arguments)]
pub fn scatter_inplace(
    dst: &mut CpuStorage,
    l: &Layout,
    dim: usize,
    i: &CpuStorage,
    il: &Layout,
    src: &CpuStorage,
    sl: &Layout,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "scatter_add" } else { "scatter" };
    let (l, il, sl) = (lift_0d(l), lift_0d(il), lift_0d(sl));
    check_fits(op, il.shape(), &l, dim, false, "destination")?;
    check_fits(op, il.shape(), &sl, dim, true, "source")?;
    let idx = index_values(op, i, &il)?;
    check_range(op, &idx, dim, l.shape()[dim])?;
    if dst.dtype() != src.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "destination is {} but source is {}",
                dst.dtype(),
                src.dtype()
            ),
        ));
    }
    with_cpu_storage!(dst, d => {
        let s = CpuElement::slice(src).expect("dtype checked above");
        scatter_typed(d, &l, dim, &idx, il.shape(), s, &sl, accumulate);
    });
    Ok(())
}

// ---- index_add ---------------------------------------------------------------------------

fn index_add_typed<T: Accumulate>(
    dst: &mut [T],
    l: &Layout,
    dim: usize,
    idx: &[i64],
    src: &[T],
    sl: &Layout,
) {
    let (outer, inner) = outer_inner_offsets(l, dim);
    let src_offs = offsets(sl);
    let sd = l.strides()[dim];
    let mut next = src_offs.iter();
    for &o in &outer {
        for &k in idx {
            let base = l.offset() + o + k as usize * sd;
            for &i in &inner {
                let p = base + i;
                let so = *next.next().expect("source shape checked");
                dst[p] = dst[p].accumulate(src[so]);
            }
        }
    }
}

/// `dst[layout].index_select(dim, index) += src` with duplicates accumulating
/// (`dst.index_add_(dim, index, src)`); `src` has `dst`'s shape with `dim` resized to the
/// number of indices.
pub fn index_add_inplace(
    dst: &mut CpuStorage,
    l: &Layout,
    dim: usize,
    i: &CpuStorage,
    il: &Layout,
    src: &CpuStorage,
    sl: &Layout,
) -> Result<()> {
    let (l, sl) = (lift_0d(l), lift_0d(sl));
    let idx = index_values("index_add", i, il)?;
    check_range("index_add", &idx, dim, l.shape()[dim])?;
    let mut expected = l.shape().to_vec();
    expected[dim] = idx.len();
    if sl.shape() != expected.as_slice() {
        return Err(Error::shape(
            "index_add",
            format!(
                "source has shape {:?} but {expected:?} was expected",
                sl.shape()
            ),
        ));
    }
    if dst.dtype() != src.dtype() {
        return Err(Error::dtype(
            "index_add",
            format!(
                "destination is {} but source is {}",
                dst.dtype(),
                src.dtype()
            ),
        ));
    }
    with_cpu_storage!(dst, d => {
        let s = CpuElement::slice(src).expect("dtype checked above");
        index_add_typed(d, &l, dim, &idx, s, &sl);
    });
    Ok(())
}

// ---- sort --------------------------------------------------------------------------------

/// Total order with NaN above every number (and equal to itself), as `torch.sort`.
fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    let (a_nan, b_nan) = (a != a, b != b);
    match (a_nan, b_nan) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

fn sort_typed<T: CpuElement>(
    src: &[T],
    l: &Layout,
    dim: usize,
    descending: bool,
) -> (Vec<T>, Vec<i64>) {
    let (outer, inner) = outer_inner_offsets(l, dim);
    let (n, sd) = (l.shape()[dim], l.strides()[dim]);
    let total = outer.len() * n * inner.len();
    let mut values = vec![T::default(); total];
    let mut indices = vec![0i64; total];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for (o_pos, &o) in outer.iter().enumerate() {
        for (i_pos, &i) in inner.iter().enumerate() {
            let base = l.offset() + o + i;
            let at = |k: usize| src[base + k * sd];
            order.clear();
            order.extend(0..n);
            // `sort_by` is stable, so equal values keep their original order either way.
            if descending {
                order.sort_by(|&a, &b| nan_last(&at(b), &at(a)));
            } else {
                order.sort_by(|&a, &b| nan_last(&at(a), &at(b)));
            }
            for (k, &from) in order.iter().enumerate() {
                let p = (o_pos * n + k) * inner.len() + i_pos;
                values[p] = at(from);
                indices[p] = from as i64;
            }
        }
    }
    (values, indices)
}

/// Stable sort along `dim` (NaN sorts as the largest value): contiguous values of the input's
/// shape and the i64 positions they came from.
pub fn sort(
    s: &CpuStorage,
    l: &Layout,
    dim: usize,
    descending: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    let l = lift_0d(l);
    Ok(with_cpu_storage!(s, v => {
        let (values, indices) = sort_typed(v, &l, dim, descending);
        (CpuStorage::from_vec(values), CpuStorage::I64(indices.into()))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive reference for `index_select`: coordinates of every output element, one by one.
    fn index_select_naive(src: &[f64], l: &Layout, dim: usize, idx: &[i64]) -> Vec<f64> {
        let mut shape = l.shape().to_vec();
        shape[dim] = idx.len();
        let n: usize = shape.iter().product();
        (0..n)
            .map(|flat| {
                let mut rem = flat;
                let mut off = l.offset();
                for d in (0..shape.len()).rev() {
                    let c = rem % shape[d];
                    rem /= shape[d];
                    let c = if d == dim { idx[c] as usize } else { c };
                    off += c * l.strides()[d];
                }
                src[off]
            })
            .collect()
    }

    #[test]
    fn index_select_fast_paths_match_naive() {
        let src: Vec<f64> = (0..4 * 5 * 6).map(|x| x as f64).collect();
        let base = Layout::contiguous(&[4, 5, 6]);
        let idx = [3i64, 0, 3, 1];
        let layouts = [
            base.clone(),
            base.transpose(0, 2),
            base.narrow("t", 2, 1, 4).unwrap(),
        ];
        for l in &layouts {
            for dim in 0..3 {
                let idx: Vec<i64> = idx
                    .iter()
                    .map(|&i| i.min(l.shape()[dim] as i64 - 1))
                    .collect();
                assert_eq!(
                    index_select_typed(&src, l, dim, &idx),
                    index_select_naive(&src, l, dim, &idx)
                );
            }
        }
        // Large enough for the parallel path.
        let big: Vec<f64> = (0..PAR_THRESHOLD * 2).map(|x| x as f64).collect();
        let l = Layout::contiguous(&[PAR_THRESHOLD / 4, 8]);
        let idx: Vec<i64> = (0..PAR_THRESHOLD as i64 / 2)
            .map(|i| (i * 7) % (PAR_THRESHOLD as i64 / 4))
            .collect();
        assert_eq!(
            index_select_typed(&big, &l, 0, &idx),
            index_select_naive(&big, &l, 0, &idx)
        );
    }

    #[test]
    fn out_of_range_index_is_an_error_before_any_write() {
        let mut dst = CpuStorage::F32(vec![0.0; 3].into());
        let idx = CpuStorage::I64(vec![0, 3].into());
        let src = CpuStorage::F32(vec![1.0, 2.0].into());
        let l = Layout::contiguous(&[3]);
        let il = Layout::contiguous(&[2]);
        let e = scatter_inplace(&mut dst, &l, 0, &idx, &il, &src, &il, false).unwrap_err();
        assert!(
            e.to_string()
                .contains("index 3 is out of bounds for dimension 0 with size 3"),
            "{e}"
        );
        assert_eq!(dst, CpuStorage::F32(vec![0.0; 3].into()));
    }

    #[test]
    fn sort_is_stable_and_puts_nan_last() {
        let v = [2.0f32, f32::NAN, 1.0, 2.0, 1.0];
        let (vals, idx) = sort_typed(&v, &Layout::contiguous(&[5]), 0, false);
        assert_eq!(idx, vec![2, 4, 0, 3, 1]);
        assert!(vals[4].is_nan());
        let (_, idx) = sort_typed(&v, &Layout::contiguous(&[5]), 0, true);
        assert_eq!(idx, vec![1, 0, 3, 2, 4]);
    }
}
