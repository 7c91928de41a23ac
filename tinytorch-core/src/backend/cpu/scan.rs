//! Inclusive scans along one dim on the CPU: cumulative sum and product, and the suffix sum
//! that is the cumulative sum's backward.

use super::rows::map_rows;
use super::{CpuElement, CpuStorage};
use crate::backend::{BackendStorage, ScanOp};
use crate::base::{DType, Layout};
use crate::error::Result;

/// Inclusive scan of one contiguous row with accumulator `A`.
fn scan_row<T: Copy, A: Copy, U>(
    row: &[T],
    out: &mut [U],
    init: A,
    step: impl Fn(A, T) -> A,
    finish: impl Fn(A) -> U,
) {
    let mut acc = init;
    for (o, &x) in out.iter_mut().zip(row) {
        acc = step(acc, x);
        *o = finish(acc);
    }
}

/// Inclusive scan along `dim`. Floats accumulate in f64; integers and bool give i64.
/// `RevCumSum` sums from the end of the dim (the backward of `CumSum`).
pub fn scan(s: &CpuStorage, l: &Layout, op: ScanOp, dim: usize) -> Result<CpuStorage> {
    if l.ndim() == 0 {
        return match s {
            CpuStorage::Bool(_) | CpuStorage::U8(_) | CpuStorage::I32(_) => {
                s.to_dtype(l, DType::I64)
            }
            _ => s.to_contiguous(l),
        };
    }
    if op == ScanOp::RevCumSum {
        // Reverse the dim with a negative walk: scan the row backwards.
        return rev_cumsum(s, l, dim);
    }
    fn float<T: CpuElement>(v: &[T], l: &Layout, dim: usize, op: ScanOp) -> CpuStorage {
        let out = match op {
            ScanOp::CumSum => map_rows(v, l, dim, |r, o: &mut [T]| {
                scan_row(r, o, 0.0, |a, x: T| a + x.to_f64(), T::from_f64)
            }),
            _ => map_rows(v, l, dim, |r, o: &mut [T]| {
                scan_row(r, o, 1.0, |a, x: T| a * x.to_f64(), T::from_f64)
            }),
        };
        CpuStorage::from_vec(out)
    }
    fn int<T: CpuElement>(v: &[T], l: &Layout, dim: usize, op: ScanOp) -> CpuStorage {
        let out = match op {
            ScanOp::CumSum => map_rows(v, l, dim, |r, o: &mut [i64]| {
                scan_row(r, o, 0i64, |a, x: T| a.wrapping_add(x.to_i64()), |a| a)
            }),
            _ => map_rows(v, l, dim, |r, o: &mut [i64]| {
                scan_row(r, o, 1i64, |a, x: T| a.wrapping_mul(x.to_i64()), |a| a)
            }),
        };
        CpuStorage::I64(out.into())
    }
    Ok(match s {
        CpuStorage::F32(v) => float(v, l, dim, op),
        CpuStorage::F64(v) => float(v, l, dim, op),
        CpuStorage::F16(v) => float(v, l, dim, op),
        CpuStorage::BF16(v) => float(v, l, dim, op),
        CpuStorage::I64(v) => int(v, l, dim, op),
        CpuStorage::I32(v) => int(v, l, dim, op),
        CpuStorage::U8(v) => int(v, l, dim, op),
        CpuStorage::Bool(v) => int(v, l, dim, op),
    })
}

/// Suffix sums along `dim`: `out[i] = sum_{j >= i} x[j]`, same dtype rules as `CumSum`.
fn rev_cumsum(s: &CpuStorage, l: &Layout, dim: usize) -> Result<CpuStorage> {
    fn rev<T: Copy, U>(r: &[T], o: &mut [U], step: impl Fn(f64, T) -> f64, fin: impl Fn(f64) -> U) {
        let mut acc = 0.0;
        for (o, &x) in o.iter_mut().zip(r).rev() {
            acc = step(acc, x);
            *o = fin(acc);
        }
    }
    fn float<T: CpuElement>(v: &[T], l: &Layout, dim: usize) -> CpuStorage {
        CpuStorage::from_vec(map_rows(v, l, dim, |r, o: &mut [T]| {
            rev(r, o, |a, x: T| a + x.to_f64(), T::from_f64)
        }))
    }
    fn int<T: CpuElement>(v: &[T], l: &Layout, dim: usize) -> CpuStorage {
        CpuStorage::I64(
            map_rows(v, l, dim, |r, o: &mut [i64]| {
                let mut acc = 0i64;
                for (o, &x) in o.iter_mut().zip(r).rev() {
                    acc = acc.wrapping_add(x.to_i64());
                    *o = acc;
                }
            })
            .into(),
        )
    }
    Ok(match s {
        CpuStorage::F32(v) => float(v, l, dim),
        CpuStorage::F64(v) => float(v, l, dim),
        CpuStorage::F16(v) => float(v, l, dim),
        CpuStorage::BF16(v) => float(v, l, dim),
        CpuStorage::I64(v) => int(v, l, dim),
        CpuStorage::I32(v) => int(v, l, dim),
        CpuStorage::U8(v) => int(v, l, dim),
        CpuStorage::Bool(v) => int(v, l, dim),
    })
}
