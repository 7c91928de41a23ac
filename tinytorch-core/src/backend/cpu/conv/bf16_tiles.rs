//! bf16 convolutions of stride 1 (forward and both gradients) on AMX tiles, as implicit
//! GEMMs: no column matrix is built. Each image's input is copied once into padded planes
//! whose rows run on without a break (`Plane`: output position `(r, s)` is flat position
//! `r * wp + s`, and kernel tap `(i, j)` reads flat position `r * wp + s + i * wp + j`), so
//! the operand of every tap is the same planes shifted by a constant, and a tile load reads
//! it in place. Flat positions with `s >= OW` are computed and thrown away (`kw - 1` of every
//! `wp`).
//!
//! ```text
//! forward:      Y (Co, P)   += W_tap (Co, Ci) @ X (Ci, P + off_tap)     for every tap
//! grad input:   the forward of the transposed convolution (flipped weight, padded gy)
//! grad weight:  dW_tap^T (Ci, Co) += X (Ci, P + off_tap) @ G^T (P, Co)   summed over images
//! ```
//!
//! The products multiply bf16 operands and sum in f32; each result is rounded to bf16 once,
//! after the bias (forward) and after the sums over all images (weight gradient): the
//! arithmetic of PyTorch's bf16 convolutions on such CPUs (oneDNN). The earlier design
//! (im2col + `bf16_gemm`, commit 485065d) lost to widening to f32 because the column matrix
//! and its packing cost more than the tile products saved; here the only copies are one
//! pass over the input (pairs of channels interleaved, as `tdpbf16ps` takes B) and one over
//! the output.
//!
//! Images are the parallel work: each runs on one thread from start to end; the weight
//! gradient sums fixed chunks of images and adds the chunks' sums in order, so no result
//! depends on the thread count.

use super::gemm::Conv;
use crate::backend::cpu::allocator;
use crate::backend::cpu::bf16_gemm::{self, gather_pairs, tiles, Engine};
use crate::backend::ConvGeometry;
use crate::base::dtype::bf16_from_f32;
use half::bf16;
use rayon::prelude::*;
use std::arch::asm;
use std::arch::x86_64::{
    _mm256_maskz_loadu_epi16, _mm512_cvtepu16_epi32, _mm512_mask_storeu_epi32, _mm512_or_si512,
    _mm512_setzero_si512, _mm512_slli_epi32,
};
use std::cell::RefCell;

/// Images per partial sum of the weight gradient.
const WEIGHT_CHUNK: usize = 4;

/// True where this convolution runs here in bf16: the CPU's bf16 engine is AMX, stride and
/// dilation 1, one group, and the input gradient is itself such a convolution (symmetric
/// padding below the kernel size).
pub fn applies(c: &Conv) -> bool {
    let g = &c.geom;
    bf16_gemm::engine() == Some(Engine::Amx)
        && g.stride == [1, 1]
        && g.dilation == [1, 1]
        && c.groups == 1
        && transposed(c).is_some()
}

/// The flat, padded planes of one image.
#[derive(Clone, Copy, Debug)]
struct Plane {
    /// Input rows and columns.
    h: usize,
    w: usize,
    /// Padding above and to the left.
    top: usize,
    left: usize,
    /// Output rows and columns.
    oh: usize,
    ow: usize,
    /// Kernel columns.
    kw: usize,
    /// Taps (`kh * kw`).
    taps: usize,
    /// Padded row width, `OW + kw - 1`.
    wp: usize,
    /// Flat output positions computed: `OH * wp` rounded up to 32 (two tiles of 16).
    np: usize,
    /// Flat positions stored per plane: every tap's reach past `np` (even, for pairs).
    len: usize,
}

impl Plane {
    fn of(g: &ConvGeometry) -> Plane {
        let [kh, kw] = g.kernel;
        let [oh, ow] = g.output;
        let wp = ow + kw - 1;
        let np = (oh * wp).next_multiple_of(32);
        Plane {
            h: g.input[0],
            w: g.input[1],
            top: g.padding[0],
            left: g.padding[1],
            oh,
            ow,
            kw,
            taps: kh * kw,
            wp,
            np,
            len: (np + (kh - 1) * wp + kw - 1).next_multiple_of(2),
        }
    }

    /// How far tap `t` (row-major over the kernel) reads from the output position.
    fn offset(&self, t: usize) -> usize {
        t / self.kw * self.wp + t % self.kw
    }

    /// The rows of one input plane `x` (`h x w`), each with the flat position its first
    /// element goes to: row `r` starts at `(r + top) * wp + left`.
    fn rows<'a>(&self, x: &'a [bf16]) -> impl Iterator<Item = (usize, &'a [bf16])> + 'a {
        let (top, wp, left, w) = (self.top, self.wp, self.left, self.w);
        x.chunks_exact(w.max(1))
            .take(self.h)
            .enumerate()
            .map(move |(r, row)| ((r + top) * wp + left, row))
    }
}

/// Channels per tile product: 16 for inputs of 16 or fewer (no zeros multiplied), else 32.
fn depth(channels: usize) -> usize {
    if channels <= 16 {
        16
    } else {
        32
    }
}

thread_local! {
    /// This thread's buffers, kept from one image and one call to the next: allocated anew
    /// per rayon task they were fresh pages every time (the kernel's page clearing was 12%
    /// of the resnet20 bf16 step).
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// Per-thread buffers.
#[derive(Default)]
struct Scratch {
    /// The input's padded planes.
    x: Vec<bf16>,
    /// The output's (or the gradient's) f32 sums.
    acc: Vec<f32>,
    /// The upstream gradient in flat planes, then packed (weight gradient).
    flat: Vec<bf16>,
    g: Vec<bf16>,
}

/// `v` resized to `len` zeros.
fn zeroed<T: Copy>(v: &mut Vec<T>, len: usize, zero: T) -> &mut [T] {
    v.clear();
    v.resize(len, zero);
    v
}

/// `v` resized to `len` elements of any value (every one is written before it is read).
fn sized<T: Copy>(v: &mut Vec<T>, len: usize, zero: T) -> &mut [T] {
    v.resize(len, zero);
    &mut v[..len]
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `x` `(N, Ci, H, W)`, weight `w`
/// `(Co, Ci, kh, kw)` and optional bias `(Co,)`.
///
/// # Panics
/// If [`applies`] does not hold (the caller checks it).
pub fn forward(x: &[bf16], w: &[bf16], bias: Option<&[bf16]>, c: &Conv) -> Vec<bf16> {
    assert!(applies(c), "bf16 tile convolution outside its cases");
    let g = &c.geom;
    let p = Plane::of(g);
    let (ci, co) = (g.channels, c.out_channels);
    let kc = depth(ci);
    let (cp, cop) = (ci.next_multiple_of(kc), co.next_multiple_of(16));
    let wa = pack_weight(w, co, ci, p.taps, kc);
    let (image_in, image_out) = (ci * p.h * p.w, co * p.oh * p.ow);
    // Every element is written below.
    let mut y = allocator::scratch::<bf16>(g.batch * image_out);
    if y.is_empty() {
        return y;
    }
    y.par_chunks_mut(image_out).enumerate().for_each(|(n, yn)| {
        SCRATCH.with_borrow_mut(|s| {
            let xn = &x[n * image_in..(n + 1) * image_in];
            let planes = zeroed(&mut s.x, cp * p.len, bf16::ZERO);
            pack_pairs(xn, ci, &p, planes);
            let acc = sized(&mut s.acc, cop * p.np, 0.0);
            // SAFETY: AMX is there (`applies`); the buffers have the sizes `forward_image`
            // reads and writes (see there).
            unsafe {
                tiles::configure_depth(kc);
                if cop % 32 == 0 {
                    forward_image::<2>(&wa, planes, acc, cp, cop, kc, &p);
                } else {
                    forward_image::<1>(&wa, planes, acc, cp, cop, kc, &p);
                }
                tiles::release();
            }
            for (o, plane) in yn.chunks_exact_mut(p.oh * p.ow).enumerate() {
                let b = bias.map_or(0.0, |b| b[o].to_f32());
                let sums = &acc[o * p.np..];
                for (r, row) in plane.chunks_exact_mut(p.ow).enumerate() {
                    // SAFETY: AVX-512 comes with AMX (`applies`).
                    unsafe { round_row(&sums[r * p.wp..r * p.wp + p.ow], b, row) };
                }
            }
        })
    });
    y
}

/// The weight `(Co, Ci, taps)` as A tiles: for each block of 16 output channels, each tap
/// and each `kc` channels, one tile of 16 rows x `kc` (zeros past `Co` and `Ci`).
fn pack_weight(w: &[bf16], co: usize, ci: usize, taps: usize, kc: usize) -> Vec<bf16> {
    let (cop, cp) = (co.next_multiple_of(16), ci.next_multiple_of(kc));
    let nq = cp / kc;
    let mut out = vec![bf16::ZERO; cop * taps * cp];
    for ob in 0..cop / 16 {
        for t in 0..taps {
            for q in 0..nq {
                let tile = &mut out[((ob * taps + t) * nq + q) * 16 * kc..][..16 * kc];
                for r in 0..16.min(co.saturating_sub(ob * 16)) {
                    let o = ob * 16 + r;
                    for k in 0..kc.min(ci.saturating_sub(q * kc)) {
                        tile[r * kc + k] = w[(o * ci + q * kc + k) * taps + t];
                    }
                }
            }
        }
    }
    out
}

/// One image's input `(Ci, H, W)` as B operands: plane pair `q` (channels `2q`, `2q + 1`)
/// holds `planes[(q * len + f) * 2 + e] = x[2q + e]` at flat position `f`; zeros elsewhere
/// (`planes` arrives zeroed).
fn pack_pairs(x: &[bf16], ci: usize, p: &Plane, planes: &mut [bf16]) {
    let plane = p.h * p.w;
    for q in 0..ci.div_ceil(2) {
        let dst = &mut planes[q * p.len * 2..][..p.len * 2];
        let lower = (2 * q + 1 < ci).then(|| &x[(2 * q + 1) * plane..][..plane]);
        let upper = p.rows(&x[2 * q * plane..][..plane]);
        for (r, (f, row)) in upper.enumerate() {
            let lower = lower.map(|l| &l[r * p.w..][..p.w]);
            // SAFETY: AVX-512 comes with AMX (`applies`).
            unsafe { interleave_row(row, lower, &mut dst[f * 2..]) };
        }
    }
}

/// `dst[2j] = upper[j]`, `dst[2j + 1] = lower[j]` (0 without `lower`) for `j <
/// upper.len()`, 16 pairs an instruction.
///
/// # Safety
/// AVX-512 (F, BW, VL).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn interleave_row(upper: &[bf16], lower: Option<&[bf16]>, dst: &mut [bf16]) {
    let n = upper.len();
    assert!(dst.len() >= 2 * n && lower.is_none_or(|l| l.len() == n));
    for j in (0..n).step_by(16) {
        let mask = (u32::MAX >> (32 - (n - j).min(16))) as u16;
        let u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, upper.as_ptr().add(j).cast()));
        let l = match lower {
            Some(l) => {
                _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, l.as_ptr().add(j).cast()))
            }
            None => _mm512_setzero_si512(),
        };
        let pairs = _mm512_or_si512(u, _mm512_slli_epi32::<16>(l));
        _mm512_mask_storeu_epi32(dst.as_mut_ptr().add(2 * j).cast(), mask, pairs);
    }
}

/// `dst[j] = bf16(src[j] + add)`, rounded to nearest even, in AVX-512 vectors.
///
/// # Safety
/// AVX-512 (F, BW).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn round_row(src: &[f32], add: f32, dst: &mut [bf16]) {
    for (d, &v) in dst.iter_mut().zip(src) {
        *d = bf16_from_f32(v + add);
    }
}

/// `acc (Cop, np) = Σ_tap W_tap @ X_tap` for one image, `M` blocks of 16 output channels at
/// a time (1 or 2; 2 needs `cop % 32 == 0`) by 32 flat positions.
///
/// # Safety
/// Tiles configured for depth `kc`; `wa` from [`pack_weight`], `planes` `cp * p.len`
/// elements from [`pack_pairs`], `acc` `cop * p.np`.
#[allow(clippy::too_many_arguments)]
unsafe fn forward_image<const M: usize>(
    wa: &[bf16],
    planes: &[bf16],
    acc: &mut [f32],
    cp: usize,
    cop: usize,
    kc: usize,
    p: &Plane,
) {
    let nq = cp / kc;
    let tile_a = 16 * kc;
    let per_block = p.taps * nq * tile_a;
    for ob in (0..cop / 16).step_by(M) {
        for n0 in (0..p.np).step_by(32) {
            zero::<M, 2>();
            for t in 0..p.taps {
                let off = p.offset(t);
                for q in 0..nq {
                    step::<M, 2>(
                        Operand {
                            ptr: wa.as_ptr().add(ob * per_block + (t * nq + q) * tile_a),
                            next: per_block,
                            stride: kc * 2,
                        },
                        Operand {
                            ptr: planes.as_ptr().add((q * kc / 2 * p.len + n0 + off) * 2),
                            next: 32,
                            stride: p.len * 4,
                        },
                    );
                }
            }
            let c = Sums {
                ptr: acc.as_mut_ptr().add(ob * 16 * p.np + n0),
                row: p.np,
            };
            store::<M, 2>(c);
        }
    }
}

/// The input's gradient `(N, Ci, H, W)`: the forward of the transposed convolution.
pub fn backward_input(gy: &[bf16], w: &[bf16], c: &Conv) -> Vec<bf16> {
    let t = transposed(c).expect("backward_input outside `applies`");
    forward(gy, &flipped_weight(w, c), None, &t)
}

/// For a stride-1, undilated convolution, the convolution that computes its input
/// gradient: the upstream gradient `(N, Co, OH, OW)` padded by `k - 1 - p` on each side,
/// correlated with the weight flipped in both spatial dims and with its channel dims
/// swapped ([`flipped_weight`]), is `(N, Ci, H, W)`. `None` where that does not hold
/// (strides, dilation, padding past `k - 1`, uneven padding).
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
    let geom = ConvGeometry {
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

/// `W'[ci, o, i, j] = W[o, ci, kh-1-i, kw-1-j]`: the weight `(Co, Ci, kh, kw)` of `c` as the
/// `(Ci, Co, kh, kw)` weight of [`transposed`]'s convolution (one group).
fn flipped_weight(w: &[bf16], c: &Conv) -> Vec<bf16> {
    let taps = c.geom.kernel[0] * c.geom.kernel[1];
    let (co, ci) = (c.out_channels, c.geom.channels);
    let mut out = Vec::with_capacity(w.len());
    for i in 0..ci {
        for o in 0..co {
            let src = (o * ci + i) * taps;
            out.extend(w[src..src + taps].iter().rev());
        }
    }
    out
}

/// The weight's gradient `(Co, Ci, kh, kw)` from the input and the output's gradient `gy`.
pub fn backward_weight(x: &[bf16], gy: &[bf16], c: &Conv) -> Vec<bf16> {
    assert!(applies(c), "bf16 tile convolution outside its cases");
    let g = &c.geom;
    let p = Plane::of(g);
    let (ci, co) = (g.channels, c.out_channels);
    let (cp, cop) = (ci.next_multiple_of(16), co.next_multiple_of(16));
    let (image_in, image_out) = (ci * p.h * p.w, co * p.oh * p.ow);
    let sums_len = p.taps * cp * cop;
    let chunks: Vec<usize> = (0..g.batch).step_by(WEIGHT_CHUNK).collect();
    let partials: Vec<Vec<f32>> = chunks
        .par_iter()
        .map(|&start| {
            SCRATCH.with_borrow_mut(|s| {
                let mut sums = vec![0f32; sums_len];
                for n in start..(start + WEIGHT_CHUNK).min(g.batch) {
                    let planes = zeroed(&mut s.x, cp * p.len, bf16::ZERO);
                    for (c, xc) in x[n * image_in..(n + 1) * image_in]
                        .chunks_exact((p.h * p.w).max(1))
                        .enumerate()
                    {
                        let dst = &mut planes[c * p.len..][..p.len];
                        for (f, row) in p.rows(xc) {
                            dst[f..f + row.len()].copy_from_slice(row);
                        }
                    }
                    let flat = zeroed(&mut s.flat, cop * p.np, bf16::ZERO);
                    let gq = sized(&mut s.g, p.np * cop, bf16::ZERO);
                    pack_grad(&gy[n * image_out..(n + 1) * image_out], co, &p, flat, gq);
                    // SAFETY: AMX is there (`applies`); the buffers have the sizes
                    // `weight_image` reads and writes.
                    unsafe {
                        tiles::configure();
                        match (cp % 32 == 0, cop % 32 == 0) {
                            (true, true) => {
                                weight_image::<2, 2>(planes, gq, &mut sums, cp, cop, &p)
                            }
                            (true, false) => {
                                weight_image::<2, 1>(planes, gq, &mut sums, cp, cop, &p)
                            }
                            (false, true) => {
                                weight_image::<1, 2>(planes, gq, &mut sums, cp, cop, &p)
                            }
                            (false, false) => {
                                weight_image::<1, 1>(planes, gq, &mut sums, cp, cop, &p)
                            }
                        }
                        tiles::release();
                    }
                }
                sums
            })
        })
        .collect();
    let mut total = vec![0f32; sums_len];
    for part in &partials {
        total.iter_mut().zip(part).for_each(|(t, v)| *t += v);
    }
    // total[t][i][o] -> dw[o][i][t].
    let mut dw = Vec::with_capacity(co * ci * p.taps);
    for o in 0..co {
        for i in 0..ci {
            dw.extend((0..p.taps).map(|t| bf16_from_f32(total[(t * cp + i) * cop + o])));
        }
    }
    dw
}

/// One image's upstream gradient `(Co, OH, OW)` as B operands: `gq[(f / 2) * cop * 2 +
/// o * 2 + f % 2] = gy[o]` at flat output position `f`; zeros at the thrown-away positions
/// and past `Co`. Through `flat` (`(cop, np)`, arriving zeroed): the planes at their flat positions,
/// then each pair of positions of 16 channels gathered into one B row.
fn pack_grad(gy: &[bf16], co: usize, p: &Plane, flat: &mut [bf16], gq: &mut [bf16]) {
    for (o, plane) in gy.chunks_exact((p.oh * p.ow).max(1)).take(co).enumerate() {
        for (r, row) in plane.chunks_exact(p.ow).enumerate() {
            flat[o * p.np + r * p.wp..][..p.ow].copy_from_slice(row);
        }
    }
    let cop = flat.len() / p.np;
    for ob in 0..cop / 16 {
        for j in 0..p.np / 2 {
            // SAFETY: rows `ob * 16..` of `flat` hold positions `2j, 2j + 1` (`np` even);
            // `gq` has `np / 2` rows of `2 cop`; AVX-512 comes with AMX.
            unsafe {
                gather_pairs(
                    flat.as_ptr().add(ob * 16 * p.np + 2 * j),
                    p.np,
                    gq.as_mut_ptr().add(j * 2 * cop + ob * 32),
                )
            };
        }
    }
}

/// `sums[t] (Cp, Cop) += X_t (Cp, np) @ G^T (np, Cop)` for every tap `t` of one image, in
/// blocks of `M` x `N` tiles (16 input x 16 output channels each).
///
/// # Safety
/// Tiles configured (depth 32); `planes` `cp * p.len` elements, `gq` `p.np * cop`, `sums`
/// `p.taps * cp * cop`.
unsafe fn weight_image<const M: usize, const N: usize>(
    planes: &[bf16],
    gq: &[bf16],
    sums: &mut [f32],
    cp: usize,
    cop: usize,
    p: &Plane,
) {
    for t in 0..p.taps {
        let off = p.offset(t);
        for ib in (0..cp / 16).step_by(M) {
            for ob in (0..cop / 16).step_by(N) {
                let c = Sums {
                    ptr: sums.as_mut_ptr().add((t * cp + ib * 16) * cop + ob * 16),
                    row: cop,
                };
                load::<M, N>(c);
                for k0 in (0..p.np).step_by(32) {
                    step::<M, N>(
                        Operand {
                            ptr: planes.as_ptr().add(ib * 16 * p.len + k0 + off),
                            next: 16 * p.len,
                            stride: p.len * 2,
                        },
                        Operand {
                            ptr: gq.as_ptr().add(k0 / 2 * cop * 2 + ob * 32),
                            next: 32,
                            stride: cop * 4,
                        },
                    );
                }
                store::<M, N>(c);
            }
        }
    }
}

/// A tile operand: its first tile, the elements to the next tile of the block, and the bytes
/// from one tile row to the next.
#[derive(Clone, Copy)]
struct Operand {
    ptr: *const bf16,
    next: usize,
    stride: usize,
}

/// A block of f32 sums: its first element and the elements from one row to the next.
#[derive(Clone, Copy)]
struct Sums {
    ptr: *mut f32,
    row: usize,
}

// The block's sums live in tmm0 (tile row 0, column 0), tmm1 (0, 1), tmm2 (1, 0) and tmm3
// (1, 1); its A tiles in tmm4-5, its B tiles in tmm6-7. Tiles keep their values from one
// `asm!` to the next (the compiler never touches them), so each instruction of a block
// shape is written once, under the shape's constants.

/// Sets the block's sums to zero.
#[inline(always)]
unsafe fn zero<const M: usize, const N: usize>() {
    asm!("tilezero tmm0", options(nostack, nomem));
    if N == 2 {
        asm!("tilezero tmm1", options(nostack, nomem));
    }
    if M == 2 {
        asm!("tilezero tmm2", options(nostack, nomem));
        if N == 2 {
            asm!("tilezero tmm3", options(nostack, nomem));
        }
    }
}

/// Loads the block's sums from `c`.
#[inline(always)]
unsafe fn load<const M: usize, const N: usize>(c: Sums) {
    let (s, lower) = (c.row * 4, c.ptr.add(16 * c.row));
    asm!("tileloadd tmm0, [{c} + {s}*1]", c = in(reg) c.ptr, s = in(reg) s, options(nostack, readonly));
    if N == 2 {
        asm!("tileloadd tmm1, [{c} + {s}*1 + 64]", c = in(reg) c.ptr, s = in(reg) s, options(nostack, readonly));
    }
    if M == 2 {
        asm!("tileloadd tmm2, [{c} + {s}*1]", c = in(reg) lower, s = in(reg) s, options(nostack, readonly));
        if N == 2 {
            asm!("tileloadd tmm3, [{c} + {s}*1 + 64]", c = in(reg) lower, s = in(reg) s, options(nostack, readonly));
        }
    }
}

/// Stores the block's sums to `c`.
#[inline(always)]
unsafe fn store<const M: usize, const N: usize>(c: Sums) {
    let (s, lower) = (c.row * 4, c.ptr.add(16 * c.row));
    asm!("tilestored [{c} + {s}*1], tmm0", c = in(reg) c.ptr, s = in(reg) s, options(nostack));
    if N == 2 {
        asm!("tilestored [{c} + {s}*1 + 64], tmm1", c = in(reg) c.ptr, s = in(reg) s, options(nostack));
    }
    if M == 2 {
        asm!("tilestored [{c} + {s}*1], tmm2", c = in(reg) lower, s = in(reg) s, options(nostack));
        if N == 2 {
            asm!("tilestored [{c} + {s}*1 + 64], tmm3", c = in(reg) lower, s = in(reg) s, options(nostack));
        }
    }
}

/// The block's sums `+= A @ B`, one depth step: `M` tiles of `a` by `N` tiles of `b`.
#[inline(always)]
unsafe fn step<const M: usize, const N: usize>(a: Operand, b: Operand) {
    asm!(
        "tileloadd tmm4, [{a} + {sa}*1]",
        "tileloadd tmm6, [{b} + {sb}*1]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        a = in(reg) a.ptr,
        sa = in(reg) a.stride,
        b = in(reg) b.ptr,
        sb = in(reg) b.stride,
        options(nostack, readonly),
    );
    if N == 2 {
        asm!(
            "tileloadd tmm7, [{b} + {sb}*1]",
            "tdpbf16ps tmm1, tmm4, tmm7",
            b = in(reg) b.ptr.add(b.next),
            sb = in(reg) b.stride,
            options(nostack, readonly),
        );
    }
    if M == 2 {
        asm!(
            "tileloadd tmm5, [{a} + {sa}*1]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            a = in(reg) a.ptr.add(a.next),
            sa = in(reg) a.stride,
            options(nostack, readonly),
        );
        if N == 2 {
            asm!("tdpbf16ps tmm3, tmm5, tmm7", options(nostack, nomem));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::naive;
    use super::super::im2col::tests::out_len;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Forward and both gradients against the f64 definition of the same bf16 values
    /// (`gemm.rs`'s `naive`), over kernels of 1 to 5, paddings, channel counts that fill no
    /// whole tile (3, 5, 24, 40) and whole ones (16, 32, 64), odd and even widths, and more
    /// images than one chunk of the weight gradient; each result must be the definition
    /// rounded once to bf16, give or take the f32 sums' error. Skipped on CPUs without AMX.
    #[test]
    fn bf16_tile_convolutions_match_the_definition() {
        if bf16_gemm::engine() != Some(Engine::Amx) {
            eprintln!("skipped: no AMX here");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // (batch, ci, co, h, w, kernel, padding)
        let cases = [
            (2, 3, 5, 9, 9, 3, 1),
            (3, 16, 16, 8, 8, 3, 1),
            (9, 16, 32, 7, 10, 3, 1),
            (2, 32, 16, 6, 5, 3, 0),
            (1, 40, 33, 5, 5, 1, 0),
            (5, 24, 64, 12, 12, 3, 1),
            (2, 64, 64, 8, 8, 3, 1),
            (2, 5, 24, 9, 7, 5, 2),
            (0, 16, 16, 4, 4, 3, 1),
        ];
        for (n, ci, co, h, w, kk, pad) in cases {
            let [oh, ow] = [h, w].map(|s| out_len(s, kk, 1, pad, 1));
            let geom = ConvGeometry {
                batch: n,
                channels: ci,
                input: [h, w],
                kernel: [kk, kk],
                stride: [1, 1],
                dilation: [1, 1],
                padding: [pad, pad],
                output: [oh, ow],
            };
            let c = Conv {
                geom,
                out_channels: co,
                groups: 1,
            };
            assert!(applies(&c), "{:?}", (n, ci, co, h, w, kk, pad));
            let mut random = |len: usize| -> Vec<bf16> {
                (0..len)
                    .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
                    .collect()
            };
            let x = random(n * ci * h * w);
            let wt = random(co * ci * kk * kk);
            let bias = random(co);
            let gy = random(n * co * oh * ow);
            let wide = |v: &[bf16]| v.iter().map(|e| e.to_f64()).collect::<Vec<_>>();
            let (y64, dx64, dw64) = naive(&wide(&x), &wide(&wt), &wide(&gy), &c);
            let l = oh * ow;
            let y64: Vec<f64> = y64
                .iter()
                .enumerate()
                .map(|(i, v)| v + bias[i / l % co].to_f64())
                .collect();
            let y = forward(&x, &wt, Some(&bias), &c);
            let dx = backward_input(&gy, &wt, &c);
            let dw = backward_weight(&x, &gy, &c);
            for (what, got, want) in [("y", &y, &y64), ("dx", &dx, &dx64), ("dw", &dw, &dw64)] {
                assert_eq!(got.len(), want.len(), "{what} length");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    // One bf16 rounding (2^-9 relative) plus f32 sums of at most a few
                    // thousand terms of magnitude <= 1.
                    let tol = w.abs() / 256.0 + 1e-3;
                    assert!(
                        (g.to_f64() - w).abs() <= tol,
                        "{what}[{i}] of {:?}: {g} vs {w}",
                        (n, ci, co, h, w, kk, pad)
                    );
                }
            }
        }
    }
}
