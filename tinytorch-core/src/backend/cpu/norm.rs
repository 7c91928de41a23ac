//! Fused LayerNorm and RMSNorm on the CPU, over the last `n` elements of each row of a
//! contiguous `(rows, n)` input. Per row, the forward makes one pass for the statistics
//! (two-pass mean and variance: the row is in L1 by the second) and one for normalise +
//! affine, and keeps only `mean` and `rstd = 1 / sqrt(var + eps)` per row for the backward.
//! The backward is closed-form:
//!
//! ```text
//! xhat = (x - mean) * rstd            (RMSNorm: mean = 0, var = mean(x^2))
//! gw   = g * weight
//! dx   = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))     (RMSNorm: no mean(gw) term)
//! dweight = sum over rows of g * xhat,  dbias = sum over rows of g
//! ```
//!
//! Sums run in 8 independent lanes so that LLVM vectorises them (a single accumulator is a
//! serial dependency it may not reorder). Rows are spread over rayon threads only when the
//! problem is large enough to pay for the hand-off.

use super::float::KernelFloat;
use crate::backend::{NormKind, NormWanted};
use rayon::prelude::*;

/// Elements per rayon task (and the size below which everything stays on one thread), as in
/// the strided elementwise kernels.
const TASK_ELEMS: usize = 16 * 1024;
const LANES: usize = 8;

/// The optional affine parameters, each of length `n`.
#[derive(Clone, Copy)]
pub struct Affine<'a, T> {
    pub weight: Option<&'a [T]>,
    pub bias: Option<&'a [T]>,
}

/// The per-row statistics the forward saves for the backward (`mean` is 0 for RMSNorm).
pub struct NormStats<T> {
    pub mean: Vec<T>,
    pub rstd: Vec<T>,
}

/// `sum_i f(a_i, b_i)` in 8 lanes.
#[inline(always)]
pub(super) fn lane_sum<T: KernelFloat>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut acc = [T::ZERO; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += f(x[l], y[l]);
        }
    }
    let mut tail = T::ZERO;
    for (&x, &y) in ra.iter().zip(rb) {
        tail += f(x, y);
    }
    // Pairwise, so that the lanes' rounding does not depend on the order of addition.
    let q = [
        acc[0] + acc[4],
        acc[1] + acc[5],
        acc[2] + acc[6],
        acc[3] + acc[7],
    ];
    (q[0] + q[2]) + (q[1] + q[3]) + tail
}

/// Rows per task: at least one, about `TASK_ELEMS` elements.
fn rows_per_task(n: usize) -> usize {
    (TASK_ELEMS / n.max(1)).max(1)
}

/// Forward over a contiguous `(rows, n)` input `x`: the output and the row statistics.
pub fn forward<T: KernelFloat>(
    x: &[T],
    n: usize,
    affine: Affine<T>,
    eps: f64,
    kind: NormKind,
) -> (Vec<T>, NormStats<T>) {
    assert!(n > 0 && x.len().is_multiple_of(n), "norm: bad row length");
    let rows = x.len() / n;
    // Every element is written below: no memset.
    let mut out = super::allocator::scratch::<T>(x.len());
    let mut mean = vec![T::ZERO; rows];
    let mut rstd = vec![T::ZERO; rows];
    let per = rows_per_task(n);
    let task = |r0: usize, out_t: &mut [T], mean_t: &mut [T], rstd_t: &mut [T]| {
        for (r, o) in out_t.chunks_exact_mut(n).enumerate() {
            let row = &x[(r0 + r) * n..(r0 + r + 1) * n];
            (mean_t[r], rstd_t[r]) = forward_row(row, o, affine, eps, kind);
        }
    };
    if x.len() <= TASK_ELEMS * 2 {
        task(0, &mut out, &mut mean, &mut rstd);
    } else {
        out.par_chunks_mut(per * n)
            .zip(mean.par_chunks_mut(per))
            .zip(rstd.par_chunks_mut(per))
            .enumerate()
            .for_each(|(ti, ((o, m), s))| task(ti * per, o, m, s));
    }
    (out, NormStats { mean, rstd })
}

/// One row: write `out`, return `(mean, rstd)`.
#[inline(always)]
fn forward_row<T: KernelFloat>(
    x: &[T],
    out: &mut [T],
    affine: Affine<T>,
    eps: f64,
    kind: NormKind,
) -> (T, T) {
    let inv_n = 1.0 / x.len() as f64;
    let mean = match kind {
        NormKind::Layer => T::of(lane_sum(x, x, |a, _| a).f64() * inv_n),
        NormKind::Rms => T::ZERO,
    };
    let var = lane_sum(x, x, |a, _| (a - mean) * (a - mean)).f64() * inv_n;
    let rstd = T::of(1.0 / (var + eps).sqrt());
    match (affine.weight, affine.bias) {
        (Some(w), Some(b)) => {
            for (((o, &v), &w), &b) in out.iter_mut().zip(x).zip(w).zip(b) {
                *o = (v - mean) * rstd * w + b;
            }
        }
        (Some(w), None) => {
            for ((o, &v), &w) in out.iter_mut().zip(x).zip(w) {
                *o = (v - mean) * rstd * w;
            }
        }
        (None, Some(b)) => {
            for ((o, &v), &b) in out.iter_mut().zip(x).zip(b) {
                *o = (v - mean) * rstd + b;
            }
        }
        (None, None) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = (v - mean) * rstd;
            }
        }
    }
    (mean, rstd)
}

/// The gradients the backward returns (each `None` when not asked for).
pub struct NormGrads<T> {
    pub dx: Option<Vec<T>>,
    pub dweight: Option<Vec<T>>,
    pub dbias: Option<Vec<T>>,
}

/// Backward from the upstream gradient `g` (contiguous, like `x`), with the forward's input,
/// weight and statistics.
pub fn backward<T: KernelFloat>(
    x: &[T],
    g: &[T],
    n: usize,
    weight: Option<&[T]>,
    stats: &NormStats<T>,
    kind: NormKind,
    want: NormWanted,
) -> NormGrads<T> {
    let rows = x.len() / n;
    let per = rows_per_task(n);
    // Every element is written by `dx_row`: no memset.
    let mut dx = super::allocator::scratch::<T>(if want.x { x.len() } else { 0 });
    // One task's rows: its dx rows (if wanted) and its partial dweight / dbias.
    let task = |r0: usize, nrows: usize, dx_t: &mut [T]| -> (Vec<T>, Vec<T>) {
        let mut dw = vec![T::ZERO; if want.weight { n } else { 0 }];
        let mut db = vec![T::ZERO; if want.bias { n } else { 0 }];
        for r in r0..r0 + nrows {
            let (xr, gr) = (&x[r * n..(r + 1) * n], &g[r * n..(r + 1) * n]);
            let (mean, rstd) = (stats.mean[r], stats.rstd[r]);
            if want.x {
                let dxr = &mut dx_t[(r - r0) * n..(r - r0 + 1) * n];
                dx_row(xr, gr, weight, mean, rstd, kind, dxr);
            }
            if want.weight {
                for ((d, &xv), &gv) in dw.iter_mut().zip(xr).zip(gr) {
                    *d += gv * ((xv - mean) * rstd);
                }
            }
            if want.bias {
                for (d, &gv) in db.iter_mut().zip(gr) {
                    *d += gv;
                }
            }
        }
        (dw, db)
    };
    let (dw, db) = if x.len() <= TASK_ELEMS * 2 {
        task(0, rows, &mut dx)
    } else {
        let tasks = rows.div_ceil(per);
        let sum = |a: Vec<T>, b: Vec<T>| -> Vec<T> {
            if a.is_empty() {
                return b;
            }
            a.into_iter().zip(b).map(|(u, v)| u + v).collect()
        };
        let reduce =
            |(a1, b1): (Vec<T>, Vec<T>), (a2, b2): (Vec<T>, Vec<T>)| (sum(a1, a2), sum(b1, b2));
        let count = |ti: usize| per.min(rows - ti * per);
        if want.x {
            dx.par_chunks_mut(per * n)
                .enumerate()
                .map(|(ti, d)| task(ti * per, count(ti), d))
                .reduce(|| (Vec::new(), Vec::new()), reduce)
        } else {
            (0..tasks)
                .into_par_iter()
                .map(|ti| task(ti * per, count(ti), &mut []))
                .reduce(|| (Vec::new(), Vec::new()), reduce)
        }
    };
    NormGrads {
        dx: want.x.then_some(dx),
        dweight: want.weight.then_some(dw),
        dbias: want.bias.then_some(db),
    }
}

/// `dx` of one row.
#[inline(always)]
fn dx_row<T: KernelFloat>(
    x: &[T],
    g: &[T],
    weight: Option<&[T]>,
    mean: T,
    rstd: T,
    kind: NormKind,
    dx: &mut [T],
) {
    let inv_n = 1.0 / x.len() as f64;
    // gw = g * weight, written into dx first so that the sums below read one slice.
    match weight {
        Some(w) => {
            for ((d, &gv), &wv) in dx.iter_mut().zip(g).zip(w) {
                *d = gv * wv;
            }
        }
        None => dx.copy_from_slice(g),
    }
    // mean(gw * xhat) = rstd * mean(gw * (x - mean)).
    let c_xhat = T::of(lane_sum(dx, x, |gw, v| gw * (v - mean)).f64() * inv_n * rstd.f64());
    let c_mean = match kind {
        NormKind::Layer => T::of(lane_sum(dx, dx, |gw, _| gw).f64() * inv_n),
        NormKind::Rms => T::ZERO,
    };
    for (d, &v) in dx.iter_mut().zip(x) {
        let xhat = (v - mean) * rstd;
        *d = rstd * (*d - c_mean - xhat * c_xhat);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The maths written out in f64, one element at a time.
    fn reference(x: &[f64], n: usize, w: &[f64], b: &[f64], eps: f64, kind: NormKind) -> Vec<f64> {
        x.chunks(n)
            .flat_map(|row| {
                let mean = match kind {
                    NormKind::Layer => row.iter().sum::<f64>() / n as f64,
                    NormKind::Rms => 0.0,
                };
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
                let rstd = 1.0 / (var + eps).sqrt();
                row.iter()
                    .enumerate()
                    .map(move |(j, v)| (v - mean) * rstd * w[j] + b[j])
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn forward_matches_reference_on_one_and_many_threads() {
        // 13 columns: lanes and a tail; 5000 rows: the parallel path.
        for rows in [3usize, 5000] {
            let n = 13;
            let x: Vec<f64> = (0..rows * n)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.07)
                .collect();
            let w: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 0.1).collect();
            let b: Vec<f64> = (0..n).map(|j| j as f64 * -0.03).collect();
            for kind in [NormKind::Layer, NormKind::Rms] {
                let affine = Affine {
                    weight: Some(&w[..]),
                    bias: Some(&b[..]),
                };
                let (out, stats) = forward(&x, n, affine, 1e-5, kind);
                let want = reference(&x, n, &w, &b, 1e-5, kind);
                for (o, r) in out.iter().zip(&want) {
                    assert!((o - r).abs() < 1e-12, "{kind:?}: {o} vs {r}");
                }
                assert_eq!(stats.rstd.len(), rows);
            }
        }
    }
}
