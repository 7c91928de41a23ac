//! Direct convolution with output positions in the vector lanes: the forward and input
//! gradient of stride-1 f32 NCHW convolutions on CPUs with AVX-512F.
//!
//! `direct.rs` puts output channels in the lanes and broadcasts one input value per output
//! position; with 16 or 32 channels that is one or two vectors of multiply-adds per
//! broadcast (loads, not FMAs, bound it), and its results are transposed to and from NCHW.
//! With stride 1, sixteen neighbouring output positions can share the lanes instead: in the
//! zero-padded input of width `Wp`, output `(oy, ox)` under kernel entry `k = (ci, i, j)`
//! reads `xpad[ci][(oy + i*dh)*Wp + ox + j*dw]`, so numbering the outputs `q = oy*Wp + ox`
//! over rows of the padded width makes each entry one unaligned vector load at
//! `q + koff[k]` (`koff` as in `direct.rs`); the `Wp - OW` columns past each row are
//! computed and dropped. The weights are broadcast:
//!
//! ```text
//! forward:     y[co][q] = sum_k xpad[q + koff[k]] * w[co][k]   (3 vectors x 8 channels)
//! grad input:  the forward of the upstream gradient (`direct::input_grad_geometry`)
//! ```
//!
//! Input and output stay NCHW: no transposes, and the output rows go out with masked
//! stores. Each output is one sum over the kernel entries in order, so results do not depend
//! on the number of threads. The weight gradient stays with `direct.rs`: the same layout
//! there (`dw[co][k] = sum_q gpad[co][q] * xpad[q + koff[k]]`, 4 channels by 6 entries) was
//! 20-35% slower for 32 channels at 16x16, its upstream-gradient rows streaming from L2 once
//! per group of entries. `gemm.rs` is the reference it is tested against.

use super::direct::{has_avx512f, offsets, pad};
use super::gemm::Conv;
use crate::backend::cpu::{allocator, CpuElement};
use crate::backend::ConvGeometry;
use rayon::prelude::*;

/// Lanes of one zmm vector of f32.
const LANES: usize = 16;
/// Position vectors per forward microkernel.
const R: usize = 3;
/// Output channels per forward microkernel: 3 x 8 = 24 accumulators, and per kernel entry 3
/// loads and 8 broadcasts for 24 FMAs.
const C: usize = 8;
/// Position vectors per forward task (at least; whole microkernels).
const TASK_VECTORS: usize = 96;
/// The layout of one image's outputs in the lanes: positions `q = oy*Wp + ox`, rounded up to
/// whole microkernels.
#[derive(Clone, Copy)]
struct Layout {
    /// Padded input height.
    hp: usize,
    /// Padded input width, the length of a row of positions.
    wp: usize,
    /// Vectors of positions per image, a multiple of `R`.
    vectors: usize,
}

impl Layout {
    /// The layout of `g`'s outputs (stride 1) and the zeros its reads need past the padded
    /// input's last plane.
    fn of(g: &ConvGeometry) -> (Layout, usize) {
        let reach = |a: usize| g.output[a] + g.dilation[a] * (g.kernel[a] - 1);
        let hp = (g.padding[0] + g.input[0]).max(reach(0));
        let wp = (g.padding[1] + g.input[1]).max(reach(1));
        let vectors = (g.output[0] * wp).div_ceil(LANES).next_multiple_of(R);
        // The last image's reads end at its last plane's start + the last position + the
        // reach of the last entry.
        let last_read = vectors * LANES
            + g.dilation[0] * (g.kernel[0] - 1) * wp
            + g.dilation[1] * (g.kernel[1] - 1);
        (
            Layout { hp, wp, vectors },
            last_read.saturating_sub(hp * wp),
        )
    }
}

/// The masked stores that put a vector of positions `q` into an `(OH, OW)` plane: per vector,
/// `(shift, mask)` pairs, lane `i` of a pair going to `plane[shift + i]`.
struct StorePlan {
    starts: Vec<usize>,
    pieces: Vec<(isize, u16)>,
}

impl StorePlan {
    fn new(output: [usize; 2], wp: usize, vectors: usize) -> StorePlan {
        let [oh, ow] = output;
        let (mut starts, mut pieces) = (vec![0], Vec::new());
        for v in 0..vectors {
            let mut lane = 0;
            while lane < LANES {
                let q = v * LANES + lane;
                let (oy, ox) = (q / wp, q % wp);
                let run = (wp - ox).min(LANES - lane);
                if oy < oh && ox < ow {
                    let valid = (ow - ox).min(run);
                    let mask = (((1u32 << valid) - 1) << lane) as u16;
                    pieces.push(((oy * ow + ox) as isize - lane as isize, mask));
                }
                lane += run;
            }
            starts.push(pieces.len());
        }
        StorePlan { starts, pieces }
    }

    fn of(&self, v: usize) -> &[(isize, u16)] {
        &self.pieces[self.starts[v]..self.starts[v + 1]]
    }
}

/// The output's base pointer, shared by the tasks (each writes its own positions).
struct SharedOut(*mut f32);
// SAFETY: the tasks write disjoint elements (see `correlate`), and the output outlives them.
unsafe impl Sync for SharedOut {}

/// The correlation of `x` `(N, Ci, H, W)` with the weight `at(k, co)` (entry `k` in `(ci, i,
/// j)` order) under the stride-1 geometry `g`, plus bias: `(N, Co, OH, OW)`.
fn correlate(
    x: &[f32],
    co: usize,
    g: &ConvGeometry,
    at: impl Fn(usize, usize) -> f32 + Sync,
    bias: Option<&[f32]>,
) -> Vec<f32> {
    let k = g.rows();
    let (lay, slack) = Layout::of(g);
    let xp = pad(x, g, slack);
    let koff = offsets(g, lay.hp, lay.wp);
    // (co blocks, K, C): zero past the last channel.
    let blocks = co.div_ceil(C);
    let mut w = allocator::take::<f32>(blocks * k * C);
    w.spare_capacity_mut()[..blocks * k * C]
        .par_chunks_mut(k * C)
        .enumerate()
        .for_each(|(b, block)| {
            for (kk, row) in block.chunks_exact_mut(C).enumerate() {
                for (c, v) in row.iter_mut().enumerate() {
                    let o = b * C + c;
                    v.write(if o < co { at(kk, o) } else { 0.0 });
                }
            }
        });
    // SAFETY: every element was written above.
    unsafe { w.set_len(blocks * k * C) };
    let bias: Vec<f32> = (0..blocks * C)
        .map(|o| bias.filter(|_| o < co).map_or(0.0, |b| b[o]))
        .collect();
    let plan = StorePlan::new(g.output, lay.wp, lay.vectors);
    let l = g.output[0] * g.output[1];
    let image_in = g.channels * lay.hp * lay.wp;
    let n = g.batch * co * l;
    let mut out = allocator::take::<f32>(n);
    let dst = SharedOut(out.as_mut_ptr());
    // Tasks of whole microkernels within one image, a few per thread.
    let kernels = lay.vectors / R;
    let per_task = (TASK_VECTORS / R).min(kernels);
    let tasks_per_image = kernels.div_ceil(per_task);
    let xs: &[f32] = &xp.data;
    (0..g.batch * tasks_per_image)
        .into_par_iter()
        .for_each(|task| {
            let (img, t) = (task / tasks_per_image, task % tasks_per_image);
            let dst = &dst;
            for kernel in t * per_task..kernels.min((t + 1) * per_task) {
                let v0 = kernel * R;
                let stores: [&[(isize, u16)]; R] = std::array::from_fn(|r| plan.of(v0 + r));
                for b in 0..blocks {
                    let planes: [*mut f32; C] =
                        std::array::from_fn(|c| dst.0.wrapping_add((img * co + b * C + c) * l));
                    // SAFETY: reads of xpad at img * image_in + q + koff lie in the padded input
                    // and its slack (`Layout::of`); the weight block is (K, C); the stores write
                    // the valid positions of the block's channels below `co`, each element of the
                    // output once over all tasks; the path runs only where the CPU has AVX-512F.
                    unsafe {
                        forward_tile(
                            xs.as_ptr().add(img * image_in + v0 * LANES),
                            &koff,
                            w.as_ptr().add(b * k * C),
                            &bias[b * C..(b + 1) * C],
                            &planes,
                            (co - b * C).min(C),
                            &stores,
                        )
                    }
                }
            }
        });
    // SAFETY: every (image, channel, position) was written: the store plans cover every
    // valid position of every vector.
    unsafe { out.set_len(n) };
    xp.recycle();
    allocator::recycle(f32::into_storage(w));
    out
}

/// Whether this path takes the convolution `c` (f32, and the sizes where direct kernels pay,
/// are the caller's to check): stride 1, one group, AVX-512F, up to 32 output channels, and
/// at most an eighth of the lanes on the dropped columns. Measured (CPU seconds of 30
/// forward + backward passes, 2 threads, against `direct.rs`): 16 channels 32x32 (batch 64)
/// 0.84 / 0.86 -> 0.74 / 0.77, 32 channels 16x16 0.64 / 0.67 -> 0.55 / 0.62; with 64
/// channels at 16x16 (batch 16) no faster (0.38 / 0.39 -> 0.39 / 0.42), nor 64 -> 128 at
/// 28x28; 6 -> 16 channels 5x5 at 14x14 "valid" (4 of every 14 columns dropped) 0.13 / 0.11
/// -> 0.12 / 0.13.
pub(super) fn applies(c: &Conv) -> bool {
    let g = &c.geom;
    // Rows are `Wp = OW + d*(kw-1)` wide (stride 1).
    let dropped = g.dilation[1] * (g.kernel[1] - 1);
    c.groups == 1
        && g.stride == [1, 1]
        && c.out_channels <= 32
        && 8 * dropped <= g.output[1] + dropped
        && has_avx512f()
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `(N, Ci, H, W)`, weight `(Co, Ci, kh,
/// kw)` and optional bias (`applies(c)` must hold).
pub(super) fn forward(x: &[f32], w: &[f32], bias: Option<&[f32]>, c: &Conv) -> Vec<f32> {
    let k = c.geom.rows();
    correlate(x, c.out_channels, &c.geom, |kk, o| w[o * k + kk], bias)
}

/// Gradient of the input `(N, Ci, H, W)` from the contiguous upstream gradient, when the
/// padding is within the kernel's reach; `None` otherwise.
pub(super) fn backward_input(gy: &[f32], w: &[f32], c: &Conv) -> Option<Vec<f32>> {
    let gg = super::direct::input_grad_geometry(c)?;
    let [kh, kw] = c.geom.kernel;
    let (ci, taps) = (c.geom.channels, kh * kw);
    // Entry (o, i, j) of the turned kernel for input channel cin: w[o][cin][kh-1-i][kw-1-j].
    Some(correlate(
        gy,
        ci,
        &gg,
        |kk, cin| {
            let (o, t) = (kk / taps, kk % taps);
            w[(o * ci + cin) * taps + taps - 1 - t]
        },
        None,
    ))
}

/// One forward microkernel: `R` vectors of positions from `x` (the image's padded input
/// advanced to the first position) by the `C` channels of the packed weight block `w` (`(K,
/// C)`), plus `bias`, stored into the first `channels` of `planes` through `stores`.
///
/// # Safety
/// The CPU must have AVX-512F; every `x + koff[k] + 16*R` must lie inside the padded input,
/// `w` must hold `koff.len() * C` elements, and the stores must lie inside the planes.
unsafe fn forward_tile(
    x: *const f32,
    koff: &[usize],
    w: *const f32,
    bias: &[f32],
    planes: &[*mut f32; C],
    channels: usize,
    stores: &[&[(isize, u16)]; R],
) {
    #[cfg(target_arch = "x86_64")]
    avx512::forward_tile(x, koff, w, bias, planes, channels, stores);
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the lanes convolution needs AVX-512F")
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{C, LANES, R};
    use std::arch::x86_64::*;

    /// See [`super::forward_tile`].
    #[target_feature(enable = "avx512f")]
    pub unsafe fn forward_tile(
        x: *const f32,
        koff: &[usize],
        w: *const f32,
        bias: &[f32],
        planes: &[*mut f32; C],
        channels: usize,
        stores: &[&[(isize, u16)]; R],
    ) {
        let mut acc: [[__m512; C]; R] = [std::array::from_fn(|c| _mm512_set1_ps(bias[c])); R];
        let mut wk = w;
        for &o in koff {
            let xo = x.add(o);
            let xv: [__m512; R] = std::array::from_fn(|r| _mm512_loadu_ps(xo.add(r * LANES)));
            for c in 0..C {
                let wb = _mm512_set1_ps(*wk.add(c));
                for (a, &v) in acc.iter_mut().zip(&xv) {
                    a[c] = _mm512_fmadd_ps(v, wb, a[c]);
                }
            }
            wk = wk.add(C);
        }
        for (a, pieces) in acc.iter().zip(stores) {
            for (&plane, &v) in planes.iter().zip(a).take(channels) {
                for &(shift, mask) in *pieces {
                    _mm512_mask_storeu_ps(plane.wrapping_offset(shift), mask, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::Reference;
    use super::super::im2col::tests::out_len;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random stride-1 geometries (widths from 1 to past two vectors, rows that wrap inside
    /// a vector, dilations, paddings within and past the kernel's reach, channel counts not
    /// multiples of 8 or 4) against the definition computed in f64.
    #[test]
    fn lanes_convolution_matches_the_definition() {
        if !has_avx512f() {
            eprintln!("skipped: the CPU has no AVX-512F");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(22);
        let (mut cases, mut input_grads) = (0, 0);
        while cases < 40 {
            let kernel = [rng.random_range(1..6), rng.random_range(1..6)];
            let dilation = [rng.random_range(1..3), rng.random_range(1..3)];
            let mut padding = [rng.random_range(0..4), rng.random_range(0..4)];
            let input = [rng.random_range(1..12), rng.random_range(1..40)];
            if cases % 2 == 1 {
                // "Same": the input gradient runs here too.
                padding = [0, 1].map(|a| dilation[a] * (kernel[a] - 1) / 2);
            }
            let span = |a: usize| dilation[a] * (kernel[a] - 1) + 1;
            if (0..2).any(|a| input[a] + 2 * padding[a] < span(a)) {
                continue;
            }
            let output = [0, 1].map(|a| out_len(input[a], kernel[a], 1, padding[a], dilation[a]));
            let (ci, co) = (rng.random_range(1..20), rng.random_range(1..20));
            let batch = [1, 2, 5][cases % 3];
            let c = Conv {
                geom: ConvGeometry {
                    batch,
                    channels: ci,
                    input,
                    kernel,
                    stride: [1, 1],
                    dilation,
                    padding,
                    output,
                },
                out_channels: co,
                groups: 1,
            };
            let r = Reference::new(&c, &mut rng);
            Reference::check(&forward(&r.x, &r.w, Some(&r.bias), &c), &r.y, "forward", &c);
            if let Some(dx) = backward_input(&r.gy, &r.w, &c) {
                Reference::check(&dx, &r.dx, "grad input", &c);
                input_grads += 1;
            }
            cases += 1;
        }
        assert!(
            input_grads >= 15,
            "only {input_grads} input gradients ran here"
        );
    }
}
