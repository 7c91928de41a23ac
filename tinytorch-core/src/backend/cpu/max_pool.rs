//! 2-D max pooling on the CPU in one pass: the forward writes each window's maximum and
//! where it was (its index in the input plane), the backward adds each output gradient at
//! that place. The im2col composite it replaces (ops/pool.rs, still the path for other
//! dtypes and devices) built a `(N, C, kh*kw, OH, OW)` copy of the input and reduced it,
//! 2.5-3x slower on LeNet's pools. Planes `(n, c)` are independent, so they are split over
//! threads; within a plane the backward's adds are serial, which makes overlapping windows
//! (stride < kernel) accumulate exactly as PyTorch's kernel does.

use super::CpuElement;
use crate::backend::PoolPlane;
use rayon::prelude::*;

/// Below this many output elements the work stays on one thread.
const PAR_OUTPUTS: usize = 1 << 14;

/// The taps `k` of a window starting at `start` (may be negative: padding) that land inside
/// `0..len`, for kernel size `kernel` and dilation `d`.
fn taps(start: isize, len: usize, kernel: usize, d: usize) -> std::ops::Range<usize> {
    let d = d as isize;
    // First k with start + k*d >= 0, and one past the last with start + k*d < len.
    let lo = if start >= 0 { 0 } else { (-start + d - 1) / d };
    let hi = ((len as isize - start + d - 1) / d).clamp(0, kernel as isize);
    lo as usize..(hi.max(lo)) as usize
}

/// Max and argmax of every window of one plane, as PyTorch's kernel decides them: a later
/// element replaces the maximum when it is larger or NaN (`val > max || isnan(val)`), so
/// equal maxima keep the first and a NaN window reports NaN.
fn forward_plane<T: Copy + PartialOrd>(
    x: &[T],
    g: &PoolPlane,
    is_nan: impl Fn(T) -> bool,
    out: &mut [T],
    idx: &mut [i64],
) {
    let w = g.input[1];
    for oy in 0..g.output[0] {
        let y0 = (oy * g.stride[0]) as isize - g.padding[0] as isize;
        let ky = taps(y0, g.input[0], g.kernel[0], g.dilation[0]);
        for ox in 0..g.output[1] {
            let x0 = (ox * g.stride[1]) as isize - g.padding[1] as isize;
            let kx = taps(x0, w, g.kernel[1], g.dilation[1]);
            let at = |ky: usize, kx: usize| {
                (y0 + (ky * g.dilation[0]) as isize) as usize * w
                    + (x0 + (kx * g.dilation[1]) as isize) as usize
            };
            let mut best_at = at(ky.start, kx.start);
            let mut best = x[best_at];
            for i in ky.clone() {
                for j in kx.clone() {
                    let p = at(i, j);
                    let v = x[p];
                    if v > best || is_nan(v) {
                        best = v;
                        best_at = p;
                    }
                }
            }
            let o = oy * g.output[1] + ox;
            out[o] = best;
            idx[o] = best_at as i64;
        }
    }
}

/// A zeroed buffer of `n` elements from the caching allocator (no fresh pages to fault in
/// on every call of a training loop).
fn zeroed<T: CpuElement>(n: usize) -> Vec<T> {
    let mut v = super::allocator::take::<T>(n);
    v.resize(n, T::default());
    v
}

/// `(output, argmax)` of max pooling `x`, `planes` contiguous `(H, W)` planes; the argmax
/// is the index within the input plane (i64, so that its buffer comes from the pool too).
pub fn forward<T: CpuElement + PartialOrd>(
    x: &[T],
    planes: usize,
    g: &PoolPlane,
    is_nan: impl Fn(T) -> bool + Sync,
) -> (Vec<T>, Vec<i64>) {
    let (in_len, out_len) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
    let mut out = zeroed::<T>(planes * out_len);
    let mut idx = zeroed::<i64>(planes * out_len);
    if out_len == 0 || in_len == 0 {
        return (out, idx);
    }
    let work = |((o, i), xp): ((&mut [T], &mut [i64]), &[T])| forward_plane(xp, g, &is_nan, o, i);
    let chunks = out
        .chunks_mut(out_len)
        .zip(idx.chunks_mut(out_len))
        .zip(x.chunks(in_len));
    if planes * out_len >= PAR_OUTPUTS {
        out.par_chunks_mut(out_len)
            .zip(idx.par_chunks_mut(out_len))
            .zip(x.par_chunks(in_len))
            .for_each(work);
    } else {
        chunks.for_each(work);
    }
    (out, idx)
}

/// The input gradient: each output gradient added at its window's argmax.
pub fn backward<T: CpuElement + std::ops::AddAssign>(
    grad_out: &[T],
    idx: &[i64],
    planes: usize,
    g: &PoolPlane,
) -> Vec<T> {
    let (in_len, out_len) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
    let mut grad = zeroed::<T>(planes * in_len);
    if out_len == 0 || in_len == 0 {
        return grad;
    }
    let work = |((gi, go), ix): ((&mut [T], &[T]), &[i64])| {
        for (&v, &p) in go.iter().zip(ix) {
            gi[p as usize] += v;
        }
    };
    if planes * out_len >= PAR_OUTPUTS {
        grad.par_chunks_mut(in_len)
            .zip(grad_out.par_chunks(out_len))
            .zip(idx.par_chunks(out_len))
            .for_each(work);
    } else {
        grad.chunks_mut(in_len)
            .zip(grad_out.chunks(out_len))
            .zip(idx.chunks(out_len))
            .for_each(work);
    }
    grad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(input: [usize; 2], kernel: usize, stride: usize, padding: usize) -> PoolPlane {
        let out = |n: usize| (n + 2 * padding - kernel) / stride + 1;
        PoolPlane {
            input,
            output: [out(input[0]), out(input[1])],
            kernel: [kernel; 2],
            stride: [stride; 2],
            padding: [padding; 2],
            dilation: [1, 1],
        }
    }

    /// The definition, written plainly: every window's elements, the first maximum.
    fn naive(x: &[f64], g: &PoolPlane) -> (Vec<f64>, Vec<i64>) {
        let mut out = vec![];
        let mut idx = vec![];
        for oy in 0..g.output[0] {
            for ox in 0..g.output[1] {
                let mut cands = vec![];
                for ky in 0..g.kernel[0] {
                    for kx in 0..g.kernel[1] {
                        let iy = (oy * g.stride[0] + ky) as isize - g.padding[0] as isize;
                        let ix = (ox * g.stride[1] + kx) as isize - g.padding[1] as isize;
                        if (0..g.input[0] as isize).contains(&iy)
                            && (0..g.input[1] as isize).contains(&ix)
                        {
                            let p = iy as usize * g.input[1] + ix as usize;
                            cands.push((x[p], p));
                        }
                    }
                }
                let m = cands.iter().map(|c| c.0).fold(f64::NEG_INFINITY, f64::max);
                let first = cands.iter().find(|c| c.0 == m).unwrap();
                out.push(first.0);
                idx.push(first.1 as i64);
            }
        }
        (out, idx)
    }

    #[test]
    fn matches_the_definition_with_ties_padding_and_overlap() {
        for (input, k, s, p) in [([6, 7], 2, 2, 0), ([5, 5], 3, 1, 1), ([7, 4], 3, 2, 1)] {
            let g = plane(input, k, s, p);
            // Few distinct values, so windows hold ties.
            let x: Vec<f64> = (0..input[0] * input[1])
                .map(|i| ((i * 7) % 5) as f64)
                .collect();
            let (out, idx) = forward(&x, 1, &g, f64::is_nan);
            assert_eq!(
                (out.clone(), idx.clone()),
                naive(&x, &g),
                "{input:?} k{k} s{s} p{p}"
            );
            // Backward: each gradient lands on its argmax, overlapping windows add up.
            let go: Vec<f64> = (0..out.len()).map(|i| i as f64 + 1.0).collect();
            let gi = backward(&go, &idx, 1, &g);
            let mut want = vec![0.0; x.len()];
            for (v, &p) in go.iter().zip(&idx) {
                want[p as usize] += v;
            }
            assert_eq!(gi, want);
        }
    }

    #[test]
    fn nan_wins_and_planes_split_over_threads() {
        let g = plane([64, 64], 2, 2, 0);
        let planes = 20; // 20 * 32 * 32 outputs: the parallel path
        let mut x: Vec<f32> = (0..planes * 64 * 64).map(|i| (i % 97) as f32).collect();
        x[1] = f32::NAN;
        let (out, idx) = forward(&x, planes, &g, f32::is_nan);
        assert!(out[0].is_nan() && idx[0] == 1);
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for p in 1..planes {
            let plane_x = &x64[p * 4096..(p + 1) * 4096];
            let (want, want_idx) = naive(plane_x, &g);
            let got: Vec<f64> = out[p * 1024..(p + 1) * 1024]
                .iter()
                .map(|&v| v as f64)
                .collect();
            assert_eq!(got, want);
            assert_eq!(&idx[p * 1024..(p + 1) * 1024], &want_idx[..]);
        }
    }
}
