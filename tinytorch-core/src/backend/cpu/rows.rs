//! Rows along one dim, the shape of work shared by arg-reductions, scans and softmax: where
//! each row starts, rows made contiguous by a copy when the dim is strided, a parallel map of
//! rows to output rows, and the output put back in the input's dim order.

use super::storage::CpuElement;
use super::strided::{map1, offsets, PAR_THRESHOLD};
use crate::base::Layout;
use rayon::prelude::*;

/// Elements per parallel task when one long row is split across threads.
pub(super) const ROW_CHUNK: usize = 1 << 16;

/// The input layout split into the kept dims (with the input's offset) and the reduced dims
/// (offset 0). The reduced dims are sorted by decreasing stride, so that a permuted but
/// dense block (e.g. the sum of a transposed matrix) merges into one contiguous run; all
/// reductions are commutative, so their order does not matter.
pub(super) fn split_layout(l: &Layout, dims: &[usize]) -> (Layout, Layout) {
    let (mut ks, mut kst, mut rs) = (vec![], vec![], vec![]);
    for d in 0..l.ndim() {
        if dims.contains(&d) {
            rs.push((l.shape()[d], l.strides()[d]));
        } else {
            ks.push(l.shape()[d]);
            kst.push(l.strides()[d]);
        }
    }
    rs.sort_by_key(|p| std::cmp::Reverse(p.1));
    let kept = Layout::from_parts(ks, kst, l.offset());
    let red = Layout::from_parts(
        rs.iter().map(|p| p.0).collect(),
        rs.iter().map(|p| p.1).collect(),
        0,
    );
    (kept, red)
}

/// The rows along `dim`: storage offset of each row's first element (row-major over the
/// other dims), the row length and the stride between its elements.
pub(super) fn rows_along(l: &Layout, dim: usize) -> (Vec<usize>, usize, usize) {
    let (others, _) = split_layout(l, &[dim]);
    (offsets(&others), l.shape()[dim], l.strides()[dim])
}

/// Like [`rows_along`], but with rows made contiguous: either the input itself when `dim`
/// already has stride 1, or a copy with `dim` moved last.
pub(super) fn contiguous_rows<'a, T: CpuElement>(
    v: &'a [T],
    l: &Layout,
    dim: usize,
) -> (std::borrow::Cow<'a, [T]>, Vec<usize>, usize) {
    let (starts, n, stride) = rows_along(l, dim);
    if stride == 1 || n <= 1 {
        return (std::borrow::Cow::Borrowed(v), starts, n);
    }
    let permuted = l
        .permute("rows", &dim_last_perm(l.ndim(), dim))
        .expect("valid permutation");
    let data = map1(v, &permuted, |x| x);
    let starts = (0..starts.len()).map(|r| r * n).collect();
    (std::borrow::Cow::Owned(data), starts, n)
}

/// The permutation that moves `dim` last.
fn dim_last_perm(ndim: usize, dim: usize) -> Vec<isize> {
    (0..ndim)
        .filter(|&d| d != dim)
        .chain([dim])
        .map(|d| d as isize)
        .collect()
}

/// `buf` holds the result with `dim` moved last (row-major); return it in the original
/// dim order.
pub(super) fn restore_dim_order<U: CpuElement>(buf: Vec<U>, shape: &[usize], dim: usize) -> Vec<U> {
    if dim + 1 >= shape.len() || shape[dim + 1..].iter().all(|&s| s == 1) {
        return buf;
    }
    let perm = dim_last_perm(shape.len(), dim);
    let moved: Vec<usize> = perm.iter().map(|&d| shape[d as usize]).collect();
    // The buffer's layout, viewed with the original dim order.
    let moved_l = Layout::contiguous(&moved);
    let mut strides = vec![0; shape.len()];
    for (pos, &d) in perm.iter().enumerate() {
        strides[d as usize] = moved_l.strides()[pos];
    }
    map1(&buf, &Layout::from_parts(shape.to_vec(), strides, 0), |x| x)
}

/// Map every row along `dim` of `v[l]` to a row of the output with `row_fn` (a scan, a
/// softmax), in parallel over rows, into a buffer with `dim` last; then restore the order.
pub(super) fn map_rows<T: CpuElement, U: CpuElement>(
    v: &[T],
    l: &Layout,
    dim: usize,
    row_fn: impl Fn(&[T], &mut [U]) + Sync,
) -> Vec<U> {
    let (data, starts, n) = contiguous_rows(v, l, dim);
    let mut out = super::allocator::zeros::<U>(starts.len() * n);
    if n > 0 {
        let work = |(o, &s): (&mut [U], &usize)| row_fn(&data[s..s + n], o);
        if out.len() >= PAR_THRESHOLD {
            out.par_chunks_mut(n)
                .zip(starts.par_iter())
                .with_min_len((ROW_CHUNK / n).max(1))
                .for_each(work);
        } else {
            out.chunks_mut(n).zip(starts.iter()).for_each(work);
        }
    }
    restore_dim_order(out, l.shape(), dim)
}
