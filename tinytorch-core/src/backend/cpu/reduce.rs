//! Reductions (sum, prod, max, min, all, any) over any set of dims and arg-reductions, on
//! the CPU (scans are in `scan.rs`, softmax in `softmax.rs`, both over `rows.rs`).
//!
//! Every reduction is a [`Fold`]: an accumulator with `init`, `step`, `merge` and `finish`.
//! The driver [`reduce_typed`] splits the input layout into the *kept* dims (one output
//! element each) and the *reduced* dims, then picks one of four paths:
//! - rows: the reduced dims merge into one contiguous run, so each output folds a slice
//!   (parallel over outputs, or over chunks of one long row);
//! - columns: the kept dims merge into one contiguous run, so the kernel adds whole input rows
//!   into a vector of accumulators (a vectorisable loop), e.g. summing over the batch dim;
//! - segments: the reduced dims end in a contiguous run (e.g. the per-channel sum of an
//!   NCHW tensor over N, H and W), so each output folds several slices;
//! - otherwise the input is copied with the reduced dims last, then folded as rows.
//!
//! [`reduce_reference`] is the naive path (one output at a time, element by element) that the
//! tests compare the fast paths against.

use super::rows::{rows_along, split_layout, ROW_CHUNK};
use super::strided::{map1, offsets, wide, Loop, PAR_THRESHOLD};
use super::{CpuElement, CpuStorage};
use crate::backend::{ArgReduceOp, BackendStorage, ReduceOp};
use crate::base::{DType, Element, Layout};
use crate::error::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::ops::Add;

/// Shortest contiguous run of reduced elements folded in place; shorter runs are gathered
/// into rows first.
const MIN_SEGMENT: usize = 16;
/// Independent accumulators in the blocked sum: enough for the compiler to use full vector
/// registers and hide the add latency.
const LANES: usize = 16;
/// Elements per block of the blocked sum: each block is summed in the element's precision,
/// the block sums are added in f64, which bounds the rounding error of long f32 sums.
const BLOCK: usize = 2048;

// ---------------------------------------------------------------------------------------
// Folds
// ---------------------------------------------------------------------------------------

/// One reduction: how to start, add an element, combine two partial results and finish.
/// `merge` must be associative so that the parallel paths agree with the sequential one.
trait Fold<T>: Sync {
    type Acc: Copy + Send + Sync;
    type Out: CpuElement;
    fn init(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, x: T) -> Self::Acc;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn finish(&self, acc: Self::Acc) -> Self::Out;
    /// Fold a contiguous slice; folds override this with faster loops.
    fn fold_slice(&self, xs: &[T]) -> Self::Acc
    where
        T: Copy,
    {
        xs.iter().fold(self.init(), |a, &x| self.step(a, x))
    }
}

/// Sum of a slice in blocks: `LANES` accumulators of type `A` inside a block (vectorisable),
/// block sums added in f64.
fn blocked_sum<T: Copy, A: Copy + Default + Add<Output = A> + Into<f64>>(
    xs: &[T],
    conv: impl Fn(T) -> A,
) -> f64 {
    let mut total = 0.0f64;
    for block in xs.chunks(BLOCK) {
        let mut lanes = [A::default(); LANES];
        let mut it = block.chunks_exact(LANES);
        for c in &mut it {
            for i in 0..LANES {
                lanes[i] = lanes[i] + conv(c[i]);
            }
        }
        // Pairwise combination of the lanes.
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            for i in 0..width {
                lanes[i] = lanes[i] + lanes[i + width];
            }
        }
        let mut s = lanes[0];
        for &x in it.remainder() {
            s = s + conv(x);
        }
        total += s.into();
    }
    total
}

/// Float element types that know their fast blocked sum (f64 sums in f64, the others in f32).
trait SumElement: Element {
    fn block_sum(xs: &[Self]) -> f64;
}
impl SumElement for f32 {
    fn block_sum(xs: &[f32]) -> f64 {
        blocked_sum(xs, |x| x)
    }
}
impl SumElement for f64 {
    fn block_sum(xs: &[f64]) -> f64 {
        blocked_sum(xs, |x| x)
    }
}
impl SumElement for f16 {
    fn block_sum(xs: &[f16]) -> f64 {
        blocked_sum(xs, |x: f16| x.to_f32())
    }
}
impl SumElement for bf16 {
    fn block_sum(xs: &[bf16]) -> f64 {
        blocked_sum(xs, |x: bf16| x.to_f32())
    }
}

/// Sum of floats, accumulated in f64 across blocks.
struct SumFloat;
impl<T: SumElement + CpuElement> Fold<T> for SumFloat {
    type Acc = f64;
    type Out = T;
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: T) -> f64 {
        acc + x.to_f64()
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn finish(&self, acc: f64) -> T {
        T::from_f64(acc)
    }
    fn fold_slice(&self, xs: &[T]) -> f64 {
        T::block_sum(xs)
    }
}

/// Product of floats, accumulated in f64.
struct ProdFloat;
impl<T: CpuElement> Fold<T> for ProdFloat {
    type Acc = f64;
    type Out = T;
    fn init(&self) -> f64 {
        1.0
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: T) -> f64 {
        acc * x.to_f64()
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn finish(&self, acc: f64) -> T {
        T::from_f64(acc)
    }
}

/// Sum of i64, wrapping on overflow as PyTorch does.
struct SumInt;
impl Fold<i64> for SumInt {
    type Acc = i64;
    type Out = i64;
    fn init(&self) -> i64 {
        0
    }
    #[inline(always)]
    fn step(&self, acc: i64, x: i64) -> i64 {
        acc.wrapping_add(x)
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    fn finish(&self, acc: i64) -> i64 {
        acc
    }
}

/// Product of i64, wrapping on overflow.
struct ProdInt;
impl Fold<i64> for ProdInt {
    type Acc = i64;
    type Out = i64;
    fn init(&self) -> i64 {
        1
    }
    #[inline(always)]
    fn step(&self, acc: i64, x: i64) -> i64 {
        acc.wrapping_mul(x)
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    fn finish(&self, acc: i64) -> i64 {
        acc
    }
}

/// `x != x` is true only for NaN; written generically so that integer types compile it away.
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialOrd>(x: T) -> bool {
    x != x
}

/// Maximum (`MAX = true`) or minimum; NaN propagates, as in PyTorch.
struct Extreme<const MAX: bool>;
impl<T: CpuElement, const MAX: bool> Fold<T> for Extreme<MAX> {
    type Acc = T;
    type Out = T;
    fn init(&self) -> T {
        // -inf/+inf saturate to the integer types' min/max.
        T::from_f64(if MAX {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T) -> T {
        let better = if MAX { x > acc } else { x < acc };
        if better || is_nan(x) {
            x
        } else {
            acc
        }
    }
    fn merge(&self, a: T, b: T) -> T {
        if is_nan(a) {
            a
        } else {
            self.step(a, b)
        }
    }
    fn finish(&self, acc: T) -> T {
        acc
    }
    fn fold_slice(&self, xs: &[T]) -> T {
        // Once NaN is found the answer is known; `step` never replaces a NaN accumulator
        // with a non-NaN element since comparisons with NaN are false.
        xs.iter().fold(
            self.init(),
            |a, &x| if is_nan(a) { a } else { self.step(a, x) },
        )
    }
}

/// All (`ALL = true`) or any element non-zero; bool output.
struct Logical<const ALL: bool>;
impl<T: CpuElement, const ALL: bool> Fold<T> for Logical<ALL> {
    type Acc = bool;
    type Out = bool;
    fn init(&self) -> bool {
        ALL
    }
    #[inline(always)]
    fn step(&self, acc: bool, x: T) -> bool {
        if ALL {
            acc && x != T::zero()
        } else {
            acc || x != T::zero()
        }
    }
    fn merge(&self, a: bool, b: bool) -> bool {
        if ALL {
            a && b
        } else {
            a || b
        }
    }
    fn finish(&self, acc: bool) -> bool {
        acc
    }
    fn fold_slice(&self, xs: &[T]) -> bool {
        if ALL {
            xs.iter().all(|&x| x != T::zero())
        } else {
            xs.iter().any(|&x| x != T::zero())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reduction driver
// ---------------------------------------------------------------------------------------

/// Reduce `v[l]` over `dims` with `f`; the output is row-major over the kept dims.
fn reduce_typed<T: CpuElement, F: Fold<T>>(
    v: &[T],
    l: &Layout,
    dims: &[usize],
    f: &F,
) -> Vec<F::Out> {
    let (kept, red) = split_layout(l, dims);
    let (n_out, n_red) = (kept.numel(), red.numel());
    if n_out == 0 {
        return vec![];
    }
    if n_red == 0 {
        return vec![f.finish(f.init()); n_out];
    }
    let (rshape, rstrides) = red.merged();
    if rshape.len() == 1 && rstrides[0] == 1 {
        return fold_rows(v, &offsets(&kept), rshape[0], f);
    }
    let (kshape, kstrides) = kept.merged();
    if kshape.len() == 1 && kstrides[0] == 1 {
        return fold_columns(v, kept.offset(), kshape[0], &offsets(&red), f);
    }
    let inner = rshape[rshape.len() - 1];
    if rstrides[rstrides.len() - 1] == 1 && inner >= MIN_SEGMENT {
        // The reduced dims end in a contiguous run (e.g. the sum over (N, H, W) of an NCHW
        // tensor): fold the runs where they lie.
        let k = rshape.len() - 1;
        let outer = Layout::from_parts(rshape[..k].to_vec(), rstrides[..k].to_vec(), 0);
        return fold_segments(v, &offsets(&kept), &offsets(&outer), inner, f);
    }
    // General case: copy with the reduced dims last, then fold contiguous rows.
    let perm: Vec<isize> = (0..l.ndim())
        .filter(|d| !dims.contains(d))
        .chain(dims.iter().copied())
        .map(|d| d as isize)
        .collect();
    let permuted = l.permute("reduce", &perm).expect("valid permutation");
    let data = map1(v, &permuted, |x| x);
    let row_starts: Vec<usize> = (0..n_out).map(|o| o * n_red).collect();
    let out = fold_rows(&data, &row_starts, n_red, f);
    super::allocator::recycle(T::into_storage(data));
    out
}

/// `out[o] = fold of the runs v[k + s .. k + s + len]` for `k = kept[o]` and every `s` in
/// `segments`. The runs are folded in fixed groups whose results merge in order, so the
/// result does not depend on the number of threads.
fn fold_segments<T: CpuElement, F: Fold<T>>(
    v: &[T],
    kept: &[usize],
    segments: &[usize],
    len: usize,
    f: &F,
) -> Vec<F::Out> {
    let group = (ROW_CHUNK / len).max(1);
    let part = |k: usize, segs: &[usize]| {
        segs.iter().fold(f.init(), |a, &s| {
            f.merge(a, f.fold_slice(&v[k + s..k + s + len]))
        })
    };
    let merge_all = |parts: &mut dyn Iterator<Item = F::Acc>| {
        f.finish(parts.fold(f.init(), |a, b| f.merge(a, b)))
    };
    let one = |&k: &usize| merge_all(&mut segments.chunks(group).map(|c| part(k, c)));
    let total = kept.len() * segments.len() * len;
    let threads = rayon::current_num_threads();
    if total < PAR_THRESHOLD || threads == 1 {
        return kept.iter().map(one).collect();
    }
    if kept.len() >= 2 * threads {
        return kept.par_iter().with_min_len(1).map(one).collect();
    }
    // Few outputs: each output's groups of runs in parallel.
    kept.iter()
        .map(|&k| {
            let parts: Vec<F::Acc> = segments.par_chunks(group).map(|c| part(k, c)).collect();
            merge_all(&mut parts.into_iter())
        })
        .collect()
}

/// One output per row `v[start..start + len]`.
fn fold_rows<T: CpuElement, F: Fold<T>>(
    v: &[T],
    starts: &[usize],
    len: usize,
    f: &F,
) -> Vec<F::Out> {
    let total = starts.len() * len;
    let threads = rayon::current_num_threads();
    let fold = |&s: &usize| f.finish(f.fold_slice(&v[s..s + len]));
    if total < PAR_THRESHOLD || threads == 1 {
        return starts.iter().map(fold).collect();
    }
    if starts.len() >= 4 * threads {
        let min_rows = (ROW_CHUNK / len.max(1)).max(1);
        return starts.par_iter().with_min_len(min_rows).map(fold).collect();
    }
    // Few long rows: split each row into fixed chunks (so the result does not depend on the
    // number of threads) and merge the partial results in order.
    starts
        .iter()
        .map(|&s| {
            let parts: Vec<F::Acc> = v[s..s + len]
                .par_chunks(ROW_CHUNK)
                .map(|c| f.fold_slice(c))
                .collect();
            f.finish(parts.into_iter().fold(f.init(), |a, b| f.merge(a, b)))
        })
        .collect()
}

/// `acc[k] = f.step(acc[k], row[k])`: one row of [`fold_columns`], in `wide`'s AVX-512 copy
/// where the CPU has it (a bf16 bias gradient's column sums widen each element).
struct FoldRow<'a, T, F: Fold<T>> {
    acc: &'a mut [F::Acc],
    row: &'a [T],
    f: &'a F,
}

impl<T: CpuElement, F: Fold<T>> Loop for FoldRow<'_, T, F> {
    #[inline(always)]
    fn run(self) {
        for (a, &x) in self.acc.iter_mut().zip(self.row) {
            *a = self.f.step(*a, x);
        }
    }
}

/// `out[k] = fold over r of v[base + r + k]` for `k < width`, `r` in `row_offsets`: adds whole
/// input rows into a row of accumulators.
fn fold_columns<T: CpuElement, F: Fold<T>>(
    v: &[T],
    base: usize,
    width: usize,
    row_offsets: &[usize],
    f: &F,
) -> Vec<F::Out> {
    let accumulate = |k0: usize, k1: usize, rows: &[usize]| -> Vec<F::Acc> {
        let mut acc = vec![f.init(); k1 - k0];
        for &r in rows {
            let row = &v[base + r + k0..base + r + k1];
            wide(FoldRow {
                acc: &mut acc,
                row,
                f,
            });
        }
        acc
    };
    let total = width * row_offsets.len();
    let threads = rayon::current_num_threads();
    let acc = if total < PAR_THRESHOLD || threads == 1 {
        accumulate(0, width, row_offsets)
    } else if width >= 4096 {
        // Wide rows: each task owns a band of columns.
        let band = width.div_ceil(4 * threads).max(1024);
        let bands: Vec<Vec<F::Acc>> = (0..width.div_ceil(band))
            .into_par_iter()
            .map(|b| accumulate(b * band, ((b + 1) * band).min(width), row_offsets))
            .collect();
        bands.concat()
    } else {
        // Narrow rows, many of them: each task folds a group of rows; groups merge in order.
        let group = (ROW_CHUNK / width).max(1);
        let parts: Vec<Vec<F::Acc>> = row_offsets
            .par_chunks(group)
            .map(|rows| accumulate(0, width, rows))
            .collect();
        let mut acc = vec![f.init(); width];
        for p in parts {
            for (a, b) in acc.iter_mut().zip(p) {
                *a = f.merge(*a, b);
            }
        }
        acc
    };
    acc.into_iter().map(|a| f.finish(a)).collect()
}

// The reference path is only called by the tests.
#[cfg_attr(not(test), allow(dead_code))]
/// Naive reference: every output element folds its elements one by one, in row-major order
/// of the reduced dims. Used by tests to check the fast paths.
fn reduce_reference_typed<T: CpuElement, F: Fold<T>>(
    v: &[T],
    l: &Layout,
    dims: &[usize],
    f: &F,
) -> Vec<F::Out> {
    let (kept, red) = split_layout(l, dims);
    let red_offs = offsets(&red);
    offsets(&kept)
        .into_iter()
        .map(|k| f.finish(red_offs.iter().fold(f.init(), |a, &r| f.step(a, v[k + r]))))
        .collect()
}

/// Dispatch a reduction over dtypes and ops; `fold!` is either the fast or the reference
/// driver. Sum/Prod of bool, u8 and i32 are computed on i64 (PyTorch's result dtype);
/// Max/Min of bool are Any/All.
macro_rules! dispatch_reduce {
    ($s:expr, $l:expr, $op:expr, $dims:expr, $driver:ident) => {{
        let (s, l, op, dims) = ($s, $l, $op, $dims);
        match (s, op) {
            (
                CpuStorage::Bool(_) | CpuStorage::U8(_) | CpuStorage::I32(_),
                ReduceOp::Sum | ReduceOp::Prod,
            ) => {
                let cast = s.to_dtype(l, DType::I64)?;
                return $driver(&cast, &Layout::contiguous(l.shape()), op, dims);
            }
            (CpuStorage::Bool(_), ReduceOp::Max) => return $driver(s, l, ReduceOp::Any, dims),
            (CpuStorage::Bool(_), ReduceOp::Min) => return $driver(s, l, ReduceOp::All, dims),
            _ => {}
        }
        macro_rules! float_ops {
            ($v:expr) => {
                match op {
                    ReduceOp::Sum => {
                        CpuStorage::from_vec(reduce_driver!($driver, $v, l, dims, &SumFloat))
                    }
                    ReduceOp::Prod => {
                        CpuStorage::from_vec(reduce_driver!($driver, $v, l, dims, &ProdFloat))
                    }
                    ReduceOp::Max => {
                        CpuStorage::from_vec(reduce_driver!($driver, $v, l, dims, &Extreme::<true>))
                    }
                    ReduceOp::Min => CpuStorage::from_vec(reduce_driver!(
                        $driver,
                        $v,
                        l,
                        dims,
                        &Extreme::<false>
                    )),
                    ReduceOp::All => CpuStorage::Bool(
                        reduce_driver!($driver, $v, l, dims, &Logical::<true>).into(),
                    ),
                    ReduceOp::Any => CpuStorage::Bool(
                        reduce_driver!($driver, $v, l, dims, &Logical::<false>).into(),
                    ),
                }
            };
        }
        // u8 and i32: extremes in their own type; sums and products were cast above.
        macro_rules! small_int_ops {
            ($variant:ident, $v:expr) => {
                match op {
                    ReduceOp::Max => CpuStorage::$variant(
                        reduce_driver!($driver, $v, l, dims, &Extreme::<true>).into(),
                    ),
                    ReduceOp::Min => CpuStorage::$variant(
                        reduce_driver!($driver, $v, l, dims, &Extreme::<false>).into(),
                    ),
                    ReduceOp::All => CpuStorage::Bool(
                        reduce_driver!($driver, $v, l, dims, &Logical::<true>).into(),
                    ),
                    ReduceOp::Any => CpuStorage::Bool(
                        reduce_driver!($driver, $v, l, dims, &Logical::<false>).into(),
                    ),
                    ReduceOp::Sum | ReduceOp::Prod => unreachable!("cast to i64 above"),
                }
            };
        }
        Ok(match s {
            CpuStorage::F32(v) => float_ops!(v.as_slice()),
            CpuStorage::F64(v) => float_ops!(v.as_slice()),
            CpuStorage::F16(v) => float_ops!(v.as_slice()),
            CpuStorage::BF16(v) => float_ops!(v.as_slice()),
            CpuStorage::I64(v) => match op {
                ReduceOp::Sum => {
                    CpuStorage::I64(reduce_driver!($driver, v, l, dims, &SumInt).into())
                }
                ReduceOp::Prod => {
                    CpuStorage::I64(reduce_driver!($driver, v, l, dims, &ProdInt).into())
                }
                ReduceOp::Max => {
                    CpuStorage::I64(reduce_driver!($driver, v, l, dims, &Extreme::<true>).into())
                }
                ReduceOp::Min => {
                    CpuStorage::I64(reduce_driver!($driver, v, l, dims, &Extreme::<false>).into())
                }
                ReduceOp::All => {
                    CpuStorage::Bool(reduce_driver!($driver, v, l, dims, &Logical::<true>).into())
                }
                ReduceOp::Any => {
                    CpuStorage::Bool(reduce_driver!($driver, v, l, dims, &Logical::<false>).into())
                }
            },
            CpuStorage::U8(v) => small_int_ops!(U8, v),
            CpuStorage::I32(v) => small_int_ops!(I32, v),
            CpuStorage::Bool(v) => match op {
                ReduceOp::All => {
                    CpuStorage::Bool(reduce_driver!($driver, v, l, dims, &Logical::<true>).into())
                }
                ReduceOp::Any => {
                    CpuStorage::Bool(reduce_driver!($driver, v, l, dims, &Logical::<false>).into())
                }
                _ => unreachable!("handled above"),
            },
        })
    }};
}

/// Picks the typed driver matching the storage-level entry point.
macro_rules! reduce_driver {
    (reduce, $v:expr, $l:expr, $dims:expr, $f:expr) => {
        reduce_typed($v, $l, $dims, $f)
    };
    (reduce_reference, $v:expr, $l:expr, $dims:expr, $f:expr) => {
        reduce_reference_typed($v, $l, $dims, $f)
    };
}

/// Check the dims and reject max/min over an empty reduction.
pub(crate) fn check_reduce(l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<()> {
    if let Some(&d) = dims.iter().find(|&&d| d >= l.ndim()) {
        return Err(Error::index(
            "reduce",
            format!("dim {d} out of range for shape {:?}", l.shape()),
        ));
    }
    let kept_numel: usize = (0..l.ndim())
        .filter(|d| !dims.contains(d))
        .map(|d| l.shape()[d])
        .product();
    let red_numel: usize = dims.iter().map(|&d| l.shape()[d]).product();
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && red_numel == 0 && kept_numel > 0 {
        return Err(Error::invalid(
            "reduce",
            format!(
                "cannot compute {op:?} over dims {dims:?} of shape {:?}: the reduction is empty",
                l.shape()
            ),
        ));
    }
    Ok(())
}

/// Reduce over `dims` (sorted, unique), keeping them as size 1 (row-major output of the
/// keepdim shape). Fast paths; see the module docs.
pub fn reduce(s: &CpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CpuStorage> {
    check_reduce(l, op, dims)?;
    dispatch_reduce!(s, l, op, dims, reduce)
}

#[cfg_attr(not(test), allow(dead_code))]
/// The naive reference of [`reduce`]: same results up to floating-point summation order.
pub fn reduce_reference(
    s: &CpuStorage,
    l: &Layout,
    op: ReduceOp,
    dims: &[usize],
) -> Result<CpuStorage> {
    check_reduce(l, op, dims)?;
    dispatch_reduce!(s, l, op, dims, reduce_reference)
}

// ---------------------------------------------------------------------------------------
// Along one dim: arg-reductions
// ---------------------------------------------------------------------------------------

/// Index of the first maximum (`MAX`) or minimum of `n` elements at `off + i * stride`.
/// NaN counts as the extreme, as in PyTorch.
fn arg_extreme<T: Element, const MAX: bool>(v: &[T], off: usize, n: usize, stride: usize) -> i64 {
    let mut best = v[off];
    let mut idx = 0;
    if is_nan(best) {
        return 0;
    }
    for i in 1..n {
        let x = v[off + i * stride];
        if is_nan(x) {
            return i as i64;
        }
        if (MAX && x > best) || (!MAX && x < best) {
            best = x;
            idx = i;
        }
    }
    idx as i64
}

/// Index of the max/min along `dim` (first occurrence); i64 output with `dim` set to 1.
pub fn arg_reduce(s: &CpuStorage, l: &Layout, op: ArgReduceOp, dim: usize) -> Result<CpuStorage> {
    if l.ndim() == 0 {
        return Ok(CpuStorage::I64(vec![0].into()));
    }
    let (starts, n, stride) = rows_along(l, dim);
    if n == 0 && !starts.is_empty() {
        return Err(Error::invalid(
            "argmax/argmin",
            format!(
                "cannot take the arg{} over dim {dim} of shape {:?}: it is empty",
                if op == ArgReduceOp::ArgMax {
                    "max"
                } else {
                    "min"
                },
                l.shape()
            ),
        ));
    }
    fn go<T: CpuElement>(
        v: &[T],
        starts: &[usize],
        n: usize,
        stride: usize,
        op: ArgReduceOp,
    ) -> Vec<i64> {
        let f = |&o: &usize| match op {
            ArgReduceOp::ArgMax => arg_extreme::<T, true>(v, o, n, stride),
            ArgReduceOp::ArgMin => arg_extreme::<T, false>(v, o, n, stride),
        };
        if starts.len() * n >= PAR_THRESHOLD {
            starts
                .par_iter()
                .with_min_len((ROW_CHUNK / n.max(1)).max(1))
                .map(f)
                .collect()
        } else {
            starts.iter().map(f).collect()
        }
    }
    Ok(CpuStorage::I64(
        crate::with_cpu_storage!(s, v => go(v, &starts, n, stride, op).into()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    fn close(a: &CpuStorage, b: &CpuStorage, tol: f64) {
        let (a, b) = (a.to_f64_vec(), b.to_f64_vec());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= tol * (1.0 + y.abs()) || (x.is_nan() && y.is_nan()),
                "{x} vs {y}"
            );
        }
    }

    /// Every fast path (rows, columns, segments, general copy; sequential and parallel) against the
    /// naive reference, for every op.
    #[test]
    fn fast_paths_match_reference() {
        let cases: Vec<(Vec<usize>, Vec<usize>)> = vec![
            (vec![4, 5, 6], vec![2]),
            (vec![4, 5, 6], vec![0]),
            (vec![4, 5, 6], vec![1]),
            (vec![4, 5, 6], vec![0, 2]),
            (vec![4, 5, 6], vec![]),
            (vec![4, 5, 6], vec![0, 1, 2]),
            (vec![300, 257], vec![0]),
            (vec![300, 257], vec![1]),
            (vec![3, 40000], vec![1]),
            (vec![40000, 3], vec![0]),
            (vec![9000, 5], vec![1]),
            (vec![2, 70000], vec![0]),
            // Segments: per-channel reductions of NCHW tensors (few and many channels).
            (vec![8, 3, 5, 20], vec![0, 2, 3]),
            (vec![16, 16, 32, 32], vec![0, 2, 3]),
            (vec![64, 2, 32, 32], vec![0, 2, 3]),
            (vec![6, 4, 40], vec![0, 2]),
        ];
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::All,
            ReduceOp::Any,
        ];
        for (shape, dims) in cases {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = lcg(n, 7).into_iter().map(|x| 1.0 + x * 0.01).collect();
            let s = CpuStorage::F32(data.into());
            let l = Layout::contiguous(&shape);
            let lt = Layout::from_parts(
                shape.iter().rev().copied().collect(),
                Layout::contiguous(&shape)
                    .strides()
                    .iter()
                    .rev()
                    .copied()
                    .collect(),
                0,
            );
            for op in ops {
                for (layout, dims) in [(&l, dims.clone()), (&lt, dims.clone())] {
                    let fast = reduce(&s, layout, op, &dims).unwrap();
                    let slow = reduce_reference(&s, layout, op, &dims).unwrap();
                    close(&fast, &slow, 1e-5);
                }
            }
        }
    }

    #[test]
    fn segment_sums_do_not_depend_on_the_thread_count() {
        for shape in [[64usize, 2, 32, 32], [64, 16, 32, 32]] {
            let n = shape.iter().product();
            let s = CpuStorage::F32(lcg(n, 11).into());
            let sum = || reduce(&s, &Layout::contiguous(&shape), ReduceOp::Sum, &[0, 2, 3]);
            let one_thread = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(sum)
                .unwrap();
            let three_threads = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap()
                .install(sum)
                .unwrap();
            assert_eq!(one_thread, three_threads, "{shape:?}");
        }
    }

    #[test]
    fn large_parallel_sum_is_accurate() {
        let n = (1 << 22) + 13;
        let data = lcg(n, 3);
        let exact: f64 = data.iter().map(|&x| x as f64).sum();
        let s = CpuStorage::F32(data.into());
        let out = reduce(&s, &Layout::contiguous(&[n]), ReduceOp::Sum, &[0])
            .unwrap()
            .to_f64_vec()[0];
        assert!((out - exact).abs() < 1e-3, "{out} vs {exact}");
        let i = CpuStorage::I64((0..n as i64).collect());
        let si = reduce(&i, &Layout::contiguous(&[n]), ReduceOp::Sum, &[0]).unwrap();
        assert_eq!(
            si,
            CpuStorage::I64(vec![(n as i64 - 1) * n as i64 / 2].into())
        );
    }
}
