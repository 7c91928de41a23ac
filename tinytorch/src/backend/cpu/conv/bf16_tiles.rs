//! bf16 convolutions (forward and both gradients) on AMX tiles: im2col + `bf16_gemm`, cut
//! into chunks of images as `gemm.rs` cuts its f32 ones, with the same matrices (`gemm.rs`'s
//! table, `K = Cg*kh*kw`, `L = OH*OW`):
//!
//! ```text
//! forward:      Y (Cog, nb*L)  = W_g (Cog, K) @ cols_g (K, nb*L)         -> (nb, Co, L)
//! grad input:   gcols_g (K, nb*L) = W_g^T (K, Cog) @ G_g (Cog, nb*L)     -> col2im
//! grad weight:  dW_g^T (K, Cog) += cols_g (K, nb*L) @ G_g^T (nb*L, Cog)
//! ```
//!
//! The products multiply bf16 operands and sum in f32; each result is rounded to bf16 once,
//! after the bias (forward), after col2im's sums of overlapping windows (input gradient) and
//! after the sums over chunks of images (weight gradient): the arithmetic of PyTorch's bf16
//! convolutions on such CPUs (oneDNN). Widened to f32 instead, a bf16 convolution costs an
//! f32 one plus the casts: AMX's `tdpbf16ps` does sixteen times an AVX-512 FMA's work.
//!
//! Each chunk runs on one thread from start to end; the chunks are the parallel work.

use super::gemm::{recycle, write_by_chunks, Conv};
use super::im2col::col2im_into;
use crate::backend::cpu::allocator;
use crate::backend::cpu::bf16_gemm::{self, Engine, GemmOut, MatRef};
use crate::base::dtype::bf16_from_f32;
use half::bf16;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// True where bf16 convolutions run here: the CPU's bf16 engine is AMX. (On the
/// AVX512-BF16 dot products alone, Zen 4's, the f32 kernels on widened operands stay: those
/// were tuned there, and the dot products are only twice an f32 FMA's work.)
pub fn applies() -> bool {
    bf16_gemm::engine() == Some(Engine::Amx)
}

/// `dst (m, n; row stride dst_rs) = a (m, k) @ b (k, n)` on AMX, stored as `O`.
///
/// # Safety
/// [`applies`] holds; `a` and `b` address `m x k` and `k x n` elements inside their
/// buffers, and `dst` `m` rows of `n` inside its own.
#[allow(clippy::too_many_arguments)]
unsafe fn product<O: GemmOut>(
    m: usize,
    n: usize,
    k: usize,
    a: MatRef,
    b: MatRef,
    dst: *mut O,
    dst_rs: usize,
) {
    bf16_gemm::gemm(Engine::Amx, m, n, k, a, b, dst, dst_rs)
}

/// The matrix at `ptr` with row stride `rs` and column stride `cs`.
fn mat(ptr: *const bf16, rs: usize, cs: usize) -> MatRef {
    MatRef { ptr, rs, cs }
}

/// `dst[i] = bf16(src[i] + add)`, rounded to nearest even.
fn round_into(src: &[f32], add: f32, dst: &mut [MaybeUninit<bf16>]) {
    for (d, &v) in dst.iter_mut().zip(src) {
        d.write(bf16_from_f32(v + add));
    }
}

/// A pooled f32 buffer of `len` elements, every one written by `fill`.
fn f32_buffer(len: usize, fill: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    let mut v = allocator::take::<f32>(len);
    fill(&mut v.spare_capacity_mut()[..len]);
    // SAFETY: every caller's `fill` writes all `len` elements.
    unsafe { v.set_len(len) };
    v
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `x` `(N, Ci, H, W)`, weight `w`
/// `(Co, Ci/G, kh, kw)` and optional bias `(Co,)`.
///
/// # Panics
/// If [`applies`] does not hold (the caller checks it).
pub fn forward(x: &[bf16], w: &[bf16], bias: Option<&[bf16]>, c: &Conv) -> Vec<bf16> {
    assert!(applies(), "bf16 tile convolution without AMX");
    let (co, l, k, cog) = (c.out_channels, c.l(), c.k(), c.cog());
    let task = |(start, nb): (usize, usize), dst: &mut [MaybeUninit<bf16>]| {
        let nl = nb * l;
        let cols = c.cols(x, start, nb, false);
        if k == 0 {
            // A product over nothing (no input channels) is the bias, or zero.
            for (r, d) in dst.chunks_exact_mut(l).enumerate() {
                d.fill(MaybeUninit::new(bias.map_or(bf16::ZERO, |b| b[r % co])));
            }
        } else if let Some(bias) = bias {
            // Y (Co, nl) in f32, one product per group, then (Co, nb, L) -> (nb, Co, L) with
            // the bias added before the one rounding.
            let y = f32_buffer(co * nl, |y| {
                for g in 0..c.groups {
                    // SAFETY: W_g is rows g*cog.. of the (Co, K) weight, cols_g rows g*k..
                    // of the (K*G, nl) columns, Y_g rows g*cog.. of `y`; `applies` holds.
                    unsafe {
                        let wg = mat(w.as_ptr().add(g * cog * k), k, 1);
                        let cg = mat(cols.as_ptr().add(g * k * nl), nl, 1);
                        let yg = y.as_mut_ptr().add(g * cog * nl).cast::<f32>();
                        product(cog, nl, k, wg, cg, yg, nl);
                    }
                }
            });
            for (r, d) in dst.chunks_exact_mut(l).enumerate() {
                let (i, o) = (r / co, r % co);
                round_into(&y[o * nl + i * l..o * nl + (i + 1) * l], bias[o].to_f32(), d);
            }
            recycle(y);
        } else {
            // Without a bias each image's (Co, L) block is rounded straight into place.
            for i in 0..nb {
                for g in 0..c.groups {
                    // SAFETY: as above, with image i's L columns of cols_g, and rows
                    // g*cog.. of image i's (Co, L) block of `dst`.
                    unsafe {
                        let wg = mat(w.as_ptr().add(g * cog * k), k, 1);
                        let cg = mat(cols.as_ptr().add(g * k * nl + i * l), nl, 1);
                        let yg = dst.as_mut_ptr().add((i * co + g * cog) * l).cast::<bf16>();
                        product(cog, l, k, wg, cg, yg, l);
                    }
                }
            }
        }
        recycle(cols);
    };
    write_by_chunks(c, co * l, task)
}

/// Gradient of the input, `(N, Ci, H, W)`, from the contiguous upstream gradient `gy`
/// `(N, Co, OH, OW)` and the weight.
///
/// # Panics
/// If [`applies`] does not hold.
pub fn backward_input(gy: &[bf16], w: &[bf16], c: &Conv) -> Vec<bf16> {
    assert!(applies(), "bf16 tile convolution without AMX");
    match transposed(c) {
        Some(t) => forward(gy, &flipped_weight(w, c), None, &t),
        None => backward_input_col2im(gy, w, c),
    }
}

/// For a stride-1, undilated convolution, the convolution that computes its input
/// gradient: the upstream gradient `(N, Co, OH, OW)` padded by `k - 1 - p` on each side,
/// correlated with the weight flipped in both spatial dims and with its channel dims
/// swapped ([`flipped_weight`]), is `(N, Ci, H, W)`. `None` where that does not hold
/// (strides, dilation, padding past `k - 1`).
fn transposed(c: &Conv) -> Option<Conv> {
    let g = &c.geom;
    let padding = [0, 1].map(|a| (g.kernel[a] - 1).checked_sub(g.padding[a]));
    if g.stride != [1, 1] || g.dilation != [1, 1] || padding.contains(&None) {
        return None;
    }
    let padding = padding.map(|p| p.unwrap_or(0));
    let output = [0, 1].map(|a| g.output[a] + 2 * padding[a] + 1 - g.kernel[a]);
    if output != g.input {
        return None;
    }
    let geom = crate::backend::ConvGeometry {
        channels: c.out_channels,
        input: g.output,
        padding,
        output,
        ..*g
    };
    Some(Conv {
        geom,
        out_channels: g.channels,
        groups: c.groups,
    })
}

/// `W'[g*cig + ci, o, i, j] = W[g*cog + o, ci, kh-1-i, kw-1-j]`: the weight `(Co, Ci/G, kh,
/// kw)` of `c` as the `(Ci, Co/G, kh, kw)` weight of [`transposed`]'s convolution.
fn flipped_weight(w: &[bf16], c: &Conv) -> Vec<bf16> {
    let [kh, kw] = c.geom.kernel;
    let (cog, cig) = (c.cog(), c.geom.channels / c.groups);
    let mut out = Vec::with_capacity(w.len());
    for g in 0..c.groups {
        for ci in 0..cig {
            for o in 0..cog {
                let src = ((g * cog + o) * cig + ci) * kh * kw;
                out.extend((0..kh * kw).rev().map(|t| w[src + t]));
            }
        }
    }
    out
}

/// [`backward_input`] as col2im over the products `W_g^T @ G_g`, for the convolutions
/// [`transposed`] does not take.
fn backward_input_col2im(gy: &[bf16], w: &[bf16], c: &Conv) -> Vec<bf16> {
    let (l, k, cog) = (c.l(), c.k(), c.cog());
    let task = |(start, nb): (usize, usize), dst: &mut [MaybeUninit<bf16>]| {
        let gc = c.geom.with_batch(nb);
        let nl = nb * l;
        let gm = c.grad_matrix(gy, start, nb);
        // gcols (K*G, nl) in f32, one product per group.
        let gcols = f32_buffer(gc.rows() * nl, |gcols| {
            if cog == 0 || k == 0 {
                gcols.fill(MaybeUninit::new(0.0));
                return;
            }
            for g in 0..c.groups {
                // SAFETY: W_g^T is the transposed view of rows g*cog.. of the weight, G_g
                // rows g*cog.. of the (Co, nl) gradient matrix, gcols_g rows g*k.. of
                // `gcols`; `applies` holds.
                unsafe {
                    let wt = mat(w.as_ptr().add(g * cog * k), 1, k);
                    let gg = mat(gm.as_ptr().add(g * cog * nl), nl, 1);
                    let dst = gcols.as_mut_ptr().add(g * k * nl).cast::<f32>();
                    product(k, nl, cog, wt, gg, dst, nl);
                }
            }
        });
        // The overlapping windows summed in f32, then rounded once.
        let gx = f32_buffer(dst.len(), |gx| col2im_into(&gcols, &gc, gx, false));
        round_into(&gx, 0.0, dst);
        recycle(gx);
        recycle(gcols);
        if let std::borrow::Cow::Owned(v) = gm {
            recycle(v);
        }
    };
    write_by_chunks(c, c.image(), task)
}

/// Gradient of the weight, `(Co, Ci/G, kh, kw)`, from the contiguous input and upstream
/// gradient.
///
/// # Panics
/// If [`applies`] does not hold.
pub fn backward_weight(x: &[bf16], gy: &[bf16], c: &Conv) -> Vec<bf16> {
    assert!(applies(), "bf16 tile convolution without AMX");
    let (l, k, cog, groups) = (c.l(), c.k(), c.cog(), c.groups);
    // dW_g^T (K, Cog) of one chunk in f32, for every group: (G, K, Cog).
    let part = |(start, nb): (usize, usize)| -> Vec<f32> {
        let nl = nb * l;
        let cols = c.cols(x, start, nb, false);
        let gm = c.grad_matrix(gy, start, nb);
        let mut dwt = vec![0.0f32; groups * k * cog];
        if nl > 0 && k > 0 && cog > 0 {
            for g in 0..groups {
                // SAFETY: cols_g is rows g*k.. of the (K*G, nl) columns, G_g^T the transposed
                // view of rows g*cog.. of the (Co, nl) gradient matrix, and the destination
                // block g of `dwt`; `applies` holds.
                unsafe {
                    let cg = mat(cols.as_ptr().add(g * k * nl), nl, 1);
                    let gt = mat(gm.as_ptr().add(g * cog * nl), 1, nl);
                    let dst = dwt.as_mut_ptr().add(g * k * cog);
                    product(k, cog, nl, cg, gt, dst, cog);
                }
            }
        }
        recycle(cols);
        if let std::borrow::Cow::Owned(v) = gm {
            recycle(v);
        }
        dwt
    };
    // The chunks' sums added in chunk order (not thread order), so the result does not
    // depend on the number of threads.
    let parts: Vec<Vec<f32>> = c.chunks::<bf16>().into_par_iter().map(part).collect();
    let mut total = vec![0.0f32; groups * k * cog];
    for p in parts {
        for (t, v) in total.iter_mut().zip(p) {
            *t += v;
        }
    }
    // (G, K, Cog) -> (G, Cog, K) = (Co, Ci/G * kh * kw), rounded once.
    let mut dw = Vec::with_capacity(total.len());
    for g in 0..groups {
        for o in 0..cog {
            dw.extend((0..k).map(|r| bf16_from_f32(total[(g * k + r) * cog + o])));
        }
    }
    dw
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::naive;
    use super::super::im2col::tests::out_len;
    use super::*;
    use crate::backend::ConvGeometry;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Forward and both gradients against the f64 definition of the same bf16 values
    /// (`gemm.rs`'s `naive`), over groups, strides, dilation, padding, kernels of 1 to 5,
    /// channels that fill no whole tile and several chunks of images; each result must be
    /// the definition rounded once to bf16, give or take the f32 sums' error. Skipped on
    /// CPUs without AMX.
    #[test]
    fn bf16_tile_convolutions_match_the_definition() {
        if !applies() {
            eprintln!("skipped: no AMX here");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // (batch, ci, co, hw, kernel, stride, padding, dilation, groups)
        let cases = [
            (2, 3, 5, 9, 3, 1, 1, 1, 1),
            (3, 16, 16, 8, 3, 1, 1, 1, 1),
            (20, 8, 24, 6, 3, 2, 1, 1, 1),
            (2, 6, 4, 7, 5, 1, 2, 2, 2),
            (1, 40, 33, 5, 1, 1, 0, 1, 1),
            (9, 4, 8, 10, 3, 1, 0, 1, 4),
            (4, 16, 32, 12, 3, 1, 1, 1, 1),
            (2, 8, 8, 9, 5, 1, 1, 1, 2),
        ];
        for (n, ci, co, hw, kk, s, p, d, groups) in cases {
            let side = out_len(hw, kk, s, p, d);
            let geom = ConvGeometry {
                batch: n,
                channels: ci,
                input: [hw, hw],
                kernel: [kk, kk],
                stride: [s, s],
                dilation: [d, d],
                padding: [p, p],
                output: [side, side],
            };
            let c = Conv {
                geom,
                out_channels: co,
                groups,
            };
            let [oh, ow] = geom.output;
            let mut random = |len: usize| -> Vec<bf16> {
                (0..len)
                    .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
                    .collect()
            };
            let x = random(n * ci * hw * hw);
            let w = random(co * ci / groups * kk * kk);
            let bias = random(co);
            let gy = random(n * co * oh * ow);
            let wide = |v: &[bf16]| v.iter().map(|e| e.to_f64()).collect::<Vec<_>>();
            let (y64, dx64, dw64) = naive(&wide(&x), &wide(&w), &wide(&gy), &c);
            // With a bias (the f32 path) and without (rounded in place), compared below
            // with the bias added and subtracted.
            let y = forward(&x, &w, Some(&bias), &c);
            let y0 = forward(&x, &w, None, &c);
            let dx = backward_input(&gy, &w, &c);
            let dw = backward_weight(&x, &gy, &c);
            let l = oh * ow;
            let y64: Vec<f64> = y64
                .iter()
                .enumerate()
                .map(|(i, v)| v + bias[i / l % co].to_f64())
                .collect();
            let y0_64: Vec<f64> = y64
                .iter()
                .enumerate()
                .map(|(i, v)| v - bias[i / l % co].to_f64())
                .collect();
            let all = [
                ("y", &y, &y64),
                ("y without bias", &y0, &y0_64),
                ("dx", &dx, &dx64),
                ("dw", &dw, &dw64),
            ];
            for (what, got, want) in all {
                assert_eq!(got.len(), want.len(), "{what} length");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    // One bf16 rounding (2^-9 relative) plus f32 sums of at most a few
                    // hundred terms of magnitude <= 1.
                    let tol = w.abs() / 256.0 + 1e-4;
                    assert!(
                        (g.to_f64() - w).abs() <= tol,
                        "{what}[{i}] of {:?}: {g} vs {w}",
                        (n, ci, co, hw, kk, s, p, d, groups)
                    );
                }
            }
        }
    }
}
