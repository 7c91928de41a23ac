//! im2col and its adjoint col2im on the CPU: the data movement around the gemm of a 2-D
//! convolution.
//!
//! The columns are laid out as one matrix `(C*kh*kw, N*OH*OW)` for the whole batch: row
//! `(c, i, j)` holds, for every image and output position, the input element under kernel tap
//! `(i, j)` of channel `c` (zero in the padding). With that layout the convolution of the whole
//! batch is a single gemm per group, `W_g (Co/G, Cg*kh*kw) @ cols_g`, and the weight gradient
//! is a single gemm `grad_out (Co, N*OH*OW) @ cols^T`, so gemm sees large matrices.
//!
//! im2col runs in parallel over rows (each row is written by one task); col2im in parallel over
//! the `(n, c)` output planes (each plane gathers the rows of its channel, so no two tasks add
//! into the same element). f16/bf16 columns are accumulated in f32 by col2im.

use crate::backend::cpu::strided::PAR_THRESHOLD;
use crate::backend::cpu::{allocator, CpuElement, CpuStorage};
use crate::backend::{BackendStorage, ConvGeometry};
use crate::base::Layout;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::AddAssign;

/// `(N, C, H, W)` input in any layout -> contiguous columns `(C*kh*kw, N*OH*OW)`.
pub fn im2col(x: &CpuStorage, l: &Layout, g: &ConvGeometry) -> Result<CpuStorage> {
    g.check_input(l, x.len())?;
    Ok(crate::with_cpu_storage!(x, v => CpuStorage::from_vec(im2col_typed(v, l, g))))
}

/// Columns `(C*kh*kw, N*OH*OW)` in any layout -> `(N, C, H, W)` contiguous, summing the
/// contributions of overlapping windows (the adjoint of [`im2col`]).
pub fn col2im(cols: &CpuStorage, l: &Layout, g: &ConvGeometry) -> Result<CpuStorage> {
    g.check_columns(l, cols.len())?;
    let owned;
    let c = if l.is_contiguous() && l.offset() == 0 && cols.len() == l.numel() {
        cols
    } else {
        owned = cols.to_contiguous(l)?;
        &owned
    };
    Ok(match c {
        CpuStorage::F32(v) => CpuStorage::F32(col2im_typed(v, g).into()),
        CpuStorage::F64(v) => CpuStorage::F64(col2im_typed(v, g).into()),
        CpuStorage::F16(v) => CpuStorage::F16(via_f32(v, g).into()),
        CpuStorage::BF16(v) => CpuStorage::BF16(via_f32(v, g).into()),
        other => return Err(Error::unsupported_dtype("col2im", other.dtype())),
    })
}

/// col2im for reduced-precision floats: accumulate in f32, round once per element.
fn via_f32<T: CpuElement>(v: &[T], g: &ConvGeometry) -> Vec<T> {
    let wide: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
    col2im_typed(&wide, g)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// The output positions `o` in `0..out` whose input coordinate `o*s + tap - pad` lies in
/// `0..len`, as a half-open range.
fn valid_range(out: usize, len: usize, s: usize, tap: usize, pad: usize) -> (usize, usize) {
    // o*s + tap >= pad  and  o*s + tap < len + pad
    let lo = pad.saturating_sub(tap).div_ceil(s);
    let hi = (len + pad).saturating_sub(tap).div_ceil(s);
    (lo.min(out), hi.min(out).max(lo.min(out)))
}

/// Input coordinate of output position `o` under kernel tap offset `tap` (`o*s + tap >= pad`
/// holds inside `valid_range`).
#[inline(always)]
fn coord(o: usize, s: usize, tap: usize, pad: usize) -> usize {
    o * s + tap - pad
}

fn im2col_typed<T: CpuElement>(x: &[T], l: &Layout, g: &ConvGeometry) -> Vec<T> {
    let len = g.rows() * g.cols();
    let mut out = allocator::take::<T>(len);
    im2col_into(
        x,
        l,
        g,
        &mut out.spare_capacity_mut()[..len],
        len >= PAR_THRESHOLD,
    );
    // SAFETY: `im2col_into` wrote every element of the first `len`.
    unsafe { out.set_len(len) };
    out
}

/// im2col of `x[l]` into `out` (`g.rows() * g.cols()` elements), writing every element
/// (zeros in the padding, so the buffer needs no clearing first); in parallel over rows
/// when `parallel`.
pub(super) fn im2col_into<T: CpuElement>(
    x: &[T],
    l: &Layout,
    g: &ConvGeometry,
    out: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    let ncols = g.cols();
    if out.is_empty() || ncols == 0 {
        return;
    }
    let st = l.strides();
    let (sn, sc, sh, sw) = (st[0], st[1], st[2], st[3]);
    let off = l.offset();
    let [oh, ow] = g.output;
    let plane = oh * ow;
    let zero = MaybeUninit::new(T::zero());
    let fill_row = |r: usize, dst: &mut [MaybeUninit<T>]| {
        let (c, i, j) = g.tap(r);
        let (th, tw) = (i * g.dilation[0], j * g.dilation[1]);
        let (h_lo, h_hi) = valid_range(oh, g.input[0], g.stride[0], th, g.padding[0]);
        let (w_lo, w_hi) = valid_range(ow, g.input[1], g.stride[1], tw, g.padding[1]);
        for n in 0..g.batch {
            let img = &mut dst[n * plane..(n + 1) * plane];
            img[..h_lo * ow].fill(zero);
            img[h_hi * ow..].fill(zero);
            for y in h_lo..h_hi {
                let ih = coord(y, g.stride[0], th, g.padding[0]);
                let base = off + n * sn + c * sc + ih * sh;
                let line = &mut img[y * ow..(y + 1) * ow];
                line[..w_lo].fill(zero);
                line[w_hi..].fill(zero);
                if g.stride[1] == 1 && sw == 1 {
                    let start = base + coord(w_lo, 1, tw, g.padding[1]);
                    line[w_lo..w_hi].write_copy_of_slice(&x[start..start + (w_hi - w_lo)]);
                } else {
                    for (xo, d) in line[w_lo..w_hi].iter_mut().enumerate() {
                        let iw = coord(w_lo + xo, g.stride[1], tw, g.padding[1]);
                        d.write(x[base + iw * sw]);
                    }
                }
            }
        }
    };
    if parallel {
        out.par_chunks_mut(ncols)
            .enumerate()
            .for_each(|(r, dst)| fill_row(r, dst));
    } else {
        out.chunks_mut(ncols)
            .enumerate()
            .for_each(|(r, dst)| fill_row(r, dst));
    }
}

fn col2im_typed<T: CpuElement + AddAssign>(cols: &[T], g: &ConvGeometry) -> Vec<T> {
    let len = g.batch * g.channels * g.input[0] * g.input[1];
    let mut out = allocator::take::<T>(len);
    col2im_into(
        cols,
        g,
        &mut out.spare_capacity_mut()[..len],
        cols.len() >= PAR_THRESHOLD,
    );
    // SAFETY: `col2im_into` wrote every element of the first `len`.
    unsafe { out.set_len(len) };
    out
}

/// col2im of the contiguous `cols` into `out` (`(N, C, H, W)` of `g`), writing every
/// element; in parallel over the output planes when `parallel`.
pub(super) fn col2im_into<T: CpuElement + AddAssign>(
    cols: &[T],
    g: &ConvGeometry,
    out: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    let [h, w] = g.input;
    if out.is_empty() {
        return;
    }
    let ncols = g.cols();
    let [oh, ow] = g.output;
    let plane = oh * ow;
    let taps = g.kernel[0] * g.kernel[1];
    let fill_plane = |p: usize, dst: &mut [MaybeUninit<T>]| {
        dst.fill(MaybeUninit::new(T::zero()));
        // SAFETY: every element of `dst` was just initialised.
        let dst = unsafe { &mut *(dst as *mut [MaybeUninit<T>] as *mut [T]) };
        let (n, c) = (p / g.channels, p % g.channels);
        for t in 0..taps {
            let (i, j) = (t / g.kernel[1], t % g.kernel[1]);
            let (th, tw) = (i * g.dilation[0], j * g.dilation[1]);
            let r = c * taps + t;
            let src = &cols[r * ncols + n * plane..r * ncols + (n + 1) * plane];
            let (h_lo, h_hi) = valid_range(oh, h, g.stride[0], th, g.padding[0]);
            let (w_lo, w_hi) = valid_range(ow, w, g.stride[1], tw, g.padding[1]);
            for y in h_lo..h_hi {
                let ih = coord(y, g.stride[0], th, g.padding[0]);
                let line = &src[y * ow..(y + 1) * ow];
                let row = &mut dst[ih * w..(ih + 1) * w];
                if g.stride[1] == 1 {
                    let start = coord(w_lo, 1, tw, g.padding[1]);
                    let span = &mut row[start..start + (w_hi - w_lo)];
                    for (d, &s) in span.iter_mut().zip(&line[w_lo..w_hi]) {
                        *d += s;
                    }
                } else {
                    for (xo, &s) in line[w_lo..w_hi].iter().enumerate() {
                        row[coord(w_lo + xo, g.stride[1], tw, g.padding[1])] += s;
                    }
                }
            }
        }
    };
    let hw = (h * w).max(1);
    if parallel {
        out.par_chunks_mut(hw)
            .enumerate()
            .for_each(|(p, dst)| fill_plane(p, dst));
    } else {
        out.chunks_mut(hw)
            .enumerate()
            .for_each(|(p, dst)| fill_plane(p, dst));
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use half::{bf16, f16};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The output size of one spatial dim (PyTorch's formula).
    pub(in crate::backend::cpu) fn out_len(
        len: usize,
        k: usize,
        s: usize,
        p: usize,
        d: usize,
    ) -> usize {
        (len + 2 * p - d * (k - 1) - 1) / s + 1
    }

    fn random_geometry(rng: &mut ChaCha8Rng) -> ConvGeometry {
        let kernel = [rng.random_range(1..4), rng.random_range(1..4)];
        let stride = [rng.random_range(1..3), rng.random_range(1..4)];
        let dilation = [rng.random_range(1..3), rng.random_range(1..3)];
        let padding = [rng.random_range(0..3), rng.random_range(0..3)];
        let mut input = [0; 2];
        let mut output = [0; 2];
        for a in 0..2 {
            let span: usize = dilation[a] * (kernel[a] - 1) + 1;
            input[a] = rng.random_range(span.saturating_sub(2 * padding[a]).max(1)..span + 6);
            output[a] = out_len(input[a], kernel[a], stride[a], padding[a], dilation[a]);
        }
        ConvGeometry {
            batch: rng.random_range(1..4),
            channels: rng.random_range(1..4),
            input,
            kernel,
            stride,
            dilation,
            padding,
            output,
        }
    }

    /// Element `[r, col]` of the columns straight from the definition (the oracle).
    fn naive_col(x: &[f64], l: &Layout, g: &ConvGeometry, r: usize, col: usize) -> f64 {
        let (c, i, j) = g.tap(r);
        let plane = g.output[0] * g.output[1];
        let (n, y, xo) = (col / plane, (col % plane) / g.output[1], col % g.output[1]);
        let ih = (y * g.stride[0] + i * g.dilation[0]) as isize - g.padding[0] as isize;
        let iw = (xo * g.stride[1] + j * g.dilation[1]) as isize - g.padding[1] as isize;
        if ih < 0 || iw < 0 || ih >= g.input[0] as isize || iw >= g.input[1] as isize {
            return 0.0;
        }
        let s = l.strides();
        x[l.offset() + n * s[0] + c * s[1] + ih as usize * s[2] + iw as usize * s[3]]
    }

    /// An input of the geometry's shape, stored either contiguously or permuted with an offset.
    fn input(rng: &mut ChaCha8Rng, g: &ConvGeometry) -> (Vec<f64>, Layout) {
        let shape = vec![g.batch, g.channels, g.input[0], g.input[1]];
        let len: usize = shape.iter().product();
        let off = rng.random_range(0..3);
        let data: Vec<f64> = (0..len + off)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let layout = if rng.random_bool(0.5) {
            Layout::from_parts(
                shape.clone(),
                Layout::contiguous(&shape).strides().to_vec(),
                off,
            )
        } else {
            // Channels-last storage: (N, H, W, C) buffer viewed as (N, C, H, W).
            let [h, w] = g.input;
            let c = g.channels;
            Layout::from_parts(shape, vec![h * w * c, 1, w * c, c], off)
        };
        (data, layout)
    }

    #[test]
    fn im2col_matches_naive_and_col2im_is_its_adjoint() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..80 {
            let g = random_geometry(&mut rng);
            let (x, xl) = input(&mut rng, &g);
            let cols = im2col(&CpuStorage::F64(x.clone().into()), &xl, &g)
                .unwrap()
                .to_f64_vec();
            let (rows, ncols) = (g.rows(), g.cols());
            for r in 0..rows {
                for col in 0..ncols {
                    let want = naive_col(&x, &xl, &g, r, col);
                    assert_eq!(cols[r * ncols + col], want, "{g:?} [{r}, {col}]");
                }
            }
            // Adjoint: <im2col(x), y> == <x, col2im(y)> for a contiguous x.
            let xc = Layout::contiguous(&[g.batch, g.channels, g.input[0], g.input[1]]);
            let xv: Vec<f64> = (0..xc.numel())
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let yv: Vec<f64> = (0..rows * ncols)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let ax = im2col(&CpuStorage::F64(xv.clone().into()), &xc, &g)
                .unwrap()
                .to_f64_vec();
            let aty = col2im(
                &CpuStorage::F64(yv.clone().into()),
                &Layout::contiguous(&[rows, ncols]),
                &g,
            )
            .unwrap()
            .to_f64_vec();
            let lhs: f64 = ax.iter().zip(&yv).map(|(a, b)| a * b).sum();
            let rhs: f64 = xv.iter().zip(&aty).map(|(a, b)| a * b).sum();
            assert!((lhs - rhs).abs() < 1e-9, "{g:?}: {lhs} vs {rhs}");
        }
    }

    #[test]
    fn col2im_matches_naive_scatter_in_every_float_dtype() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..40 {
            let g = random_geometry(&mut rng);
            let (rows, ncols) = (g.rows(), g.cols());
            let y: Vec<f64> = (0..rows * ncols)
                .map(|_| rng.random_range(-4i32..5) as f64 * 0.25)
                .collect();
            // Naive scatter-add from the definition.
            let [h, w] = g.input;
            let mut want = vec![0.0; g.batch * g.channels * h * w];
            let plane = g.output[0] * g.output[1];
            for r in 0..rows {
                let (c, i, j) = g.tap(r);
                for col in 0..ncols {
                    let (n, oy, ox) = (col / plane, (col % plane) / g.output[1], col % g.output[1]);
                    let ih =
                        (oy * g.stride[0] + i * g.dilation[0]) as isize - g.padding[0] as isize;
                    let iw =
                        (ox * g.stride[1] + j * g.dilation[1]) as isize - g.padding[1] as isize;
                    if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                        want[((n * g.channels + c) * h + ih as usize) * w + iw as usize] +=
                            y[r * ncols + col];
                    }
                }
            }
            // A transposed (non-contiguous) columns layout goes through the copy path.
            let yt: Vec<f64> = (0..ncols)
                .flat_map(|col| (0..rows).map(move |r| (r, col)))
                .map(|(r, col)| y[r * ncols + col])
                .collect();
            let tl = Layout::from_parts(vec![rows, ncols], vec![1, rows], 0);
            let cl = Layout::contiguous(&[rows, ncols]);
            let stores = [
                (CpuStorage::F64(y.clone().into()), cl.clone()),
                (CpuStorage::F64(yt.into()), tl),
                (
                    CpuStorage::F32(y.iter().map(|&v| v as f32).collect()),
                    cl.clone(),
                ),
                (
                    CpuStorage::F16(y.iter().map(|&v| f16::from_f64(v)).collect()),
                    cl.clone(),
                ),
                (
                    CpuStorage::BF16(y.iter().map(|&v| bf16::from_f64(v)).collect()),
                    cl.clone(),
                ),
            ];
            for (s, l) in stores {
                let got = col2im(&s, &l, &g).unwrap().to_f64_vec();
                // Quarter multiples summed over at most 9 taps are exact in every dtype.
                assert_eq!(got, want, "{g:?} {:?}", s.dtype());
            }
        }
    }

    #[test]
    fn large_inputs_take_the_parallel_path() {
        let g = ConvGeometry {
            batch: 4,
            channels: 8,
            input: [30, 30],
            kernel: [5, 5],
            stride: [1, 1],
            dilation: [1, 1],
            padding: [2, 2],
            output: [30, 30],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let (x, xl) = input(&mut rng, &g);
        let cols = im2col(&CpuStorage::F64(x.clone().into()), &xl, &g)
            .unwrap()
            .to_f64_vec();
        assert!(cols.len() >= PAR_THRESHOLD);
        let ncols = g.cols();
        for r in (0..g.rows()).step_by(7) {
            for col in (0..ncols).step_by(13) {
                assert_eq!(cols[r * ncols + col], naive_col(&x, &xl, &g, r, col));
            }
        }
    }

    #[test]
    fn mismatched_layouts_and_integer_col2im_error() {
        let g = ConvGeometry {
            batch: 1,
            channels: 1,
            input: [2, 2],
            kernel: [1, 1],
            stride: [1, 1],
            dilation: [1, 1],
            padding: [0, 0],
            output: [2, 2],
        };
        let x = CpuStorage::F32(vec![0.0; 4].into());
        assert!(im2col(&x, &Layout::contiguous(&[1, 1, 4]), &g).is_err());
        assert!(im2col(&x, &Layout::contiguous(&[1, 2, 2, 2]), &g).is_err());
        assert!(col2im(&x, &Layout::contiguous(&[4, 1]), &g).is_err());
        let ints = CpuStorage::I64(vec![0; 4].into());
        assert!(col2im(&ints, &Layout::contiguous(&[1, 4]), &g).is_err());
    }
}
