//! Direct convolution of f32 NCHW tensors on CPUs with AVX-512F: forward, weight gradient and
//! (stride 1) input gradient, without a column matrix.
//!
//! im2col copies every input element `kh*kw` times into a column matrix that the gemm then
//! reads and packs once more, and col2im scatters the input gradient back the same way; on
//! resnet20 those copies were about 30% of a training step. Here the gemm reads its operand
//! where it lies (an "indirect" gemm, as XNNPACK's convolutions do): with the input
//! zero-padded once, output position `p` under kernel entry `k = (ci, i, j)` reads
//! `xpad[base[p] + koff[k]]`, where `base[p]` is the corner of `p`'s window and
//! `koff[k] = ci*Hp*Wp + i*dh*Wp + j*dw` the tap inside it. So
//!
//! ```text
//! forward:      Y^T  (P, Co) = sum_k xpad[base[p] + koff[k]] * W^T[k][co]
//! grad weight:  dW^T (K, Co) = sum_p xpad[base[p] + koff[k]] * dY^T[p][co]
//! grad input:   the forward of the upstream gradient padded by d*(r-1) - pad with the
//!               kernel turned by 180 degrees and its channels swapped (stride 1)
//! ```
//!
//! Any stride, dilation and padding works for the forward and the weight gradient (`base`
//! and `koff` absorb them). The microkernels hold 8 positions (or kernel entries) by up to
//! 48 channels, or 6 by 64, in up to 24 zmm accumulators; each step broadcasts one input
//! value per row, loads up to 4 vectors of weights (or upstream gradients) and issues up to
//! 24 FMAs. Channels are padded to a multiple of 16 in the packed operands, so the kernels
//! need no masks, and results come out position-major and are transposed to NCHW in one
//! pass.
//!
//! Every output of the forward is one task's sum over the kernel entries in order; the
//! weight gradient is summed over fixed ranges of `TASK_POSITIONS` positions, whose partial
//! sums are added in range order. So results do not depend on the number of threads.
//! [`set_enabled`] switches the path off; `gemm.rs` is the reference it is tested against.

use super::f32s;
use super::gemm::Conv;
use crate::backend::cpu::float::KernelFloat;
use crate::backend::cpu::sync_ptr::SyncPtr;
use crate::backend::cpu::{allocator, CpuElement};
use crate::backend::ConvGeometry;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

/// Fewest kernel entries (`Ci * kh * kw`) the path takes; see [`applies`].
const MIN_ENTRIES: usize = 32;
/// Fewest multiply-adds of the forward pass the path takes; see [`applies`].
const MIN_WORK: usize = 8 << 20;
/// Lanes of one zmm vector of f32.
const LANES: usize = 16;
/// Channels per packed panel: 4 vectors, the widest microkernel.
const PANEL: usize = 4 * LANES;
/// Positions (forward) or kernel entries (weight gradient) per tile, run as microkernels of
/// 8 rows for up to 48 channels (8 to 24 accumulators) and of 6 rows for 64 (24). Fewer than
/// 8 independent sums leave the FMA units idle (4 cycles of latency on 2 ports): 6 rows by
/// 16 channels were 6 chains. 12 rows need more pointers than x86-64 has registers (32
/// channels 30% slower), and 4 rows by 64 channels reload the weights too often (10% slower).
const MR: usize = 24;
/// Kernel entries per block of the forward's sum, so that a block of a weight panel
/// (`KC * 64 * 4` bytes = 128 KiB) stays in L2 across the tiles of a task.
const KC: usize = 512;
/// Position tiles per forward task.
const TASK_TILES: usize = 64;
/// Positions per block of the weight gradient's sum (their upstream gradients stay in L2
/// across the kernel-entry tiles of a task).
const WEIGHT_BLOCK: usize = 256;
/// Positions per partial sum of the weight gradient: every task reads the upstream
/// gradients of its positions once per panel, and 8192 positions of 64 channels (2 MiB) is
/// about what L2 and L3 hold for two cores.
const TASK_POSITIONS: usize = 8192;
/// Positions per task of the transposes between NCHW and position-major layouts (a multiple
/// of 16).
const TRANSPOSE_POSITIONS: usize = 4096;
/// Elements of padded planes per task of [`pad`] (64 KiB).
const PAD_TASK: usize = 16 << 10;
/// Kernel entries per task of the weight's packing.
const PACK_ROWS: usize = 256;

/// Whether the path is on: `TINYTORCH_DIRECT_CONV=0` in the environment switches it off at
/// start-up, [`set_enabled`] at any time.
static ENABLED: LazyLock<AtomicBool> = LazyLock::new(|| {
    AtomicBool::new(std::env::var("TINYTORCH_DIRECT_CONV").map_or(true, |v| v != "0"))
});

/// Turn the direct f32 convolution on or off (on by default where the CPU has AVX-512F, or
/// as `TINYTORCH_DIRECT_CONV=0|1` says). Off, f32 convolutions that Winograd does not take
/// run as im2col + gemm.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether the CPU has AVX-512, the instruction set of the microkernels.
pub(super) fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::backend::cpu::fast_math::has_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the convolution `c` of element type `T` runs here: f32, one group, AVX-512F, and
/// where it was measured faster than im2col + gemm (2 threads, forward + backward):
/// - at least `MIN_ENTRIES` kernel entries (3 -> 16 channels 3x3: 1.5x slower with fewer,
///   the microkernel's setup outweighing its short sum) and a kernel larger than 1x1 (whose
///   im2col is a plain copy: 256 -> 48 channels at 8x8 2.2x slower here);
/// - at least `MIN_WORK` multiply-adds (8 -> 16 channels 3x3, 32x32, batch 2: 2.4x slower,
///   the padding, packing and transposes each costing a pass and a fork-join);
/// - output channels that pad to a multiple of 16 with little waste ([`pads_well`]).
pub fn applies<T: KernelFloat>(c: &Conv) -> bool {
    c.geom.rows() >= MIN_ENTRIES && pays::<T>(c)
}

/// [`applies`] but for the number of kernel entries: where a direct kernel pays whatever the
/// length of its sums (the forward of `lanes.rs`, whose setup is a few broadcasts).
pub(super) fn pays<T: KernelFloat>(c: &Conv) -> bool {
    let g = &c.geom;
    let work = g.batch * g.output[0] * g.output[1] * c.out_channels * g.rows();
    T::as_f32_slice(&[]).is_some()
        && ENABLED.load(Ordering::Relaxed)
        && c.groups == 1
        && g.kernel[0] * g.kernel[1] > 1
        && work >= MIN_WORK
        && pads_well(c.out_channels)
        && has_avx512f()
}

/// Whether `c` channels padded to a multiple of 16 waste at most a fifth of the
/// microkernels' lanes (3 input channels padded to 16 made the input gradient of a 3 -> 64
/// 7x7 convolution at 224x224 1.5x slower than col2im).
fn pads_well(c: usize) -> bool {
    5 * c >= 4 * c.div_ceil(LANES) * LANES
}

/// The input gradient of `c` as a forward correlation of the upstream gradient, with the
/// kernel turned by 180 degrees and its channels swapped: stride 1, padding at most the
/// dilated kernel's reach (`d*(r-1) >= pad`), and an input at most 1.25x the output's size.
/// The correlation multiplies the whole padded upstream gradient, zeros included, so it does
/// `H*W / (OH*OW)` times the necessary work: 3x for a 7x7 "valid" convolution of 14x14
/// images, measured 30% slower than col2im.
pub(super) fn input_grad_geometry(c: &Conv) -> Option<ConvGeometry> {
    let g = &c.geom;
    let reach = |a: usize| g.dilation[a] * (g.kernel[a] - 1);
    let (inputs, outputs) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
    if g.stride != [1, 1] || (0..2).any(|a| g.padding[a] > reach(a)) || 4 * inputs > 5 * outputs {
        return None;
    }
    Some(ConvGeometry {
        batch: g.batch,
        channels: c.out_channels,
        input: g.output,
        kernel: g.kernel,
        stride: [1, 1],
        dilation: g.dilation,
        padding: [reach(0) - g.padding[0], reach(1) - g.padding[1]],
        output: g.input,
    })
}

/// A `(K, C)` operand packed for the microkernels: `C` padded to `cp`, a multiple of 16, and
/// cut into panels of up to 64 channels, each panel `(K, width)` row-major; the panel that
/// starts at channel `s` begins at element `K * s`.
struct Panels {
    k: usize,
    cp: usize,
    data: Vec<f32>,
}

impl Panels {
    /// Pack `at(k, c)` for `k < K`, `c < C`; the padding channels are zero.
    fn new(k: usize, c: usize, at: impl Fn(usize, usize) -> f32 + Sync) -> Panels {
        let cp = c.div_ceil(LANES) * LANES;
        let mut data = allocator::zeros::<f32>(k * cp);
        data.par_chunks_mut(k * PANEL)
            .enumerate()
            .for_each(|(pi, panel)| {
                let (start, width) = (pi * PANEL, panel.len() / k.max(1));
                for (kk, row) in panel.chunks_exact_mut(width.max(1)).enumerate() {
                    for (j, v) in row.iter_mut().enumerate() {
                        if start + j < c {
                            *v = at(kk, start + j);
                        }
                    }
                }
            });
        Panels { k, cp, data }
    }

    /// Pack the transpose of the row-major `(C, K)` matrix `m` (the forward's weight) with
    /// 16x16 block transposes, in blocks of `PACK_ROWS` entries so that even one panel
    /// splits over the threads.
    fn transposed(m: &[f32], c: usize, k: usize) -> Panels {
        let cp = c.div_ceil(LANES) * LANES;
        let mut data = allocator::take::<f32>(k * cp);
        data.spare_capacity_mut()[..k * cp]
            .par_chunks_mut((k * PANEL).max(1))
            .enumerate()
            .for_each(|(pi, panel)| {
                let (start, width) = (pi * PANEL, panel.len() / k);
                panel
                    .par_chunks_mut(PACK_ROWS * width)
                    .enumerate()
                    .for_each(|(b, block)| {
                        // SAFETY: the rows read (from `start`, at most `width`, below `c`)
                        // and columns (from b * PACK_ROWS, `block.len() / width` of them) of
                        // `m` are in bounds; `block` is (those columns, width); the path runs
                        // only where the CPU has AVX-512F.
                        unsafe {
                            transpose_in(
                                m.as_ptr().add(start * k + b * PACK_ROWS),
                                k,
                                (c - start).min(width),
                                block.len() / width,
                                block.as_mut_ptr().cast(),
                                width,
                            )
                        }
                    });
            });
        // SAFETY: `transpose_in` wrote every element (zeros in the padding channels).
        unsafe { data.set_len(k * cp) };
        Panels { k, cp, data }
    }

    /// Hand the packed buffer back to the caching allocator.
    fn recycle(self) {
        allocator::recycle(f32::into_storage(self.data));
    }

    /// `(first channel, width)` of every panel.
    fn panels(&self) -> impl Iterator<Item = (usize, usize)> {
        panels(self.cp)
    }
}

/// `(first channel, width)` of the 64-channel panels of `cp` (padded) channels.
fn panels(cp: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..cp).step_by(PANEL).map(move |s| (s, PANEL.min(cp - s)))
}

/// The zero-padded input `(N, C, Hp, Wp)` of a geometry: every row and column that a window
/// reads, so the kernels need no bounds checks. Borrowed when nothing needs padding.
pub(super) struct Padded<'a> {
    /// The planes, then the zeros asked for past them.
    pub data: Cow<'a, [f32]>,
    /// Padded height.
    pub hp: usize,
    /// Padded width.
    pub wp: usize,
}

/// The padded copy of the `(N, C, H, W)` input `x` of the geometry `g`, followed by `slack`
/// zeros (for kernels that read past the last plane).
pub(super) fn pad<'a>(x: &'a [f32], g: &ConvGeometry, slack: usize) -> Padded<'a> {
    let [h, w] = g.input;
    // The last row (column) a window reads, plus one, in padded coordinates.
    let reach = |a: usize| g.stride[a] * (g.output[a] - 1) + g.dilation[a] * (g.kernel[a] - 1) + 1;
    let (hp, wp) = (
        (g.padding[0] + h).max(reach(0)),
        (g.padding[1] + w).max(reach(1)),
    );
    if hp == h && wp == w && slack == 0 {
        return Padded {
            data: Cow::Borrowed(x),
            hp,
            wp,
        };
    }
    let [ph, pw] = g.padding;
    let planes = g.batch * g.channels * hp * wp;
    let len = planes + slack;
    if h * w == 0 {
        return Padded {
            data: Cow::Owned(allocator::zeros(len)),
            hp,
            wp,
        };
    }
    let mut data = allocator::take::<f32>(len);
    for v in &mut data.spare_capacity_mut()[planes..len] {
        v.write(0.0);
    }
    // One pass: each padded plane written in order, its border zeroed around the rows copied
    // (no zeroing of the whole buffer first); planes in groups of about 64 KiB per task.
    let group = (PAD_TASK / (hp * wp)).max(1);
    data.spare_capacity_mut()[..planes]
        .par_chunks_mut(group * hp * wp)
        .zip(x.par_chunks(group * h * w))
        .for_each(|(dst, src)| {
            for (plane, image) in dst.chunks_exact_mut(hp * wp).zip(src.chunks_exact(h * w)) {
                let d = plane.as_mut_ptr().cast::<f32>();
                // SAFETY: `d` is the (hp, wp) plane, `image` the (h, w) one, and the rows
                // ph..ph+h, columns pw..pw+w of the plane hold it; the rest is zeroed. Every
                // element of the plane is written once.
                unsafe {
                    std::ptr::write_bytes(d, 0, ph * wp + pw);
                    for (y, row) in image.chunks_exact(w).enumerate() {
                        let start = d.add((ph + y) * wp + pw);
                        std::ptr::copy_nonoverlapping(row.as_ptr(), start, w);
                        // The right border of this row and the left border of the next.
                        let gap = if y + 1 < h { wp - w } else { wp - w - pw };
                        std::ptr::write_bytes(start.add(w), 0, gap);
                    }
                    let written = (ph + h) * wp;
                    std::ptr::write_bytes(d.add(written), 0, hp * wp - written);
                }
            }
        });
    // SAFETY: every element of every plane was written above.
    unsafe { data.set_len(len) };
    Padded {
        data: Cow::Owned(data),
        hp,
        wp,
    }
}

impl Padded<'_> {
    /// Hand an owned buffer back to the caching allocator.
    pub(super) fn recycle(self) {
        if let Cow::Owned(v) = self.data {
            allocator::recycle(f32::into_storage(v));
        }
    }
}

/// `koff[k]` of every kernel entry `k = (ci, i, j)`, the weight's own order.
pub(super) fn offsets(g: &ConvGeometry, hp: usize, wp: usize) -> Vec<usize> {
    let [kh, kw] = g.kernel;
    let [dh, dw] = g.dilation;
    (0..g.channels)
        .flat_map(|c| (0..kh).flat_map(move |i| (0..kw).map(move |j| (c, i, j))))
        .map(|(c, i, j)| c * hp * wp + i * dh * wp + j * dw)
        .collect()
}

/// `base[p]` of the output positions `p0..p0 + n` (`(image, oy, ox)` in NCHW order) in the
/// padded input, into `out`; `n` may run past the last position, whose base is repeated.
fn bases(g: &ConvGeometry, hp: usize, wp: usize, p0: usize, n: usize, out: &mut Vec<usize>) {
    let [oh, ow] = g.output;
    let last = g.batch * oh * ow - 1;
    let (mut img, q) = (p0.min(last) / (oh * ow), p0.min(last) % (oh * ow));
    let (mut oy, mut ox) = (q / ow, q % ow);
    out.clear();
    for p in p0..p0 + n {
        out.push(img * g.channels * hp * wp + oy * g.stride[0] * wp + ox * g.stride[1]);
        if p < last {
            ox += 1;
            if ox == ow {
                (ox, oy) = (0, oy + 1);
                if oy == oh {
                    (oy, img) = (0, img + 1);
                }
            }
        }
    }
}

/// The correlation of `x` `(N, C, H, W)` with the packed `(C*kh*kw, Co)` weight `w` under
/// the geometry `g`, plus bias: `(N, Co, OH, OW)`.
fn correlate(x: &[f32], w: &Panels, co: usize, g: &ConvGeometry, bias: Option<&[f32]>) -> Vec<f32> {
    let xp = pad(x, g, 0);
    let koff = offsets(g, xp.hp, xp.wp);
    let (l, cp) = (g.output[0] * g.output[1], w.cp);
    let positions = g.batch * l;
    let tiles = positions.div_ceil(MR);
    // Y^T (tiles * MR, cp): every element is written by the microkernels (the rows past
    // `positions` repeat the last position and are dropped).
    let mut yt = allocator::take::<f32>(tiles * MR * cp);
    let xs: &[f32] = &xp.data;
    // A few tasks per thread, each of whole tiles (the split does not change any result).
    let per_task = tiles
        .div_ceil(4 * rayon::current_num_threads().max(1))
        .clamp(1, TASK_TILES);
    yt.spare_capacity_mut()[..tiles * MR * cp]
        .par_chunks_mut(per_task * MR * cp)
        .enumerate()
        .for_each(|(task, dst)| {
            let task_tiles = dst.len() / (MR * cp);
            let mut base = Vec::with_capacity(task_tiles * MR);
            bases(
                g,
                xp.hp,
                xp.wp,
                task * per_task * MR,
                task_tiles * MR,
                &mut base,
            );
            for (ps, width) in w.panels() {
                for k0 in (0..w.k).step_by(KC) {
                    let kn = KC.min(w.k - k0);
                    // SAFETY: the panel block is rows k0..k0+kn of the (K, width) panel that
                    // starts at K*ps; tile rows lie in `dst`; every base + koff lies inside
                    // the padded input, which holds every row and column a window reads.
                    let wk = unsafe { w.data.as_ptr().add(w.k * ps + k0 * width) };
                    for (t, tile) in base.chunks_exact(MR).enumerate() {
                        let tile: &[usize; MR] = tile.try_into().expect("tiles of MR");
                        unsafe {
                            let out = dst.as_mut_ptr().add(t * MR * cp + ps).cast::<f32>();
                            forward_tile(
                                width / LANES,
                                xs.as_ptr(),
                                tile,
                                &koff[k0..k0 + kn],
                                wk,
                                out,
                                cp,
                                k0 > 0,
                            );
                        }
                    }
                }
            }
        });
    // SAFETY: every tile's rows were written for every panel (the first k-block stores).
    unsafe { yt.set_len(tiles * MR * cp) };
    xp.recycle();
    // (N*L, cp) -> (N, Co, L), adding the bias.
    let mut out = allocator::take::<f32>(g.batch * co * l);
    let dst = SyncPtr(out.spare_capacity_mut().as_mut_ptr().cast::<f32>());
    position_pieces(g.batch, l).for_each(|(i, q0, qn)| {
        // SAFETY: rows i*l + q0.. of `yt` are (qn, cp), and columns q0..q0 + qn of image
        // i's (co, l) block of `out` (co <= cp) belong to this piece alone; the path runs
        // only where the CPU has AVX-512F.
        unsafe {
            let src = &yt[(i * l + q0) * cp..(i * l + q0 + qn) * cp];
            transpose_out(src, cp, dst.add(i * co * l + q0), l, co, qn, bias)
        }
    });
    // SAFETY: every (image, channel, position) was written.
    unsafe { out.set_len(g.batch * co * l) };
    allocator::recycle(f32::into_storage(yt));
    out
}

/// The transposes' tasks, `(image, first position, positions)`: every image cut into pieces
/// of `TRANSPOSE_POSITIONS`, so that a batch of one image is spread over the threads too
/// (3 -> 64 channels 7x7 at 224x224, batch 1: the transposes were 12% of a forward +
/// backward, on one thread).
fn position_pieces(n: usize, l: usize) -> impl ParallelIterator<Item = (usize, usize, usize)> {
    let per_image = l.div_ceil(TRANSPOSE_POSITIONS).max(1);
    (0..n * per_image).into_par_iter().map(move |t| {
        let q0 = t % per_image * TRANSPOSE_POSITIONS;
        (t / per_image, q0, TRANSPOSE_POSITIONS.min(l - q0))
    })
}

/// The `(N*L, cp)` transpose of the upstream gradient `(N, Co, L)`, zero in the padding
/// channels.
fn transpose_grad(gy: &[f32], n: usize, co: usize, l: usize, cp: usize) -> Vec<f32> {
    let mut gt = allocator::take::<f32>(n * l * cp);
    let dst = SyncPtr(gt.spare_capacity_mut().as_mut_ptr().cast::<f32>());
    position_pieces(n, l).for_each(|(i, q0, qn)| {
        // SAFETY: columns q0..q0 + qn of image i's (co, l) block of `gy` are in bounds, and
        // rows i*l + q0.. of the (n*l, cp) `gt` belong to this piece alone; the path runs
        // only where the CPU has AVX-512F.
        unsafe {
            let src = gy[i * co * l..].as_ptr().add(q0);
            transpose_in(src, l, co, qn, dst.add((i * l + q0) * cp), cp)
        }
    });
    // SAFETY: `transpose_in` wrote every element (zeros in the padding channels).
    unsafe { gt.set_len(n * l * cp) };
    gt
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `(N, Ci, H, W)`, weight
/// `(Co, Ci, kh, kw)` and optional bias (`applies(c)` must hold).
pub fn forward<T: KernelFloat>(x: &[T], w: &[T], bias: Option<&[T]>, c: &Conv) -> Vec<T> {
    let (x, w) = (f32s(x), f32s(w));
    let bias = bias.map(f32s);
    let k = c.geom.rows();
    let packed = Panels::transposed(w, c.out_channels, k);
    let y = correlate(x, &packed, c.out_channels, &c.geom, bias);
    packed.recycle();
    T::from_f32_vec(y)
}

/// Gradient of the input `(N, Ci, H, W)` from the contiguous upstream gradient, when the
/// direct path computes it (stride 1, padding within the kernel's reach); `None` otherwise.
pub fn backward_input<T: KernelFloat>(gy: &[T], w: &[T], c: &Conv) -> Option<Vec<T>> {
    // The input channels must pad well to a multiple of 16 ([`pads_well`]) here.
    let gg = input_grad_geometry(c).filter(|_| pads_well(c.geom.channels))?;
    let (gy, w) = (f32s(gy), f32s(w));
    let [kh, kw] = c.geom.kernel;
    let (ci, taps) = (c.geom.channels, kh * kw);
    // Entry (o, i, j) of the turned kernel for input channel ci: w[o][ci][kh-1-i][kw-1-j].
    let packed = Panels::new(c.out_channels * taps, ci, |kk, cin| {
        let (o, t) = (kk / taps, kk % taps);
        w[(o * ci + cin) * taps + taps - 1 - t]
    });
    let gx = correlate(gy, &packed, ci, &gg, None);
    packed.recycle();
    Some(T::from_f32_vec(gx))
}

/// Gradient of the weight `(Co, Ci, kh, kw)` from the contiguous input and upstream gradient.
pub fn backward_weight<T: KernelFloat>(x: &[T], gy: &[T], c: &Conv) -> Vec<T> {
    let (x, gy) = (f32s(x), f32s(gy));
    let g = &c.geom;
    let (co, k, l) = (c.out_channels, g.rows(), g.output[0] * g.output[1]);
    let positions = g.batch * l;
    let cp = co.div_ceil(LANES) * LANES;
    let xp = pad(x, g, 0);
    let mut koff = offsets(g, xp.hp, xp.wp);
    let ktiles = k.div_ceil(MR);
    // Entries past K read the window's corner; their rows are dropped.
    koff.resize(ktiles * MR, 0);
    let gt = transpose_grad(gy, g.batch, co, l, cp);
    // Partial dW^T (ktiles * MR, cp) of every range of TASK_POSITIONS positions (fixed, so
    // the partial sums and their order do not depend on the number of threads), each computed
    // by tasks over ranges of kernel-entry tiles (split further when there are few ranges,
    // so that every thread gets work).
    let ranges = positions.div_ceil(TASK_POSITIONS);
    let threads = rayon::current_num_threads().max(1);
    let per_task = ktiles.div_ceil((2 * threads).div_ceil(ranges));
    let part = ktiles * MR * cp;
    let mut parts = allocator::take::<f32>(ranges * part);
    let xs: &[f32] = &xp.data;
    parts.spare_capacity_mut()[..ranges * part]
        .par_chunks_mut(part)
        .enumerate()
        .for_each(|(range, partial)| {
            let (p_start, p_end) = (
                range * TASK_POSITIONS,
                positions.min((range + 1) * TASK_POSITIONS),
            );
            partial
                .par_chunks_mut(per_task * MR * cp)
                .enumerate()
                .for_each(|(task, dst)| {
                    let first = task * per_task;
                    let task_tiles = dst.len() / (MR * cp);
                    let mut base = Vec::with_capacity(WEIGHT_BLOCK);
                    for p0 in (p_start..p_end).step_by(WEIGHT_BLOCK) {
                        let pn = WEIGHT_BLOCK.min(p_end - p0);
                        bases(g, xp.hp, xp.wp, p0, pn, &mut base);
                        for (ps, width) in panels(cp) {
                            for t in 0..task_tiles {
                                let kt = first + t;
                                let ko: [usize; MR] = std::array::from_fn(|i| koff[kt * MR + i]);
                                // SAFETY: the gradient block is rows p0..p0+pn of the (P, cp)
                                // transpose, channels ps..ps+width; the tile's rows lie in
                                // `dst`; every base + koff lies inside the padded input. The
                                // range's first block stores, later ones add.
                                unsafe {
                                    let out = dst.as_mut_ptr().add(t * MR * cp + ps).cast::<f32>();
                                    weight_tile(
                                        width / LANES,
                                        xs.as_ptr(),
                                        &base,
                                        &ko,
                                        gt.as_ptr().add(p0 * cp + ps),
                                        cp,
                                        out,
                                        cp,
                                        p0 > p_start,
                                    );
                                }
                            }
                        }
                    }
                });
        });
    // SAFETY: every range's first block wrote all of its partial.
    unsafe { parts.set_len(ranges * part) };
    // Added in range order.
    let (dwt, rest) = parts.split_at_mut(part);
    for p in rest.chunks_exact(part) {
        dwt.par_chunks_mut(1 << 14)
            .zip(p.par_chunks(1 << 14))
            .for_each(|(t, p)| t.iter_mut().zip(p).for_each(|(t, &v)| *t += v));
    }
    xp.recycle();
    allocator::recycle(f32::into_storage(gt));
    // (K, cp) -> (Co, K), 16 output channels per task.
    let mut dw = allocator::take::<f32>(co * k);
    let dwt: &[f32] = dwt;
    dw.spare_capacity_mut()[..co * k]
        .par_chunks_mut((LANES * k).max(1))
        .enumerate()
        .for_each(|(b, dst)| {
            // SAFETY: `dwt[b * 16..]` holds the (K, cp) transpose's columns from b * 16 on
            // and `dst` is (rows, K); the path runs only where the CPU has AVX-512F.
            unsafe {
                let rows = dst.len() / k;
                transpose_out(
                    &dwt[b * LANES..],
                    cp,
                    dst.as_mut_ptr().cast(),
                    k,
                    rows,
                    k,
                    None,
                )
            }
        });
    // SAFETY: every (output channel, entry) was written.
    unsafe { dw.set_len(co * k) };
    allocator::recycle(f32::into_storage(parts));
    T::from_f32_vec(dw)
}

/// One forward tile: `out[i][j] (+)= sum_k x[bases[i] + koff[k]] * w[k][j]` for the `MR`
/// positions `i` and `nv * 16` channels `j` (row stride `ldo`; `w` rows of `nv * 16`).
///
/// # Safety
/// The CPU must have AVX-512F, `nv` must be 1 to 4, and every address read or written must
/// lie inside its buffer.
#[allow(clippy::too_many_arguments)]
unsafe fn forward_tile(
    nv: usize,
    x: *const f32,
    bases: &[usize; MR],
    koff: &[usize],
    w: *const f32,
    out: *mut f32,
    ldo: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use avx512::forward_tile as f;
        match nv {
            1 => in_rows::<8>(bases, |r, b| {
                f::<1, 8>(x, b, koff, w, out.add(r * ldo), ldo, accumulate)
            }),
            2 => in_rows::<8>(bases, |r, b| {
                f::<2, 8>(x, b, koff, w, out.add(r * ldo), ldo, accumulate)
            }),
            3 => in_rows::<8>(bases, |r, b| {
                f::<3, 8>(x, b, koff, w, out.add(r * ldo), ldo, accumulate)
            }),
            _ => in_rows::<6>(bases, |r, b| {
                f::<4, 6>(x, b, koff, w, out.add(r * ldo), ldo, accumulate)
            }),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct convolution needs AVX-512F")
}

/// One weight-gradient tile: `out[i][j] (+)= sum_p x[bases[p] + koff[i]] * g[p][j]` for the
/// `MR` kernel entries `i` and `nv * 16` channels `j` (`g` row stride `ldg`, `out` row stride
/// `ldo`).
///
/// # Safety
/// As [`forward_tile`].
#[allow(clippy::too_many_arguments)]
unsafe fn weight_tile(
    nv: usize,
    x: *const f32,
    bases: &[usize],
    koff: &[usize; MR],
    g: *const f32,
    ldg: usize,
    out: *mut f32,
    ldo: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use avx512::weight_tile as f;
        match nv {
            1 => in_rows::<8>(koff, |r, k| {
                f::<1, 8>(x, bases, k, g, ldg, out.add(r * ldo), ldo, accumulate)
            }),
            2 => in_rows::<8>(koff, |r, k| {
                f::<2, 8>(x, bases, k, g, ldg, out.add(r * ldo), ldo, accumulate)
            }),
            3 => in_rows::<8>(koff, |r, k| {
                f::<3, 8>(x, bases, k, g, ldg, out.add(r * ldo), ldo, accumulate)
            }),
            _ => in_rows::<6>(koff, |r, k| {
                f::<4, 6>(x, bases, k, g, ldg, out.add(r * ldo), ldo, accumulate)
            }),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct convolution needs AVX-512F")
}

/// Run `kernel(first row, rows)` on the tile's rows in groups of `R` (which divides `MR`).
#[inline(always)]
fn in_rows<const R: usize>(rows: &[usize; MR], mut kernel: impl FnMut(usize, &[usize; R])) {
    for (i, group) in rows.chunks_exact(R).enumerate() {
        kernel(i * R, group.try_into().expect("R divides MR"));
    }
}

/// `dst (rows, cols; row stride ldd) = src^T (+ bias[r] on row r)`, `src` being
/// `(cols, ld)` with `rows <= ld` and `ld` a multiple of 16.
///
/// # Safety
/// The CPU must have AVX-512F; `src` and `dst` must hold those matrices.
unsafe fn transpose_out(
    src: &[f32],
    ld: usize,
    dst: *mut f32,
    ldd: usize,
    rows: usize,
    cols: usize,
    bias: Option<&[f32]>,
) {
    #[cfg(target_arch = "x86_64")]
    avx512::transpose_out(src, ld, dst, ldd, rows, cols, bias);
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct convolution needs AVX-512F")
}

/// `dst (cols, ld) = src^T`, zero in columns `rows..ld`, `src` being `(rows, cols)` with row
/// stride `lds` and `ld` a multiple of 16 of at least `rows`.
///
/// # Safety
/// As [`transpose_out`].
unsafe fn transpose_in(
    src: *const f32,
    lds: usize,
    rows: usize,
    cols: usize,
    dst: *mut f32,
    ld: usize,
) {
    #[cfg(target_arch = "x86_64")]
    avx512::transpose_in(src, lds, rows, cols, dst, ld);
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct convolution needs AVX-512F")
}

/// The AVX-512 microkernels (`R x NV` zmm accumulators, one broadcast per row and step) and
/// the 16x16 block transposes between position-major and NCHW layouts.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::LANES;
    use std::arch::x86_64::*;

    /// The transpose of the 16x16 matrix whose rows are `r`, in four rounds of shuffles
    /// (pairs of elements, of 64-bit pairs, then of 128-bit quarters twice).
    #[inline(always)]
    unsafe fn transpose16(mut r: [__m512; 16]) -> [__m512; 16] {
        let mut t = [_mm512_setzero_ps(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        let (lo, hi) = (
            |a: __m512, b: __m512| {
                _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
            },
            |a: __m512, b: __m512| {
                _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
            },
        );
        for g in 0..4 {
            let b = 4 * g;
            r[b] = lo(t[b], t[b + 2]);
            r[b + 1] = hi(t[b], t[b + 2]);
            r[b + 2] = lo(t[b + 1], t[b + 3]);
            r[b + 3] = hi(t[b + 1], t[b + 3]);
        }
        for h in 0..2 {
            let b = 8 * h;
            for j in 0..4 {
                t[b + j] = _mm512_shuffle_f32x4::<0x88>(r[b + j], r[b + 4 + j]);
                t[b + 4 + j] = _mm512_shuffle_f32x4::<0xdd>(r[b + j], r[b + 4 + j]);
            }
        }
        for j in 0..8 {
            r[j] = _mm512_shuffle_f32x4::<0x88>(t[j], t[8 + j]);
            r[8 + j] = _mm512_shuffle_f32x4::<0xdd>(t[j], t[8 + j]);
        }
        r
    }

    /// The mask of the first `n` lanes.
    fn lanes(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// See [`super::transpose_out`].
    #[target_feature(enable = "avx512f")]
    pub unsafe fn transpose_out(
        src: &[f32],
        ld: usize,
        dst: *mut f32,
        ldd: usize,
        rows: usize,
        cols: usize,
        bias: Option<&[f32]>,
    ) {
        for q0 in (0..cols).step_by(LANES) {
            let qn = LANES.min(cols - q0);
            for r0 in (0..rows).step_by(LANES) {
                let block = std::array::from_fn(|q| match q < qn {
                    true => _mm512_loadu_ps(src[(q0 + q) * ld + r0..][..LANES].as_ptr()),
                    false => _mm512_setzero_ps(),
                });
                let t = transpose16(block);
                for (r, &v) in t.iter().enumerate().take(rows - r0) {
                    let v = match bias {
                        Some(b) => _mm512_add_ps(v, _mm512_set1_ps(b[r0 + r])),
                        None => v,
                    };
                    _mm512_mask_storeu_ps(dst.add((r0 + r) * ldd + q0), lanes(qn), v);
                }
            }
        }
    }

    /// See [`super::transpose_in`].
    #[target_feature(enable = "avx512f")]
    pub unsafe fn transpose_in(
        src: *const f32,
        lds: usize,
        rows: usize,
        cols: usize,
        dst: *mut f32,
        ld: usize,
    ) {
        for q0 in (0..cols).step_by(LANES) {
            let qn = LANES.min(cols - q0);
            for r0 in (0..ld).step_by(LANES) {
                let block = std::array::from_fn(|r| match r0 + r < rows {
                    true => _mm512_maskz_loadu_ps(lanes(qn), src.add((r0 + r) * lds + q0)),
                    false => _mm512_setzero_ps(),
                });
                for (q, &v) in transpose16(block).iter().enumerate().take(qn) {
                    _mm512_storeu_ps(dst.add((q0 + q) * ld + r0), v);
                }
            }
        }
    }

    /// The `R x NV` accumulators of a tile: zero, or the tile's current values in `out`
    /// (row stride `ldo`) when `accumulate`.
    #[inline(always)]
    unsafe fn load_tile<const NV: usize, const R: usize>(
        out: *const f32,
        ldo: usize,
        accumulate: bool,
    ) -> [[__m512; NV]; R] {
        let mut acc = [[_mm512_setzero_ps(); NV]; R];
        if accumulate {
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, a) in row.iter_mut().enumerate() {
                    *a = _mm512_loadu_ps(out.add(i * ldo + j * LANES));
                }
            }
        }
        acc
    }

    /// Store a tile's accumulators into `out` (row stride `ldo`).
    #[inline(always)]
    unsafe fn store_tile<const NV: usize, const R: usize>(
        acc: &[[__m512; NV]; R],
        out: *mut f32,
        ldo: usize,
    ) {
        for (i, row) in acc.iter().enumerate() {
            for (j, &a) in row.iter().enumerate() {
                _mm512_storeu_ps(out.add(i * ldo + j * LANES), a);
            }
        }
    }

    /// See [`super::forward_tile`].
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn forward_tile<const NV: usize, const R: usize>(
        x: *const f32,
        bases: &[usize; R],
        koff: &[usize],
        w: *const f32,
        out: *mut f32,
        ldo: usize,
        accumulate: bool,
    ) {
        let mut acc = load_tile::<NV, R>(out, ldo, accumulate);
        let rows: [*const f32; R] = std::array::from_fn(|i| x.add(bases[i]));
        let mut wk = w;
        for &o in koff {
            let mut wv = [_mm512_setzero_ps(); NV];
            for (j, v) in wv.iter_mut().enumerate() {
                *v = _mm512_loadu_ps(wk.add(j * LANES));
            }
            for (row, a) in rows.iter().zip(acc.iter_mut()) {
                let xb = _mm512_set1_ps(*row.add(o));
                for (a, &v) in a.iter_mut().zip(&wv) {
                    *a = _mm512_fmadd_ps(xb, v, *a);
                }
            }
            wk = wk.add(NV * LANES);
        }
        store_tile(&acc, out, ldo);
    }

    /// See [`super::weight_tile`].
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn weight_tile<const NV: usize, const R: usize>(
        x: *const f32,
        bases: &[usize],
        koff: &[usize; R],
        g: *const f32,
        ldg: usize,
        out: *mut f32,
        ldo: usize,
        accumulate: bool,
    ) {
        let mut acc = load_tile::<NV, R>(out, ldo, accumulate);
        let ko = *koff;
        let mut gp = g;
        for &b in bases {
            let xb = x.add(b);
            let mut gv = [_mm512_setzero_ps(); NV];
            for (j, v) in gv.iter_mut().enumerate() {
                *v = _mm512_loadu_ps(gp.add(j * LANES));
            }
            for (&o, a) in ko.iter().zip(acc.iter_mut()) {
                let xv = _mm512_set1_ps(*xb.add(o));
                for (a, &v) in a.iter_mut().zip(&gv) {
                    *a = _mm512_fmadd_ps(xv, v, *a);
                }
            }
            gp = gp.add(ldg);
        }
        store_tile(&acc, out, ldo);
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::Reference;
    use super::super::im2col::tests::out_len;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The block-transposed packing of a `(C, K)` matrix equals the element-wise packing, on
    /// channel counts within one panel, past one and not multiples of 16, and entry counts
    /// past one packing block.
    #[test]
    fn transposed_packing_matches_the_elementwise_one() {
        if !has_avx512f() {
            eprintln!("skipped: the CPU has no AVX-512F");
            return;
        }
        for (c, k) in [(5usize, 1usize), (64, 300), (70, 33), (130, 600)] {
            let m: Vec<f32> = (0..c * k).map(|i| i as f32).collect();
            let fast = Panels::transposed(&m, c, k);
            let slow = Panels::new(k, c, |kk, o| m[o * k + kk]);
            assert_eq!((fast.k, fast.cp), (slow.k, slow.cp));
            assert_eq!(fast.data, slow.data, "c={c} k={k}");
        }
    }

    /// Both block transposes against the definition, on sizes with partial blocks.
    #[test]
    fn transposes_match_the_definition() {
        if !has_avx512f() {
            eprintln!("skipped: the CPU has no AVX-512F");
            return;
        }
        for (rows, cols) in [(16usize, 16usize), (5, 37), (33, 16), (48, 3), (17, 50)] {
            let ld = rows.div_ceil(LANES) * LANES;
            let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            // (rows, cols) -> (cols, ld), zero past `rows`.
            let mut t = vec![f32::NAN; cols * ld];
            unsafe { transpose_in(src.as_ptr(), cols, rows, cols, t.as_mut_ptr(), ld) };
            for q in 0..cols {
                for r in 0..ld {
                    let want = if r < rows { src[r * cols + q] } else { 0.0 };
                    assert_eq!(t[q * ld + r], want, "in {rows}x{cols} at ({q}, {r})");
                }
            }
            // And back, plus a bias per row.
            let bias: Vec<f32> = (0..rows).map(|r| 0.5 + r as f32).collect();
            let mut back = vec![f32::NAN; rows * cols];
            unsafe { transpose_out(&t, ld, back.as_mut_ptr(), cols, rows, cols, Some(&bias)) };
            for (i, (&b, &s)) in back.iter().zip(&src).enumerate() {
                assert_eq!(b, s + bias[i / cols], "out {rows}x{cols} at {i}");
            }
        }
    }

    /// Random geometries (strides, dilations, paddings, channel counts past one panel and
    /// not multiples of 16, position and kernel-entry counts not multiples of 12) against the
    /// definition computed in f64.
    #[test]
    fn direct_convolution_matches_the_definition() {
        if !has_avx512f() {
            eprintln!("skipped: the CPU has no AVX-512F");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let (mut cases, mut input_grads) = (0, 0);
        while cases < 40 {
            let kernel = [rng.random_range(1..6), rng.random_range(1..6)];
            let mut stride = [rng.random_range(1..3), rng.random_range(1..3)];
            let dilation = [rng.random_range(1..3), rng.random_range(1..3)];
            let mut padding = [rng.random_range(0..4), rng.random_range(0..4)];
            let mut input = [rng.random_range(1..12), rng.random_range(1..12)];
            if cases % 3 == 1 {
                // About "same": the input gradient runs here too.
                stride = [1, 1];
                padding = [0, 1].map(|a| dilation[a] * (kernel[a] - 1) / 2);
                input = input.map(|v| v + 6);
            }
            let span = |a: usize| dilation[a] * (kernel[a] - 1) + 1;
            if (0..2).any(|a| input[a] + 2 * padding[a] < span(a)) {
                continue;
            }
            let output =
                [0, 1].map(|a| out_len(input[a], kernel[a], stride[a], padding[a], dilation[a]));
            let (ci, co) = if cases % 4 == 0 {
                (rng.random_range(1..40), rng.random_range(60..140))
            } else if cases % 3 == 1 {
                // Input channels that pad well to 16, so the input gradient runs here.
                (rng.random_range(13..17), rng.random_range(1..40))
            } else {
                (rng.random_range(1..8), rng.random_range(1..40))
            };
            let batch = [1, 2, 5][cases % 3];
            let c = Conv {
                geom: ConvGeometry {
                    batch,
                    channels: ci,
                    input,
                    kernel,
                    stride,
                    dilation,
                    padding,
                    output,
                },
                out_channels: co,
                groups: 1,
            };
            let r = Reference::new(&c, &mut rng);
            Reference::check(&forward(&r.x, &r.w, Some(&r.bias), &c), &r.y, "forward", &c);
            Reference::check(&backward_weight(&r.x, &r.gy, &c), &r.dw, "grad weight", &c);
            // Strided, over-padded and "valid" convolutions leave it to col2im.
            if let Some(dx) = backward_input(&r.gy, &r.w, &c) {
                Reference::check(&dx, &r.dx, "grad input", &c);
                input_grads += 1;
            }
            cases += 1;
        }
        assert!(
            input_grads >= 8,
            "only {input_grads} input gradients ran here"
        );
    }

    #[test]
    fn images_of_several_transpose_pieces_match_the_definition() {
        if !has_avx512f() {
            eprintln!("skipped: the CPU has no AVX-512F");
            return;
        }
        // 70 x 67 = 4,690 positions: a whole piece of TRANSPOSE_POSITIONS and a short one
        // (not a multiple of 16) per image.
        for batch in [1, 2] {
            let c = Conv {
                geom: ConvGeometry {
                    batch,
                    channels: 16,
                    input: [70, 67],
                    kernel: [3, 3],
                    stride: [1, 1],
                    dilation: [1, 1],
                    padding: [1, 1],
                    output: [70, 67],
                },
                out_channels: 30,
                groups: 1,
            };
            assert!(applies::<f32>(&c), "{c:?}");
            let r = Reference::new(&c, &mut ChaCha8Rng::seed_from_u64(9));
            Reference::check(&forward(&r.x, &r.w, Some(&r.bias), &c), &r.y, "forward", &c);
            let dx = backward_input(&r.gy, &r.w, &c).expect("a stride-1 input gradient");
            Reference::check(&dx, &r.dx, "grad input", &c);
            // The weight gradient sums over every position of the batch (9,380 products
            // for two images): f32 rounding reaches about 1e-4 there.
            let dw = backward_weight(&r.x, &r.gy, &c);
            for (a, b) in dw.iter().zip(&r.dw) {
                assert!(
                    (*a as f64 - b).abs() < 2e-4 * (1.0 + b.abs()),
                    "{c:?}: {a} vs {b}"
                );
            }
        }
    }
}
