//! Winograd convolution on the CPU: 3x3 kernels as F(4x4, 3x3), 5x5 kernels as F(4x4, 5x5),
//! stride 1, no dilation, one group; forward and both gradients.
//!
//! Each output tile of `4 x 4` positions is computed from an `alpha x alpha` input tile
//! (`alpha = 4 + r - 1`: 6 for 3x3, 8 for 5x5) with `Y = A^T [ (G w G^T) . (B^T d B) ] A`,
//! so a tile costs `alpha^2` multiplications per input and output channel instead of
//! `16 r^2` (4x fewer for 3x3, 6.25x for 5x5). Summed over input channels, the elementwise
//! products become `alpha^2` independent gemms per block of tiles:
//! ```text
//! forward / grad input:  M[xi] (Co, T) = U[xi] (Co, Ci) @ V[xi] (Ci, T)
//! grad weight:           S[xi]^T (Ci, Co) += V[xi] (Ci, T) @ Gt[xi]^T (T, Co)
//! ```
//! with `U = G w G^T`, `V = B^T d B` and, for the weight gradient, the transformed upstream
//! gradient `Gt = A g A^T` (the same algorithm with the roles of kernel and output swapped:
//! `dW = G^T S G`). The input gradient is the forward correlation of the upstream gradient
//! with the rotated, channel-transposed kernel and padding `r - 1 - p`.
//!
//! The matrices come from the Toom-Cook construction on `alpha - 1` small points and
//! infinity ([`points`]): with `V` the evaluation matrix of polynomials of degree
//! `alpha - 1`, `B^T = V^-T`, `G` evaluates the kernel polynomial and `A^T` is the transpose
//! of the evaluation of the output polynomial. For 3x3 the points 0, 1, -1, 1/2, -2 gave the
//! smallest f32 error of the sets tried (a 256-channel sum: about 2e-6 of the largest
//! output, against 6e-6 for 0, +-1, +-2); for 5x5, 0, +-1, +-1/2, +-2 (about 4e-6 for a
//! 48-channel sum, 2.7x F(2x2, 5x5)'s error for 2.25x fewer multiplications). Results differ
//! from the im2col path by that rounding, as cuDNN's and oneDNN's Winograd kernels do.
//! [`set_enabled`] switches the path off.
//!
//! Work is split like `gemm.rs`: a rayon task per chunk of images, and inside it blocks of
//! whole tile rows, small enough (`BLOCK_TILES`, `BLOCK_BYTES`) that one block's transformed
//! tiles stay in cache between the transform and the gemms; where the chunks are fewer than
//! the threads (a batch of one image), each block's gemms are spread over the threads
//! instead. Chunk boundaries depend only on the sizes, and partial weight gradients are
//! added in chunk order, so results do not depend on the number of threads.
//!
//! The tile transforms of f32 on CPUs with AVX2 and FMA are the vector kernels of
//! `winograd_avx2.rs`; the generic ones here (any float type, any CPU) work plane-wise.

use super::gemm::{gemm_on, Conv, Mat};
#[cfg(target_arch = "x86_64")]
use super::winograd_avx2::{self as avx2, Planes, TileAt, F43, F45};
use crate::backend::cpu::allocator;
#[cfg(target_arch = "x86_64")]
use crate::backend::cpu::fast_math::has_avx2_fma;
use crate::backend::cpu::float::KernelFloat;
use crate::backend::cpu::sync_ptr::SyncPtr;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

/// Side of the largest transformed tile (`m + r - 1 = 8` for F(4, 5)).
const MAX_ALPHA: usize = 8;
/// Tiles per block at most (rounded to whole tile rows).
const BLOCK_TILES: usize = 128;
/// Bytes of transformed tiles per block (`alpha^2 (Ci + Co)` elements per tile) at most: the
/// transforms write them and the gemms read them back, so they should stay in the L2 cache.
/// 48 -> 96 channels at 5x5 (37 KB a tile), on an Intel Xeon with 2 MB of L2, batch 64
/// forward + backward, medians of three: 128 tiles 97 ms, 56 tiles 74 ms, 42 tiles 75 ms,
/// 28 tiles 81 ms, 14 tiles 86 ms.
const BLOCK_BYTES: usize = 3 << 19;
/// Transformed kernels (`U`, `alpha^2 Ci Co` elements) larger than this get blocks of at
/// least `LARGE_U_BLOCK_TILES` tiles, whatever `BLOCK_BYTES` says. Measured on the AMD EPYC
/// (1 MB of L2 a core), 2 threads, forward + backward ms, blocks of the `BLOCK_BYTES` fit /
/// 64 tiles: 256 -> 255 ch 14x14 batch 32 (20 tiles, U 9.4 MB) 85 / 58; 256 -> 255 28x28
/// batch 8, 76 / 55; 128 -> 256 16x16 batch 32 (U 4.7 MB) 41 / 36; 128 -> 256 56x56 batch 4,
/// 60 / 60.
const LARGE_U_BYTES: usize = 2 << 20;
/// See [`LARGE_U_BYTES`].
const LARGE_U_BLOCK_TILES: usize = 64;
/// A batch is cut into at least this many chunks, so that both threads get work.
const MIN_CHUNKS: usize = 4;
/// The gemms' work per tile grows with `Ci * Co`, the transforms' with `Ci + Co`: below
/// `Ci * Co / (Ci + Co) = min_channel_ratio(r)` (32 -> 32 channels gives 16) the transforms
/// cost more than they save, and im2col + gemm is used; likewise when the output is smaller
/// than `MIN_OUTPUT` across, where much of every tile is padding. Measured (2 threads,
/// forward + backward, Winograd / im2col ms). 3x3, batch 64: 16 ch 32x32 14.4 / 12.6, 32 ch
/// 16x16 11.8 / 11.6, 64 ch 8x8 11.7 / 10.9, 64 ch 16x16 26.9 / 40.6, 128 ch 8x8 32.7 /
/// 37.0; 256 -> 255 ch 28x28 (batch 8) 88 / 138; the resnet20 training step 7-10% slower
/// with Winograd on every layer that has 32 channels or more. 5x5 (F(4, 5), 6.25x fewer
/// multiplications than the definition against F(4, 3)'s 4x), 28x28, batch 16: 8 -> 16 ch
/// 2.95 / 2.57, 16 -> 16 5.75 / 4.14, 16 -> 32 6.38 / 6.58, 32 -> 32 9.3 / 13.1, 24 -> 48
/// 10.4 / 13.2.
///
/// Against the direct AVX-512 kernels (`direct.rs`) with the first, scalar transforms, 3x3
/// needed a ratio of 40 (Winograd / direct ms: 128 -> 32 ch 16x16 valid, batch 32, 14.0 /
/// 11.4; 64 -> 64 ch 16x16, batch 16, 7.7 / 5.6; 64 -> 128 ch 28x28, batch 8, 13.2 / 15.5);
/// 5x5 keeps 12 (32 -> 32 ch 28x28 12.3 / 14.8, 16 -> 32 6.6 / 6.0).
///
/// With the AVX2 tile transforms (`winograd_avx2.rs`) 3x3 pays from a ratio of 24 on both
/// CPUs this project runs on, one rule for both. On an Intel Xeon (Emerald Rapids, AVX-512
/// in full 512-bit units), Winograd / direct ms, two runs each, batch 64 unless said: 16 ch
/// 32x32 7.8-9.4 / 7.8-8.3, 32 ch 16x16 6.5-6.6 / 6.9-7.1, 64 ch 8x8 4.8-5.7 / 6.4-6.5, 64
/// ch 28x28 batch 16 14.3-14.7 / 17.2-20.1 (2026-11-26); and between ratios 24 and 32, on
/// a Xeon that `lscpu` gives as family 6 model 167 with AMX (2026-11-28, `conv_time`,
/// forward + both gradients), 128 -> 32 ch 16x16 valid batch 32
/// 8.1-8.2 / 11.3-11.9, 32 -> 128 ch 16x16 batch 32 7.8-7.9 / 11.7-12.2, 128 -> 32 ch 8x8
/// batch 32 2.8-2.9 / 3.1. On the AMD EPYC (Zen 4, AVX-512 in 256-bit halves), 128 -> 32
/// ch 16x16 valid batch 32 7.2-6.7 / 9.3-9.2, 128 -> 32 ch 8x8 batch 64 3.0-3.5 / 5.0-5.1.
///
/// Outputs need at least 7 x 7 (two tiles across, 3/4 of the second used): 512 -> 127 ch
/// 7x7 batch 32 on the AMD EPYC, forward + backward, 19-24 ms against 30-31 ms by the
/// direct kernels. The Xeon's figures were taken with a bound of 8 x 8; 7 x 7 is unmeasured
/// there.
fn min_channel_ratio(r: usize) -> usize {
    if r == 5 {
        12
    } else {
        24
    }
}

/// See [`min_channel_ratio`].
const MIN_OUTPUT: usize = 7;

/// Whether the path is on: `TINYTORCH_WINOGRAD=0` in the environment switches it off at
/// start-up, [`set_enabled`] at any time.
static ENABLED: LazyLock<AtomicBool> = LazyLock::new(|| {
    AtomicBool::new(std::env::var("TINYTORCH_WINOGRAD").map_or(true, |v| v != "0"))
});

/// Turn the Winograd path for f32 convolutions on or off (on by default, or as the
/// environment variable `TINYTORCH_WINOGRAD=0|1` says). Off, every CPU convolution runs as
/// im2col + gemm, whose rounding matches a direct summation more closely.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether the convolution `c` of element type `T` runs here.
pub fn applies<T: KernelFloat>(c: &Conv) -> bool {
    let g = &c.geom;
    T::WINOGRAD
        && ENABLED.load(Ordering::Relaxed)
        && c.groups == 1
        && g.stride == [1, 1]
        && g.dilation == [1, 1]
        && g.kernel[0] == g.kernel[1]
        && matches!(g.kernel[0], 3 | 5)
        && g.channels * c.out_channels
            >= min_channel_ratio(g.kernel[0]) * (g.channels + c.out_channels)
        && g.output[0].min(g.output[1]) >= MIN_OUTPUT
        && g.batch > 0
}

/// The matrices of F(m, r), row-major.
struct Transforms<T> {
    m: usize,
    r: usize,
    /// Side of a transformed tile, `m + r - 1`.
    alpha: usize,
    /// Elements of a transformed tile, `alpha^2`.
    tile: usize,
    /// Output transform `A^T`, `(m, alpha)`.
    at: Vec<T>,
    /// Kernel transform `G`, `(alpha, r)`.
    g: Vec<T>,
    /// Data transform `B^T`, `(alpha, alpha)`.
    bt: Vec<T>,
}

/// The `alpha - 1` finite interpolation points of tiles of side `alpha` (the last point is
/// infinity). Small points of both signs keep the transforms' entries small: measured (f32,
/// 48-channel 5x5 sums, numpy) F(4, 5) on these points errs by 4e-6 of the largest output
/// (median; 1.3e-5 at most), against 7e-6 for 0, +-1, +-2, 1/2, -1/4 and 4e-5 for
/// 0, +-1, +-1/2, 1/4, -2.
fn points(alpha: usize) -> &'static [f64] {
    match alpha {
        6 => &[0.0, 1.0, -1.0, 0.5, -2.0],
        8 => &[0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0],
        _ => unreachable!("no Winograd points for tiles of side {alpha}"),
    }
}

/// The `(alpha, n)` matrix evaluating a polynomial of `n` coefficients at the points (the
/// last row, at infinity, picks the leading coefficient).
fn evaluation(alpha: usize, n: usize) -> Vec<f64> {
    let mut e = vec![0.0; alpha * n];
    for (j, p) in points(alpha).iter().enumerate() {
        for i in 0..n {
            e[j * n + i] = p.powi(i as i32);
        }
    }
    e[(alpha - 1) * n + n - 1] = 1.0;
    e
}

/// The inverse of the `n x n` matrix `a` (Gauss-Jordan with partial pivoting).
fn invert(mut a: Vec<f64>, n: usize) -> Vec<f64> {
    let mut inv: Vec<f64> = (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| a[x * n + col].abs().total_cmp(&a[y * n + col].abs()))
            .unwrap_or(col);
        for k in 0..n {
            a.swap(col * n + k, pivot * n + k);
            inv.swap(col * n + k, pivot * n + k);
        }
        let d = a[col * n + col];
        for k in 0..n {
            a[col * n + k] /= d;
            inv[col * n + k] /= d;
        }
        for row in (0..n).filter(|&row| row != col) {
            let f = a[row * n + col];
            for k in 0..n {
                a[row * n + k] -= f * a[col * n + k];
                inv[row * n + k] -= f * inv[col * n + k];
            }
        }
    }
    inv
}

impl<T: KernelFloat> Transforms<T> {
    /// F(4, r): output tiles of 4 x 4 for both kernel sizes (`r` is 3 or 5).
    fn new(r: usize) -> Self {
        let m = 4;
        let alpha = m + r - 1;
        let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        let inv = invert(evaluation(alpha, alpha), alpha);
        let em = evaluation(alpha, m);
        Transforms {
            m,
            r,
            alpha,
            tile: alpha * alpha,
            at: cast(
                (0..m * alpha)
                    .map(|x| em[(x % alpha) * m + x / alpha])
                    .collect(),
            ),
            g: cast(evaluation(alpha, r)),
            bt: cast(
                (0..alpha * alpha)
                    .map(|x| inv[(x % alpha) * alpha + x / alpha])
                    .collect(),
            ),
        }
    }
}

/// One stride-1 correlation of `(N, Ci, H, W)` planes with `r x r` kernels into
/// `(N, Co, OH, OW)`: output `y` under tap `u` reads input `y + u - pad` (zero outside).
#[derive(Clone, Copy, Debug)]
struct Corr {
    n: usize,
    ci: usize,
    co: usize,
    input: [usize; 2],
    output: [usize; 2],
    pad: [isize; 2],
    /// Tiles down and across one output plane.
    tiles: [usize; 2],
    /// Side of a transformed tile.
    alpha: usize,
}

impl Corr {
    #[allow(clippy::too_many_arguments)]
    fn new(
        n: usize,
        ci: usize,
        co: usize,
        input: [usize; 2],
        output: [usize; 2],
        pad: [isize; 2],
        m: usize,
        r: usize,
    ) -> Corr {
        let tiles = [output[0].div_ceil(m), output[1].div_ceil(m)];
        Corr {
            n,
            ci,
            co,
            input,
            output,
            pad,
            tiles,
            alpha: m + r - 1,
        }
    }
    /// The forward convolution `c`.
    fn forward(c: &Conv, m: usize) -> Corr {
        let g = &c.geom;
        let pad = [g.padding[0] as isize, g.padding[1] as isize];
        Corr::new(
            g.batch,
            g.channels,
            c.out_channels,
            g.input,
            g.output,
            pad,
            m,
            g.kernel[0],
        )
    }
    /// The input gradient of `c`: the upstream gradient correlated with the rotated kernel.
    fn input_grad(c: &Conv, m: usize) -> Corr {
        let g = &c.geom;
        let r = g.kernel[0] as isize;
        let pad = [r - 1 - g.padding[0] as isize, r - 1 - g.padding[1] as isize];
        Corr::new(
            g.batch,
            c.out_channels,
            g.channels,
            g.output,
            g.input,
            pad,
            m,
            g.kernel[0],
        )
    }
    /// Images per chunk.
    fn per_chunk(&self) -> usize {
        self.n.div_ceil(MIN_CHUNKS).max(1)
    }
    /// `(first image, images)` of every chunk.
    fn chunks(&self) -> Vec<(usize, usize)> {
        let per = self.per_chunk();
        (0..self.n)
            .step_by(per)
            .map(|s| (s, per.min(self.n - s)))
            .collect()
    }
    /// Whether the chunks are fewer than the threads (a batch of one image is one chunk), so
    /// that each block's gemms, one per point of the transformed tile, are spread over the
    /// threads instead (each is the same product either way).
    fn spread(&self) -> bool {
        self.n.div_ceil(self.per_chunk()) < rayon::current_num_threads()
    }
    /// Tile rows per block: as many as `BLOCK_TILES` and `BLOCK_BYTES` allow, at least one.
    fn block_rows(&self) -> usize {
        let tile_bytes = self.alpha * self.alpha * (self.ci + self.co) * size_of::<f32>();
        let fit = BLOCK_BYTES / tile_bytes.max(1);
        // Every block's gemms read all of U (`alpha^2 Ci Co`): once U outgrows the L2 cache,
        // blocks that few tiles fill re-read it from L3 over and over.
        let u_bytes = self.alpha * self.alpha * self.ci * self.co * size_of::<f32>();
        let tiles = if u_bytes > LARGE_U_BYTES {
            fit.max(LARGE_U_BLOCK_TILES)
        } else {
            fit
        };
        let tiles = tiles.min(BLOCK_TILES);
        (tiles / self.tiles[1]).max(1)
    }
    /// The blocks (ranges of global tile rows `image * tiles[0] + row`) of images
    /// `start..start + nb`.
    fn blocks(&self, start: usize, nb: usize) -> impl Iterator<Item = Range<usize>> {
        let (first, end, step) = (
            start * self.tiles[0],
            (start + nb) * self.tiles[0],
            self.block_rows(),
        );
        (first..end)
            .step_by(step)
            .map(move |b| b..(b + step).min(end))
    }
    /// Most tiles in one block of a chunk of `nb` images.
    fn max_block_tiles(&self, nb: usize) -> usize {
        self.block_rows().min(nb * self.tiles[0]) * self.tiles[1]
    }
}

/// Whether the blocks' tiles are transformed by the AVX2 kernels of `winograd_avx2.rs`
/// (f32 on a CPU with AVX2 and FMA) rather than the generic plane-wise code here.
fn simd_tiles<T: KernelFloat>() -> bool {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() && T::as_f32_slice(&[]).is_some() {
        return true;
    }
    false
}

/// What `simd_tiles` promises.
#[cfg(target_arch = "x86_64")]
const F32: &str = "the AVX2 Winograd path runs on f32 only";

/// Tiles per block as the gemms see them: a whole number of vectors on the AVX2 path.
fn padded_tiles(t: usize, simd: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if simd {
        return avx2::padded(t);
    }
    let _ = simd;
    t
}

/// A block's buffer of transformed tiles or gemm results. The AVX2 transforms write every
/// element the gemms and the output transform read (padding tiles as zeros), and gemm
/// writes all of its result, so their buffers need no zero fill; the generic path's do.
fn block_buffer<T: KernelFloat>(len: usize, simd: bool) -> Vec<T> {
    if simd {
        allocator::scratch(len)
    } else {
        allocator::zeros(len)
    }
}

/// Elements from one transformed plane (one of the `alpha^2` gemm operands) of a block to the
/// next, for planes of `len` elements. On the AVX2 path an odd number of 64-byte cache lines:
/// a tile's transform touches all `alpha^2` planes, and planes a multiple of 4 KiB apart (48
/// channels of 128 tiles are 24 KiB) fall in one L1 set and evict each other, where an odd
/// number of lines apart they spread over all 64 sets.
fn plane_stride(len: usize, simd: bool) -> usize {
    if simd {
        (len.div_ceil(16) | 1) * 16
    } else {
        len
    }
}

/// Where the tiles of the tile rows `rows` lie in planes of `h x w` with `channels` planes
/// per image, images counted from `first_image`, each tile `shift` up and left of its
/// output position (the padding, for input tiles).
#[cfg(target_arch = "x86_64")]
fn tile_positions(
    c: &Corr,
    m: usize,
    rows: Range<usize>,
    first_image: usize,
    planes: Planes,
    shift: [isize; 2],
) -> Vec<TileAt> {
    let [th, tw] = c.tiles;
    let per_image = planes.channels * planes.h * planes.w;
    rows.flat_map(|gr| {
        let (img, ty) = (gr / th - first_image, gr % th);
        (0..tw).map(move |tx| TileAt {
            base: img * per_image,
            y: (ty * m) as isize - shift[0],
            x: (tx * m) as isize - shift[1],
        })
    })
    .collect()
}

/// An AVX2 tile transform into planes (`avx2::transform_input` or `transform_grad`, for one
/// Winograd size).
#[cfg(target_arch = "x86_64")]
type SimdTransform = unsafe fn(&[f32], Planes, &[TileAt], &mut [f32], usize);

/// The tile rows `rows` of `src`'s `planes` (shifted by `pad`) transformed into `dst`'s planes,
/// `stride` apart, by `kernels[0]` for 3x3 and `kernels[1]` for 5x5: the AVX2 side of
/// `input_block` and `grad_block`, whose callers checked the CPU.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn simd_block<T: KernelFloat>(
    src: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    planes: Planes,
    pad: [isize; 2],
    dst: &mut [T],
    stride: usize,
    kernels: [SimdTransform; 2],
) {
    let tiles = tile_positions(c, tr.m, rows, 0, planes, pad);
    let (src, dst) = (
        T::as_f32_slice(src).expect(F32),
        T::as_f32_slice_mut(dst).expect(F32),
    );
    assert!(dst.len() >= tr.tile * stride && stride >= planes.channels * avx2::padded(tiles.len()));
    let kernel = if tr.r == 3 { kernels[0] } else { kernels[1] };
    // SAFETY: `simd` (the callers') says the CPU has AVX2 and FMA; `dst` is long enough and
    // every tile lies in one of `src`'s images.
    unsafe { kernel(src, planes, &tiles, dst, stride) }
}

/// `transform_input` of the tile rows `rows`, by the AVX2 kernel when `simd` (then `v`'s
/// tiles are `padded_tiles` apart).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn input_block<T: KernelFloat>(
    x: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    v: &mut [T],
    stride: usize,
    s: &mut Scratch<T>,
    simd: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        let planes = Planes {
            channels: c.ci,
            h: c.input[0],
            w: c.input[1],
        };
        let kernels: [SimdTransform; 2] =
            [avx2::transform_input::<F43>, avx2::transform_input::<F45>];
        return simd_block(x, c, tr, rows, planes, c.pad, v, stride, kernels);
    }
    let _ = (simd, stride);
    transform_input(x, c, tr, rows, v, s)
}

/// `transform_grad` of the tile rows `rows`, by the AVX2 kernel when `simd`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn grad_block<T: KernelFloat>(
    gy: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    gt: &mut [T],
    stride: usize,
    s: &mut Scratch<T>,
    simd: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        let planes = Planes {
            channels: c.co,
            h: c.output[0],
            w: c.output[1],
        };
        let kernels: [SimdTransform; 2] =
            [avx2::transform_grad::<F43>, avx2::transform_grad::<F45>];
        return simd_block(gy, c, tr, rows, planes, [0, 0], gt, stride, kernels);
    }
    let _ = (simd, stride);
    transform_grad(gy, c, tr, rows, gt, s)
}

/// `transform_output` of the tile rows `rows` into `out`, the output of the chunk whose
/// first image is `first_image`, by the AVX2 kernel when `simd`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn output_block<T: KernelFloat>(
    mm: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    first_image: usize,
    stride: usize,
    bias: Option<&[T]>,
    out: &mut [MaybeUninit<T>],
    s: &mut Scratch<T>,
    simd: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        let planes = Planes {
            channels: c.co,
            h: c.output[0],
            w: c.output[1],
        };
        let tiles = tile_positions(c, tr.m, rows, first_image, planes, [0, 0]);
        let mm = T::as_f32_slice(mm).expect(F32);
        let bias = bias.map(|b| T::as_f32_slice(b).expect(F32));
        let per_image = c.co * c.output[0] * c.output[1];
        let images = tiles.last().map_or(0, |t| t.base / per_image + 1);
        assert!(out.len() >= images * per_image);
        assert!(mm.len() >= tr.tile * stride && stride >= c.co * avx2::padded(tiles.len()));
        let out = out.as_mut_ptr().cast::<f32>();
        // SAFETY: as in `simd_block`; T is f32, so `out` is f32 storage, and every tile
        // lies in its first `images` images.
        return unsafe {
            match tr.r {
                3 => avx2::transform_output::<F43>(mm, planes, &tiles, stride, bias, out),
                _ => avx2::transform_output::<F45>(mm, planes, &tiles, stride, bias, out),
            }
        };
    }
    let _ = (simd, stride);
    transform_output(mm, c, tr, rows, first_image * c.tiles[0], bias, out, s)
}

/// `dst += c * src`.
#[inline(always)]
fn axpy<T: KernelFloat>(dst: &mut [T], c: T, src: &[T]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d += c * s;
    }
}

/// `dst = sum_k coef(k) * src(k)` over `k < taps` (at most `MAX_ALPHA`), skipping zero
/// coefficients, in one pass over `dst` (the sum of each element stays in a register).
#[inline(always)]
fn combine<'a, T: KernelFloat + 'a>(
    dst: &mut [T],
    taps: usize,
    coef: impl Fn(usize) -> T,
    src: impl Fn(usize) -> &'a [T],
) {
    let len = dst.len();
    let mut c = [T::zero(); MAX_ALPHA];
    let mut s: [&[T]; MAX_ALPHA] = [&[]; MAX_ALPHA];
    let mut n = 0;
    for k in 0..taps {
        let ck = coef(k);
        if ck != T::zero() {
            (c[n], s[n]) = (ck, &src(k)[..len]);
            n += 1;
        }
    }
    match n {
        0 => dst.fill(T::zero()),
        1 => dst.iter_mut().zip(s[0]).for_each(|(d, &a)| *d = c[0] * a),
        2 => {
            let (s0, s1) = (s[0], s[1]);
            for i in 0..len {
                dst[i] = c[0] * s0[i] + c[1] * s1[i];
            }
        }
        3 => {
            let (s0, s1, s2) = (s[0], s[1], s[2]);
            for i in 0..len {
                dst[i] = c[0] * s0[i] + c[1] * s1[i] + c[2] * s2[i];
            }
        }
        _ => {
            // Four terms in one pass, any more added after (at most two).
            let (s0, s1, s2, s3) = (s[0], s[1], s[2], s[3]);
            for i in 0..len {
                dst[i] = c[0] * s0[i] + c[1] * s1[i] + c[2] * s2[i] + c[3] * s3[i];
            }
            for j in 4..n {
                axpy(dst, c[j], s[j]);
            }
        }
    }
}

/// Scratch of one task.
struct Scratch<T> {
    /// Phase planes of the input (`transform_input`) or upstream gradient (`transform_grad`).
    phases: Vec<T>,
    /// Vertically transformed phase planes; `P` of `transform_output`.
    z: Vec<T>,
    /// One transformed tile element over the block; `Y` of `transform_output`.
    row: Vec<T>,
}

impl<T: KernelFloat> Scratch<T> {
    fn new() -> Self {
        Scratch {
            phases: Vec::new(),
            z: Vec::new(),
            row: Vec::new(),
        }
    }
}

/// The first `len` elements of `v`, zeroed.
fn zeroed<T: KernelFloat>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    v.clear();
    v.resize(len, T::zero());
    v
}

/// The runs of the tile rows `rows` (global: `image * tiles_down + row`) that lie in one
/// image, as `(image, first row, rows, first padded row)`, each run followed by `ext` spare
/// padded rows.
fn segments(rows: Range<usize>, tiles_down: usize, ext: usize) -> Vec<[usize; 4]> {
    let (mut segs, mut r, mut padded) = (Vec::new(), rows.start, 0);
    while r < rows.end {
        let (img, ty) = (r / tiles_down, r % tiles_down);
        let n = (tiles_down - ty).min(rows.end - r);
        segs.push([img, ty, n, padded]);
        padded += n + ext;
        r += n;
    }
    segs
}

/// `V (alpha^2, Ci, T) = B^T d B` for every tile of the tile rows `rows` of `x` `(N, Ci, H, W)`.
///
/// Tap `k` of the tile at `(ty, tx)` is input row `ty * m + k`, i.e. row `ty + k / m` of
/// phase `k % m` (and the same across). So each channel is first split into `m x m` phase
/// planes, `phases[jy][jx][row][i]` = input `(row * m + jy, i * m + jx)` (relative to the
/// block and the padding; one scalar copy per input element), after which both passes of
/// the transform are vector operations over the whole block reading shifted runs of a plane.
/// Every image's rows get `ext` spare rows and every row `ext` spare columns, so the shifted
/// runs never cross into a neighbour's data; their results are dropped when the tiles are
/// packed into `v`.
#[inline(always)]
fn transform_input<T: KernelFloat>(
    x: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    v: &mut [T],
    s: &mut Scratch<T>,
) {
    let (m, alpha, [h, w], [th, tw]) = (tr.m, tr.alpha, c.input, c.tiles);
    let ext = (alpha - 1) / m;
    let sw = tw + ext;
    let t = rows.len() * tw;
    let segs = segments(rows, th, ext);
    let padded_rows = segs.last().map_or(0, |g| g[3] + g[2] + ext);
    // Room for the runs shifted by up to `ext` rows and `ext` columns.
    let span = padded_rows * sw;
    let plane = span + ext * sw + ext;
    zeroed(&mut s.z, alpha * m * plane);
    s.row.resize(span, T::zero());
    for ch in 0..c.ci {
        let ph = zeroed(&mut s.phases, m * m * plane);
        for &[img, ty0, n, p0] in &segs {
            let src_plane = &x[(img * c.ci + ch) * h * w..][..h * w];
            for yy in 0..n + ext {
                for jy in 0..m {
                    let y = (((ty0 + yy) * m + jy) as isize) - c.pad[0];
                    if y < 0 || y >= h as isize {
                        continue;
                    }
                    let src = &src_plane[y as usize * w..][..w];
                    for jx in 0..m {
                        // Column i of phase jx is input column i * m + jx - pad.
                        let dst = &mut ph[(jy * m + jx) * plane + (p0 + yy) * sw..][..sw];
                        // Skip the columns left of the input, then take every m-th.
                        let shift = jx as isize - c.pad[1];
                        let skip = ((-shift).max(0) as usize).div_ceil(m);
                        let first = (skip * m) as isize + shift;
                        if first < w as isize {
                            let col = src[first as usize..].iter().step_by(m);
                            dst[skip..].iter_mut().zip(col).for_each(|(d, &v)| *d = v);
                        }
                    }
                }
            }
        }
        // Vertical: z[a][jx] = sum_k B^T[a][k] phases[k % m][jx] shifted by k / m rows.
        for a in 0..alpha {
            for jx in 0..m {
                combine(
                    &mut s.z[(a * m + jx) * plane..][..span],
                    alpha,
                    |k| tr.bt[a * alpha + k],
                    |k| &ph[((k % m) * m + jx) * plane + (k / m) * sw..][..span],
                );
            }
        }
        // Horizontal: V[a][b] = sum_k B^T[b][k] z[a][k % m] shifted by k / m columns.
        for a in 0..alpha {
            for b in 0..alpha {
                let z = &s.z;
                combine(
                    &mut s.row[..span],
                    alpha,
                    |k| tr.bt[b * alpha + k],
                    |k| &z[(a * m + k % m) * plane + k / m..][..span],
                );
                let out = &mut v[((a * alpha + b) * c.ci + ch) * t..][..t];
                let mut packed = out.chunks_exact_mut(tw);
                for &[_, _, n, p0] in &segs {
                    for (yy, dst) in (0..n).zip(&mut packed) {
                        dst.copy_from_slice(&s.row[(p0 + yy) * sw..][..tw]);
                    }
                }
            }
        }
    }
}

/// `Gt (alpha^2, Co, T) = A g A^T` for every tile of the tile rows `rows` of the upstream
/// gradient `gy` `(N, Co, OH, OW)` (zero past the output's edge). Output tiles do not
/// overlap, so the `m x m` phase planes (`phases[jy][jx][t]` = element `(jy, jx)` of tile
/// `t`) hold each element once and both passes run over whole planes.
#[inline(always)]
fn transform_grad<T: KernelFloat>(
    gy: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    gt: &mut [T],
    s: &mut Scratch<T>,
) {
    let (m, alpha, [oh, ow], [th, tw]) = (tr.m, tr.alpha, c.output, c.tiles);
    let t = rows.len() * tw;
    // A[a][i] = A^T[i][a].
    let a_of = |a: usize, i: usize| tr.at[i * alpha + a];
    zeroed(&mut s.z, alpha * m * t);
    for o in 0..c.co {
        let ph = zeroed(&mut s.phases, m * m * t);
        for (bi, gr) in rows.clone().enumerate() {
            let (img, ty) = (gr / th, gr % th);
            let plane = &gy[(img * c.co + o) * oh * ow..][..oh * ow];
            for jy in 0..m.min(oh - ty * m) {
                let src = &plane[(ty * m + jy) * ow..][..ow];
                for jx in 0..m {
                    let dst = &mut ph[(jy * m + jx) * t + bi * tw..][..tw];
                    for (d, &v) in dst.iter_mut().zip(src.iter().skip(jx).step_by(m)) {
                        *d = v;
                    }
                }
            }
        }
        // Vertical: z[a][jx] = sum_jy A[a][jy] phases[jy][jx].
        for a in 0..alpha {
            for jx in 0..m {
                combine(
                    &mut s.z[(a * m + jx) * t..][..t],
                    m,
                    |jy| a_of(a, jy),
                    |jy| &ph[(jy * m + jx) * t..][..t],
                );
            }
        }
        // Horizontal: Gt[a][b] = sum_jx A[b][jx] z[a][jx].
        for a in 0..alpha {
            for b in 0..alpha {
                let z = &s.z;
                combine(
                    &mut gt[((a * alpha + b) * c.co + o) * t..][..t],
                    m,
                    |jx| a_of(b, jx),
                    |jx| &z[(a * m + jx) * t..][..t],
                );
            }
        }
    }
}

/// Output rows of the tile rows `rows` from `M (alpha^2, Co, T)`: `Y = A^T M A` (+ bias) per
/// tile, written into `out`, the `(nb, Co, OH, OW)` output of the chunk whose first tile row
/// is `first_row`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn transform_output<T: KernelFloat>(
    mm: &[T],
    c: &Corr,
    tr: &Transforms<T>,
    rows: Range<usize>,
    first_row: usize,
    bias: Option<&[T]>,
    out: &mut [MaybeUninit<T>],
    s: &mut Scratch<T>,
) {
    let (m, alpha, [oh, ow], [th, tw]) = (tr.m, tr.alpha, c.output, c.tiles);
    let t = rows.len() * tw;
    // P (m, alpha, T) in z, Y (m, m, T) in row.
    s.z.resize(m * alpha * t, T::zero());
    s.row.resize(m * m * t, T::zero());
    for o in 0..c.co {
        let (p, y) = (&mut s.z, &mut s.row);
        // P[i][b] = sum_a A^T[i][a] M[a][b].
        for i in 0..m {
            for b in 0..alpha {
                combine(
                    &mut p[(i * alpha + b) * t..][..t],
                    alpha,
                    |a| tr.at[i * alpha + a],
                    |a| &mm[((a * alpha + b) * c.co + o) * t..][..t],
                );
            }
        }
        // Y[i][j] = sum_b P[i][b] A^T[j][b].
        for i in 0..m {
            for j in 0..m {
                let p = &*p;
                combine(
                    &mut y[(i * m + j) * t..][..t],
                    alpha,
                    |b| tr.at[j * alpha + b],
                    |b| &p[(i * alpha + b) * t..][..t],
                );
            }
        }
        let b0 = bias.map_or(T::zero(), |b| b[o]);
        for (bi, gr) in rows.clone().enumerate() {
            let (img, ty) = ((gr - first_row) / th, gr % th);
            let plane = &mut out[(img * c.co + o) * oh * ow..][..oh * ow];
            for i in 0..m.min(oh - ty * m) {
                let orow = &mut plane[(ty * m + i) * ow..][..ow];
                for j in 0..m {
                    let src = &y[(i * m + j) * t + bi * tw..][..tw];
                    let cols = orow.iter_mut().skip(j).step_by(m);
                    cols.zip(src).for_each(|(d, &v)| {
                        d.write(v + b0);
                    });
                }
            }
        }
    }
}

/// `U (alpha^2, rows, cols) = G k G^T` of every kernel of `w` `(Co, Ci, r, r)`: with
/// `rotate`, the kernel of the input gradient (`rows = Ci`, `cols = Co`, each kernel turned
/// by 180 degrees), else `rows = Co`, `cols = Ci`. In parallel over rows, each row's
/// transforms running over vectors of `cols` kernels.
fn transform_weight<T: KernelFloat>(
    w: &[T],
    co: usize,
    ci: usize,
    tr: &Transforms<T>,
    rotate: bool,
) -> Vec<T> {
    let (r, g, alpha, tile) = (tr.r, &tr.g, tr.alpha, tr.tile);
    let rr = r * r;
    let (rows, cols) = if rotate { (ci, co) } else { (co, ci) };
    let len = tile * rows * cols;
    let mut u = allocator::take::<T>(len);
    let dst = SyncPtr(u.spare_capacity_mut().as_mut_ptr().cast::<T>());
    // One row's scratch per task, reused across its rows: fresh vectors per row were 130 KB
    // each for 512 columns, every one a new mapping with its page faults.
    let scratch = || {
        (
            vec![T::zero(); rr * cols],
            vec![T::zero(); alpha * r * cols],
            vec![T::zero(); cols],
        )
    };
    (0..rows)
        .into_par_iter()
        .for_each_init(scratch, |(taps, gk, run), row| {
            // The row's kernels tap-major, (r*r, cols); turning a kernel by 180 degrees
            // reverses its taps.
            for col in 0..cols {
                let (o, c) = if rotate { (col, row) } else { (row, col) };
                let k = &w[(o * ci + c) * rr..][..rr];
                for (tap, &v) in k.iter().enumerate() {
                    let at = if rotate { rr - 1 - tap } else { tap };
                    taps[at * cols + col] = v;
                }
            }
            // (G k) as (alpha, r, cols), then (G k) G^T straight into U's (alpha^2, rows,
            // cols) layout.
            for a in 0..alpha {
                for j in 0..r {
                    let dst = &mut gk[(a * r + j) * cols..][..cols];
                    combine(
                        dst,
                        r,
                        |i| g[a * r + i],
                        |i| &taps[(i * r + j) * cols..][..cols],
                    );
                }
            }
            for a in 0..alpha {
                for b in 0..alpha {
                    // Combined in `run` and copied: U's memory is uninitialised until
                    // written, so no `&mut [T]` of it may exist before.
                    combine(
                        run,
                        r,
                        |j| g[b * r + j],
                        |j| &gk[(a * r + j) * cols..][..cols],
                    );
                    // SAFETY: elements (a * alpha + b, row, 0..cols) of U: inside its `len`
                    // elements, and written by this row's task only.
                    unsafe {
                        let out = dst.add(((a * alpha + b) * rows + row) * cols);
                        std::ptr::copy_nonoverlapping(run.as_ptr(), out, cols);
                    }
                }
            }
        });
    // SAFETY: the tasks wrote every (xi, row) run of `cols` elements.
    unsafe { u.set_len(len) };
    u
}

/// The weight gradient `(Co, Ci, r, r)` from the summed `S^T (alpha^2, Ci, Co)`:
/// `dW[o][c] = G^T S[.][c][o] G`, in parallel over input channels, over vectors of `Co`.
fn untransform_weight_grad<T: KernelFloat>(
    st: &[T],
    co: usize,
    ci: usize,
    tr: &Transforms<T>,
) -> Vec<T> {
    let (r, g, alpha) = (tr.r, &tr.g, tr.alpha);
    let rr = r * r;
    let len = co * ci * rr;
    let mut dw = allocator::take::<T>(len);
    let out = SyncPtr(dw.spare_capacity_mut().as_mut_ptr().cast::<T>());
    let scratch = || (vec![T::zero(); r * alpha * co], vec![T::zero(); rr * co]);
    (0..ci)
        .into_par_iter()
        .for_each_init(scratch, |(gs, d), ch| {
            let srow = |xi: usize| &st[(xi * ci + ch) * co..][..co];
            // G^T S as (r, alpha, co), then (G^T S) G as (r, r, co).
            for u in 0..r {
                for b in 0..alpha {
                    let dst = &mut gs[(u * alpha + b) * co..][..co];
                    combine(dst, alpha, |a| g[a * r + u], |a| srow(a * alpha + b));
                }
            }
            for u in 0..r {
                for v in 0..r {
                    let dst = &mut d[(u * r + v) * co..][..co];
                    combine(
                        dst,
                        alpha,
                        |b| g[b * r + v],
                        |b| &gs[(u * alpha + b) * co..][..co],
                    );
                }
            }
            for o in 0..co {
                for tap in 0..rr {
                    // SAFETY: element (o, ch, tap) of dW, inside its `len` elements and
                    // written by this channel's task only.
                    unsafe { out.add((o * ci + ch) * rr + tap).write(d[tap * co + o]) };
                }
            }
        });
    // SAFETY: the tasks wrote every (o, ch, tap).
    unsafe { dw.set_len(len) };
    dw
}

/// The correlation `c` of `x` with the transformed kernels `u` `(alpha^2, Co, Ci)`, plus bias.
fn correlate<T: KernelFloat>(
    x: &[T],
    u: &[T],
    bias: Option<&[T]>,
    c: &Corr,
    tr: &Transforms<T>,
) -> Vec<T> {
    let per_image = c.co * c.output[0] * c.output[1];
    let len = c.n * per_image;
    let mut out = allocator::take::<T>(len);
    let chunks = c.chunks();
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(c.per_chunk() * per_image)
        .zip(chunks.par_iter())
        .for_each(|(dst, &(start, nb))| correlate_chunk(x, u, bias, c, tr, start, nb, dst));
    // SAFETY: every chunk wrote its whole slice (each output element lies in one tile).
    unsafe { out.set_len(len) };
    out
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn correlate_chunk<T: KernelFloat>(
    x: &[T],
    u: &[T],
    bias: Option<&[T]>,
    c: &Corr,
    tr: &Transforms<T>,
    start: usize,
    nb: usize,
    dst: &mut [MaybeUninit<T>],
) {
    let simd = simd_tiles::<T>();
    let (tmax, tile) = (padded_tiles(c.max_block_tiles(nb), simd), tr.tile);
    let mut v = block_buffer::<T>(tile * plane_stride(c.ci * tmax, simd), simd);
    let mut mm = block_buffer::<T>(tile * plane_stride(c.co * tmax, simd), simd);
    let mut s = Scratch::new();
    let spread = c.spread();
    for rows in c.blocks(start, nb) {
        let t = padded_tiles(rows.len() * c.tiles[1], simd);
        let (sv, sm) = (plane_stride(c.ci * t, simd), plane_stride(c.co * t, simd));
        input_block(x, c, tr, rows.clone(), &mut v, sv, &mut s, simd);
        let (v, mp) = (&v, SyncPtr(mm.as_mut_ptr()));
        each_point(tile, spread, |xi| {
            // SAFETY: U[xi] is (Co, Ci), V[xi] (Ci, t) and M[xi] (Co, t), each inside its
            // buffer; `mm` is a buffer of its own, and each point writes its own M[xi].
            unsafe {
                let ux = Mat::new(u.as_ptr().add(xi * c.co * c.ci), c.ci, 1);
                let vx = Mat::new(v.as_ptr().add(xi * sv), t, 1);
                gemm_on(1, c.co, t, c.ci, mp.add(xi * sm), t, false, ux, vx);
            }
        });
        output_block(&mm, c, tr, rows, start, sm, bias, dst, &mut s, simd);
    }
    allocator::recycle(T::into_storage(v));
    allocator::recycle(T::into_storage(mm));
}

/// `f(xi)` for every point `xi < tile` of the transformed tiles: in parallel when `spread`,
/// else on the calling thread.
fn each_point(tile: usize, spread: bool, f: impl Fn(usize) + Send + Sync) {
    if spread {
        (0..tile).into_par_iter().for_each(f);
    } else {
        (0..tile).for_each(f);
    }
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `x` `(N, Ci, H, W)`, weight `w`
/// `(Co, Ci, r, r)` and optional bias `(Co,)` (`applies(c)` must hold).
pub fn forward<T: KernelFloat>(x: &[T], w: &[T], bias: Option<&[T]>, c: &Conv) -> Vec<T> {
    let tr = Transforms::new(c.geom.kernel[0]);
    let u = transform_weight(w, c.out_channels, c.geom.channels, &tr, false);
    correlate(x, &u, bias, &Corr::forward(c, tr.m), &tr)
}

/// Gradient of the input, `(N, Ci, H, W)`, from the contiguous upstream gradient `gy`
/// `(N, Co, OH, OW)` and the weight.
pub fn backward_input<T: KernelFloat>(gy: &[T], w: &[T], c: &Conv) -> Vec<T> {
    let tr = Transforms::new(c.geom.kernel[0]);
    let u = transform_weight(w, c.out_channels, c.geom.channels, &tr, true);
    correlate(gy, &u, None, &Corr::input_grad(c, tr.m), &tr)
}

/// `S^T (alpha^2, Ci, Co)`, the transformed weight gradient of images `start..start + nb`.
#[inline(always)]
fn weight_chunk<T: KernelFloat>(
    x: &[T],
    gy: &[T],
    corr: &Corr,
    tr: &Transforms<T>,
    start: usize,
    nb: usize,
) -> Vec<T> {
    let (ci, co) = (corr.ci, corr.co);
    let simd = simd_tiles::<T>();
    let (tmax, tile) = (padded_tiles(corr.max_block_tiles(nb), simd), tr.tile);
    let mut v = block_buffer::<T>(tile * plane_stride(ci * tmax, simd), simd);
    let mut gt = block_buffer::<T>(tile * plane_stride(co * tmax, simd), simd);
    let mut st = allocator::take::<T>(tile * ci * co);
    let sp = SyncPtr(st.spare_capacity_mut().as_mut_ptr().cast::<T>());
    let mut s = Scratch::new();
    let spread = corr.spread();
    for (block, rows) in corr.blocks(start, nb).enumerate() {
        let t = padded_tiles(rows.len() * corr.tiles[1], simd);
        let (sv, sg) = (plane_stride(ci * t, simd), plane_stride(co * t, simd));
        input_block(x, corr, tr, rows.clone(), &mut v, sv, &mut s, simd);
        grad_block(gy, corr, tr, rows, &mut gt, sg, &mut s, simd);
        let (v, gt) = (&v, &gt);
        each_point(tile, spread, |xi| {
            // SAFETY: V[xi] is (Ci, t), Gt[xi]^T the transposed view of the (Co, t) block
            // and S^T[xi] (Ci, Co), each inside its buffer (`st` has room for tile * ci *
            // co); `st` is a buffer of its own, and each point writes its own S^T[xi]. The
            // first block overwrites, later ones add. Padding tiles (the AVX2 path's) are
            // zero in both.
            unsafe {
                let vx = Mat::new(v.as_ptr().add(xi * sv), t, 1);
                let gx = Mat::new(gt.as_ptr().add(xi * sg), 1, t);
                gemm_on(1, ci, co, t, sp.add(xi * ci * co), co, block > 0, vx, gx);
            }
        });
    }
    // SAFETY: the first block's gemms (every chunk has one) wrote every element.
    unsafe { st.set_len(tile * ci * co) };
    allocator::recycle(T::into_storage(v));
    allocator::recycle(T::into_storage(gt));
    st
}

/// Gradient of the weight, `(Co, Ci, r, r)`, from the contiguous input and upstream gradient.
pub fn backward_weight<T: KernelFloat>(x: &[T], gy: &[T], c: &Conv) -> Vec<T> {
    let (r, co, ci) = (c.geom.kernel[0], c.out_channels, c.geom.channels);
    let tr = Transforms::new(r);
    let corr = Corr::forward(c, tr.m);
    let part = |&(start, nb): &(usize, usize)| weight_chunk(x, gy, &corr, &tr, start, nb);
    let mut parts = corr
        .chunks()
        .par_iter()
        .map(part)
        .collect::<Vec<Vec<T>>>()
        .into_iter();
    // Added in chunk order (in parallel over elements), so the sum does not depend on the
    // thread count.
    let mut total = parts
        .next()
        .unwrap_or_else(|| vec![T::zero(); tr.tile * ci * co]);
    for p in parts {
        total
            .par_chunks_mut(1 << 14)
            .zip(p.par_chunks(1 << 14))
            .for_each(|(t, p)| t.iter_mut().zip(p).for_each(|(t, &v)| *t += v));
        allocator::recycle(T::into_storage(p));
    }
    let dw = untransform_weight_grad(&total, co, ci, &tr);
    allocator::recycle(T::into_storage(total));
    dw
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::{naive, on_threads, Reference};
    use super::super::im2col::tests::out_len;
    use super::*;
    use crate::backend::ConvGeometry;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn transforms_compute_a_correlation_exactly() {
        for r in [3, 5] {
            let tr = Transforms::<f64>::new(r);
            let (m, alpha) = (tr.m, tr.alpha);
            let mut rng = ChaCha8Rng::seed_from_u64(r as u64);
            let d: Vec<f64> = (0..alpha).map(|_| rng.random_range(-1.0..1.0)).collect();
            let k: Vec<f64> = (0..r).map(|_| rng.random_range(-1.0..1.0)).collect();
            // y = A^T [(G k) . (B^T d)]
            let gk: Vec<f64> = (0..alpha)
                .map(|a| (0..r).map(|i| tr.g[a * r + i] * k[i]).sum())
                .collect();
            let bd: Vec<f64> = (0..alpha)
                .map(|a| (0..alpha).map(|i| tr.bt[a * alpha + i] * d[i]).sum())
                .collect();
            for i in 0..m {
                let y: f64 = (0..alpha)
                    .map(|a| tr.at[i * alpha + a] * gk[a] * bd[a])
                    .sum();
                let want: f64 = (0..r).map(|u| d[i + u] * k[u]).sum();
                assert!(
                    (y - want).abs() < 1e-12,
                    "F({m}, {r}) output {i}: {y} vs {want}"
                );
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_constant_matrices_are_the_computed_ones() {
        use super::super::winograd_avx2::Matrices;
        fn check<W: Matrices>(r: usize) {
            let tr = Transforms::<f32>::new(r);
            assert_eq!(W::ALPHA, tr.alpha);
            let close = |got: f32, want: f32| (got - want).abs() <= 1e-6 * want.abs().max(1.0);
            for i in 0..8 {
                for j in 0..8 {
                    let inside = i < tr.alpha && j < tr.alpha;
                    let want = if inside { tr.bt[i * tr.alpha + j] } else { 0.0 };
                    assert!(close(W::BT[i][j], want), "F(4, {r}) B^T[{i}][{j}]");
                    let want = if i < 4 && j < tr.alpha {
                        tr.at[i * tr.alpha + j]
                    } else {
                        0.0
                    };
                    if i < 4 {
                        assert!(close(W::AT[i][j], want), "F(4, {r}) A^T[{i}][{j}]");
                        assert_eq!(W::A[j][i], W::AT[i][j]);
                    }
                }
            }
        }
        check::<F43>(3);
        check::<F45>(5);
    }

    /// The largest difference between `got` and `want`, relative to the largest `|want|`.
    fn rel_err(got: &[f64], want: &[f64]) -> f64 {
        assert_eq!(got.len(), want.len());
        let scale = want.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
        got.iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
            / scale
    }

    /// Forward and both gradients of `c` on random operands, in f64 and f32, against the
    /// definition.
    fn check_against_definition(c: &Conv, rng: &mut ChaCha8Rng) {
        let (batch, input, output, r) =
            (c.geom.batch, c.geom.input, c.geom.output, c.geom.kernel[0]);
        let rand_vec = |rng: &mut ChaCha8Rng, n: usize| -> Vec<f64> {
            (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
        };
        let (ci, co) = (c.geom.channels, c.out_channels);
        let [oh, ow] = output;
        let x = rand_vec(rng, batch * ci * input[0] * input[1]);
        let w = rand_vec(rng, co * ci * r * r);
        let gy = rand_vec(rng, batch * co * oh * ow);
        let bias = rand_vec(rng, co);
        let (y_ref, dx_ref, dw_ref) = naive(&x, &w, &gy, c);
        let y_bias: Vec<f64> = y_ref
            .iter()
            .enumerate()
            .map(|(i, v)| v + bias[(i / (oh * ow)) % co])
            .collect();
        let check = |got: &[f64], want: &[f64], tol: f64, what: &str| {
            let e = rel_err(got, want);
            assert!(e < tol, "{what} {c:?}: relative error {e:e}");
        };
        check(&forward(&x, &w, Some(&bias), c), &y_bias, 1e-12, "forward");
        check(&backward_input(&gy, &w, c), &dx_ref, 1e-12, "grad input");
        check(&backward_weight(&x, &gy, c), &dw_ref, 1e-12, "grad weight");
        // f32: the transforms round; within a few ulps of the largest value.
        let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let d = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
        let (x32, w32, gy32) = (f(&x), f(&w), f(&gy));
        check(
            &d(forward(&x32, &w32, Some(&f(&bias)), c)),
            &y_bias,
            1e-5,
            "f32 forward",
        );
        check(
            &d(backward_input(&gy32, &w32, c)),
            &dx_ref,
            1e-5,
            "f32 grad input",
        );
        check(
            &d(backward_weight(&x32, &gy32, c)),
            &dw_ref,
            1e-5,
            "f32 grad weight",
        );
    }

    #[test]
    fn large_transformed_kernels_take_large_blocks() {
        // 128 -> 128 channels: U is 36 * 128 * 128 f32 = 2.4 MB, so blocks take at least 64
        // tiles where the chunk has them, though 64 tiles are 4.7 MB of transformed tiles.
        let conv = |batch, side| Conv {
            geom: ConvGeometry {
                batch,
                channels: 128,
                input: [side, side],
                kernel: [3, 3],
                stride: [1, 1],
                dilation: [1, 1],
                padding: [1, 1],
                output: [side, side],
            },
            out_channels: 128,
            groups: 1,
        };
        let corr = Corr::forward(&conv(32, 16), 4);
        assert_eq!(corr.max_block_tiles(8), 64);
        // 160 -> 16: a small U, and 1.5 MB of L2 hold 62 tiles, so blocks have 60.
        let mut narrow = conv(32, 16);
        (narrow.geom.channels, narrow.out_channels) = (160, 16);
        assert_eq!(Corr::forward(&narrow, 4).max_block_tiles(8), 60);
        check_against_definition(&conv(2, 8), &mut ChaCha8Rng::seed_from_u64(3));
    }

    #[test]
    fn winograd_convolution_matches_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut cases = 0;
        while cases < 30 {
            let r = [3, 5][cases % 2];
            let padding = [rng.random_range(0..r), rng.random_range(0..r)];
            let input = [rng.random_range(1..21), rng.random_range(1..21)];
            if (0..2).any(|a| input[a] + 2 * padding[a] < r) {
                continue;
            }
            let output = [0, 1].map(|a| out_len(input[a], r, 1, padding[a], 1));
            // One image, several chunks, and a short last chunk; 20-wide inputs also run
            // several blocks per chunk.
            let batch = [1, 3, 9][cases % 3];
            let c = Conv {
                geom: ConvGeometry {
                    batch,
                    channels: rng.random_range(1..7),
                    input,
                    kernel: [r, r],
                    stride: [1, 1],
                    dilation: [1, 1],
                    padding,
                    output,
                },
                out_channels: rng.random_range(1..7),
                groups: 1,
            };
            check_against_definition(&c, &mut rng);
            cases += 1;
        }
    }

    #[test]
    fn one_image_spread_over_threads_matches_one_thread() {
        // A batch of one image is one chunk, whose gemms (one per tile point) are spread over
        // the pool: the results are bit for bit those of one thread.
        for r in [3, 5] {
            let c = Conv {
                geom: ConvGeometry {
                    batch: 1,
                    channels: 12,
                    input: [30, 27],
                    kernel: [r, r],
                    stride: [1, 1],
                    dilation: [1, 1],
                    padding: [r / 2, r / 2],
                    output: [30, 27],
                },
                out_channels: 10,
                groups: 1,
            };
            let op = Reference::new(&c, &mut ChaCha8Rng::seed_from_u64(12));
            let run = |threads: usize| {
                on_threads(threads, || {
                    assert_eq!(Corr::forward(&c, 4).spread(), threads > 1);
                    (
                        forward(&op.x, &op.w, None, &c),
                        backward_input(&op.gy, &op.w, &c),
                        backward_weight(&op.x, &op.gy, &c),
                    )
                })
            };
            assert!(
                run(1) == run(2),
                "{r}x{r}: results depend on the number of threads"
            );
        }
    }
}
