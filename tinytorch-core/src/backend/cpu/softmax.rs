//! Softmax and log-softmax along one dim on the CPU: one row at a time, in the float type of
//! the element (f32 rows through the vectorised `fast_math::softmax_row_f32`).

use super::fast_math;
use super::rows::map_rows;
use super::unary::Real;
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::{Element, Layout};
use crate::error::{Error, Result};
use half::{bf16, f16};

/// Softmax (or log-softmax) of one contiguous row, in three passes: the max, the sum of
/// `exp(x - max)` (written to `out` for softmax), then the normalisation. Subtracting the
/// max keeps every `exp` argument <= 0, so inputs of +-1000 neither overflow nor give NaN.
fn softmax_row<T: Copy, C: Real>(
    row: &[T],
    out: &mut [T],
    log: bool,
    to: impl Fn(T) -> C,
    from: impl Fn(C) -> T,
) {
    let mut max = C::of(f64::NEG_INFINITY);
    for &x in row {
        let x = to(x);
        if x > max {
            max = x;
        }
    }
    let shifted = |x: T| to(x).add(-max);
    // The sum is accumulated in f64: rows can be long (vocabularies of 50k).
    let mut sum = 0.0f64;
    if log {
        for &x in row {
            sum += shifted(x).exp().f64();
        }
        // (x - max) - log(sum), in this order: folding max and log(sum) into one shift
        // first would round it to the precision of the max (e.g. 1000.3 in f32).
        let log_sum = C::of(sum.ln());
        for (o, &x) in out.iter_mut().zip(row) {
            *o = from(shifted(x).add(-log_sum));
        }
    } else {
        for (o, &x) in out.iter_mut().zip(row) {
            let e = shifted(x).exp();
            sum += e.f64();
            *o = from(e);
        }
        let inv = C::of(1.0 / sum);
        for o in out.iter_mut() {
            *o = from(to(*o).mul(inv));
        }
    }
}

/// Softmax or log-softmax along `dim`; integer inputs are not accepted (the ops layer casts).
/// The layout has at least one dim (the ops layer views a 0-d tensor as a row of one).
pub fn softmax(s: &CpuStorage, l: &Layout, dim: usize, log: bool) -> Result<CpuStorage> {
    fn go<T: CpuElement, C: Real>(
        v: &[T],
        l: &Layout,
        dim: usize,
        log: bool,
        to: fn(T) -> C,
        from: fn(C) -> T,
    ) -> CpuStorage {
        CpuStorage::from_vec(map_rows(v, l, dim, |r, o: &mut [T]| {
            softmax_row(r, o, log, to, from)
        }))
    }
    Ok(match s {
        CpuStorage::F32(v) => CpuStorage::F32(
            map_rows(v, l, dim, |r, o: &mut [f32]| {
                fast_math::softmax_row_f32(r, o, log)
            })
            .into(),
        ),
        CpuStorage::F64(v) => go(v, l, dim, log, |x| x, |x| x),
        CpuStorage::F16(v) => go(v, l, dim, log, |x: f16| x.to_f32(), f16::from_f32),
        CpuStorage::BF16(v) => go(
            v,
            l,
            dim,
            log,
            |x: bf16| x.to_f32(),
            <bf16 as Element>::from_f32,
        ),
        _ => {
            return Err(Error::unsupported_dtype(
                if log { "log_softmax" } else { "softmax" },
                s.dtype(),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_row_is_stable() {
        let s = CpuStorage::F32(vec![1000.0, -1000.0, 0.0, 1000.0].into());
        let y = softmax(&s, &Layout::contiguous(&[4]), 0, false)
            .unwrap()
            .to_f64_vec();
        assert_eq!(y, vec![0.5, 0.0, 0.0, 0.5]);
        let y = softmax(&s, &Layout::contiguous(&[4]), 0, true)
            .unwrap()
            .to_f64_vec();
        assert!(y.iter().all(|v| v.is_finite()));
    }
}
