//! The Winograd tile transforms of `winograd.rs` for f32 with AVX2 and FMA, eight tiles at a
//! time: each vector holds one element of eight neighbouring tiles, which is the layout of
//! the transformed blocks the gemms read and write (`(alpha^2, channels, tiles)`), so every
//! transformed element is one vector store or load.
//!
//! An input tile's rows are loaded as vectors (one row of `alpha <= 8` taps, masked at the
//! image's edges) and transformed vertically a whole row at a time; eight tiles' rows are then
//! turned into the tile-per-lane layout with 8x8 transposes for the horizontal pass. The
//! upstream gradient's and the output's `4 x 4` tiles go through 4x4 transposes of both
//! 128-bit halves. Everything between is fused multiply-adds by the constant matrices of
//! [`Matrices`], their zero terms folded away at compile time. The generic plane-wise
//! transforms of `winograd.rs` split each channel into phase planes with scalar gathers and
//! pack the tiles with one short copy per tile row; at 5x5 on 28x28 images those scalar
//! copies took most of the convolution's time.
//!
//! A block's tile count is rounded up to a multiple of 8 ([`padded`]): the lanes past the
//! last tile are zero tiles, and their columns of the gemms' results are never read.

use std::arch::x86_64::*;

/// The transform matrices of one F(4, r) as constants, so that the kernels' multiply-adds by
/// them are unrolled with zero terms dropped and every coefficient an immediate broadcast
/// (the same numbers as `Transforms::new(r)`, checked by a test): `B^T` `(alpha, alpha)` and
/// `A^T` `(4, alpha)`, padded with zeros to 8 columns.
pub(super) trait Matrices {
    /// Side of a transformed tile.
    const ALPHA: usize;
    /// `B^T`.
    const BT: [[f32; 8]; 8];
    /// `A^T`.
    const AT: [[f32; 8]; 4];
    /// `A = (A^T)^T`.
    const A: [[f32; 4]; 8] = transpose_at(&Self::AT);
}

/// `(A^T)^T`.
const fn transpose_at(at: &[[f32; 8]; 4]) -> [[f32; 4]; 8] {
    let mut a = [[0.0; 4]; 8];
    let mut i = 0;
    while i < 4 {
        let mut j = 0;
        while j < 8 {
            a[j][i] = at[i][j];
            j += 1;
        }
        i += 1;
    }
    a
}

/// `p / q` rounded to f32 as the f64 matrices of `Transforms::new` are.
const fn q(p: f64, q: f64) -> f32 {
    (p / q) as f32
}

/// F(4x4, 3x3) on the points 0, 1, -1, 1/2, -2 and infinity.
pub(super) struct F43;

impl Matrices for F43 {
    const ALPHA: usize = 6;
    #[rustfmt::skip]
    const BT: [[f32; 8]; 8] = [
        [1.0, q(-3.0, 2.0), -2.0, q(3.0, 2.0), 1.0, 0.0, 0.0, 0.0],
        [0.0, q(-1.0, 3.0), q(1.0, 6.0), q(5.0, 6.0), q(1.0, 3.0), 0.0, 0.0, 0.0],
        [0.0, q(-1.0, 3.0), q(5.0, 6.0), q(-1.0, 6.0), q(-1.0, 3.0), 0.0, 0.0, 0.0],
        [0.0, q(32.0, 15.0), q(16.0, 15.0), q(-32.0, 15.0), q(-16.0, 15.0), 0.0, 0.0, 0.0],
        [0.0, q(1.0, 30.0), q(-1.0, 15.0), q(-1.0, 30.0), q(1.0, 15.0), 0.0, 0.0, 0.0],
        [0.0, 1.0, q(-3.0, 2.0), -2.0, q(3.0, 2.0), 1.0, 0.0, 0.0],
        [0.0; 8],
        [0.0; 8],
    ];
    #[rustfmt::skip]
    const AT: [[f32; 8]; 4] = [
        [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, -1.0, 0.5, -2.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 1.0, 0.25, 4.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, -1.0, 0.125, -8.0, 1.0, 0.0, 0.0],
    ];
}

/// F(4x4, 5x5) on the points 0, 1, -1, 1/2, -1/2, 2, -2 and infinity.
pub(super) struct F45;

impl Matrices for F45 {
    const ALPHA: usize = 8;
    #[rustfmt::skip]
    const BT: [[f32; 8]; 8] = [
        [1.0, 0.0, q(-21.0, 4.0), 0.0, q(21.0, 4.0), 0.0, -1.0, 0.0],
        [0.0, q(-2.0, 9.0), q(-2.0, 9.0), q(17.0, 18.0), q(17.0, 18.0), q(-2.0, 9.0), q(-2.0, 9.0), 0.0],
        [0.0, q(2.0, 9.0), q(-2.0, 9.0), q(-17.0, 18.0), q(17.0, 18.0), q(2.0, 9.0), q(-2.0, 9.0), 0.0],
        [0.0, q(64.0, 45.0), q(128.0, 45.0), q(-16.0, 9.0), q(-32.0, 9.0), q(16.0, 45.0), q(32.0, 45.0), 0.0],
        [0.0, q(-64.0, 45.0), q(128.0, 45.0), q(16.0, 9.0), q(-32.0, 9.0), q(-16.0, 45.0), q(32.0, 45.0), 0.0],
        [0.0, q(1.0, 180.0), q(1.0, 360.0), q(-1.0, 36.0), q(-1.0, 72.0), q(1.0, 45.0), q(1.0, 90.0), 0.0],
        [0.0, q(-1.0, 180.0), q(1.0, 360.0), q(1.0, 36.0), q(-1.0, 72.0), q(-1.0, 45.0), q(1.0, 90.0), 0.0],
        [0.0, -1.0, 0.0, q(21.0, 4.0), 0.0, q(-21.0, 4.0), 0.0, 1.0],
    ];
    #[rustfmt::skip]
    const AT: [[f32; 8]; 4] = [
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
        [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0],
        [0.0, 1.0, 1.0, 0.25, 0.25, 4.0, 4.0, 0.0],
        [0.0, 1.0, -1.0, 0.125, -0.125, 8.0, -8.0, 1.0],
    ];
}

/// `m v` for a constant matrix `m`: after inlining, the loops unroll and the zero terms fold
/// away, leaving one multiply-add by an immediate per non-zero coefficient.
#[inline(always)]
unsafe fn apply<const R: usize, const C: usize>(m: &[[f32; C]; R], v: &[__m256; C]) -> [__m256; R] {
    let mut out = [_mm256_setzero_ps(); R];
    for (o, row) in out.iter_mut().zip(m) {
        for (&c, &x) in row.iter().zip(v) {
            if c != 0.0 {
                *o = _mm256_fmadd_ps(_mm256_set1_ps(c), x, *o);
            }
        }
    }
    out
}

/// The tiles of a block as the gemms see them: rounded up to whole vectors.
pub(super) fn padded(tiles: usize) -> usize {
    tiles.next_multiple_of(8)
}

/// Where one tile lies in its plane: `base`, the offset of its image's first channel plane;
/// `y` and `x`, the plane row and column of its first element (negative in the padding).
#[derive(Clone, Copy, Debug)]
pub(super) struct TileAt {
    pub base: usize,
    pub y: isize,
    pub x: isize,
}

/// The planes tiles are read from or written to: `channels` planes of `h x w` per image.
#[derive(Clone, Copy, Debug)]
pub(super) struct Planes {
    pub channels: usize,
    pub h: usize,
    pub w: usize,
}

/// The 8x8 transpose: lane `j` of result `l` is lane `l` of `r[j]`.
#[inline(always)]
unsafe fn transpose8(r: &[__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// The 4x4 transposes of both halves: with `q[j]` = `[a_j (4 lanes) | b_j (4 lanes)]`,
/// result `k` is `[a_0[k], a_1[k], a_2[k], a_3[k] | b_0[k], b_1[k], b_2[k], b_3[k]]`.
#[inline(always)]
unsafe fn transpose4x2(q: &[__m256; 4]) -> [__m256; 4] {
    let t0 = _mm256_unpacklo_ps(q[0], q[1]);
    let t1 = _mm256_unpackhi_ps(q[0], q[1]);
    let t2 = _mm256_unpacklo_ps(q[2], q[3]);
    let t3 = _mm256_unpackhi_ps(q[2], q[3]);
    [
        _mm256_shuffle_ps::<0x44>(t0, t2),
        _mm256_shuffle_ps::<0xEE>(t0, t2),
        _mm256_shuffle_ps::<0x44>(t1, t3),
        _mm256_shuffle_ps::<0xEE>(t1, t3),
    ]
}

/// Lanes `lo..hi` of eight set, the others clear.
#[inline(always)]
unsafe fn lane_mask(lo: isize, hi: isize) -> __m256i {
    let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_and_si256(
        _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo as i32 - 1)),
        _mm256_cmpgt_epi32(_mm256_set1_epi32(hi as i32), idx),
    )
}

/// Elements `x..x + n` (`n <= 8`) of row `y` of the `h x w` plane at `plane`, zero outside
/// the plane and past `n`.
#[inline(always)]
unsafe fn load_row(plane: *const f32, h: usize, w: usize, y: isize, x: isize, n: usize) -> __m256 {
    if y < 0 || y >= h as isize {
        return _mm256_setzero_ps();
    }
    let (lo, hi) = ((-x).max(0), (w as isize - x).min(n as isize));
    let at = plane.wrapping_offset(y * w as isize + x);
    if lo == 0 && hi == 8 {
        _mm256_loadu_ps(at)
    } else if lo >= hi {
        _mm256_setzero_ps()
    } else {
        // Masked lanes are not read, so `at` may point before or past the plane there.
        _mm256_maskload_ps(at, lane_mask(lo, hi))
    }
}

/// `V (alpha^2, Ci, tp) = B^T d B` for the tiles `tiles` of `x` (`tp = padded(tiles.len())`),
/// its `alpha^2` planes `stride` elements apart.
///
/// Each tile's rows are loaded as vectors over its columns and transformed vertically
/// (`z = B^T d`, whole rows at a time); then, for each row `a`, the eight tiles' rows are
/// transposed into vectors over tiles and transformed horizontally (`V[a] = z[a] B`), whose
/// elements are the stores.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `v` must hold the planes (`stride >= Ci * tp`); every tile's
/// `base` must be the start of an image in `x`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transform_input<W: Matrices>(
    x: &[f32],
    p: Planes,
    tiles: &[TileAt],
    v: &mut [f32],
    stride: usize,
) {
    let (alpha, tp, plane_len) = (W::ALPHA, padded(tiles.len()), p.h * p.w);
    debug_assert!(
        p.channels * tp <= stride && v.len() >= (alpha * alpha - 1) * stride + p.channels * tp
    );
    debug_assert!(tiles
        .iter()
        .all(|t| t.base + p.channels * plane_len <= x.len()));
    let zero = _mm256_setzero_ps();
    // z[a][j]: row a of tile j after the vertical pass (lanes: columns). Allocated once:
    // every element a kernel reads is written first in each group.
    let mut z = [[zero; 8]; 8];
    for ch in 0..p.channels {
        for g in (0..tp).step_by(8) {
            for j in 0..8 {
                let Some(tile) = tiles.get(g + j) else {
                    z.iter_mut().for_each(|za| za[j] = zero);
                    continue;
                };
                let plane = x.as_ptr().add(tile.base + ch * plane_len);
                let rows: [__m256; 8] = std::array::from_fn(|k| {
                    if k < alpha {
                        load_row(plane, p.h, p.w, tile.y + k as isize, tile.x, alpha)
                    } else {
                        zero
                    }
                });
                for (za, r) in z.iter_mut().zip(apply(&W::BT, &rows)) {
                    za[j] = r;
                }
            }
            for (a, za) in z.iter().enumerate().take(alpha) {
                let row = apply(&W::BT, &transpose8(za));
                for (b, vb) in row.into_iter().enumerate().take(alpha) {
                    let at = (a * alpha + b) * stride + ch * tp + g;
                    _mm256_storeu_ps(v.as_mut_ptr().add(at), vb);
                }
            }
        }
    }
}

/// Four elements of an output-sized plane row at `at`, `n < 4` of them where the row ends
/// (zero past it).
#[inline(always)]
unsafe fn load4(at: *const f32, n: usize) -> __m128 {
    if n >= 4 {
        _mm_loadu_ps(at)
    } else {
        _mm_maskload_ps(at, _mm256_castsi256_si128(lane_mask(0, n as isize)))
    }
}

/// Stores the first `n.min(4)` lanes of `v` at `at`.
#[inline(always)]
unsafe fn store4(at: *mut f32, n: usize, v: __m128) {
    if n >= 4 {
        _mm_storeu_ps(at, v)
    } else {
        _mm_maskstore_ps(at, _mm256_castsi256_si128(lane_mask(0, n as isize)), v)
    }
}

/// `Gt (alpha^2, Co, tp) = A g A^T` for the `4 x 4` tiles `tiles` of the upstream gradient
/// `gy` (zero past the planes' edges and in the padding lanes).
///
/// # Safety
/// As [`transform_input`], with `gt` holding the planes; every tile's `y` and `x`
/// must be inside its plane.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transform_grad<W: Matrices>(
    gy: &[f32],
    p: Planes,
    tiles: &[TileAt],
    gt: &mut [f32],
    stride: usize,
) {
    let (alpha, tp, plane_len) = (W::ALPHA, padded(tiles.len()), p.h * p.w);
    debug_assert!(
        p.channels * tp <= stride && gt.len() >= (alpha * alpha - 1) * stride + p.channels * tp
    );
    debug_assert!(tiles
        .iter()
        .all(|t| t.base + p.channels * plane_len <= gy.len()));
    let zero = _mm256_setzero_ps();
    // z[a][j]: element (a, j) after the vertical pass, over the eight tiles.
    let mut z = [[zero; 4]; 8];
    for o in 0..p.channels {
        for g in (0..tp).step_by(8) {
            // e[i][j]: element (i, j) of the eight tiles.
            let e: [[__m256; 4]; 4] = std::array::from_fn(|i| {
                let rows: [__m128; 8] = std::array::from_fn(|q| match tiles.get(g + q) {
                    Some(tile) if (tile.y as usize + i) < p.h => {
                        let y = tile.y as usize + i;
                        let src = gy.as_ptr().add(tile.base + o * plane_len + y * p.w);
                        load4(src.add(tile.x as usize), p.w - tile.x as usize)
                    }
                    _ => _mm_setzero_ps(),
                });
                transpose4x2(&[0, 1, 2, 3].map(|j| _mm256_set_m128(rows[j + 4], rows[j])))
            });
            for j in 0..4 {
                let col = apply(&W::A, &[e[0][j], e[1][j], e[2][j], e[3][j]]);
                for (za, c) in z.iter_mut().zip(col) {
                    za[j] = c;
                }
            }
            for (a, za) in z.iter().enumerate().take(alpha) {
                for (b, gb) in apply(&W::A, za).into_iter().enumerate().take(alpha) {
                    let dst = (a * alpha + b) * stride + o * tp + g;
                    _mm256_storeu_ps(gt.as_mut_ptr().add(dst), gb);
                }
            }
        }
    }
}

/// The output tiles `tiles` from `M (alpha^2, Co, tp)`: `Y = A^T M A` (+ bias) per tile,
/// written into the planes at `out` (cut at the planes' edges).
///
/// # Safety
/// As [`transform_grad`], with `mm` holding the planes, `out` valid for writes
/// of every tile's planes and `bias` (when given) of `Co` elements.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transform_output<W: Matrices>(
    mm: &[f32],
    p: Planes,
    tiles: &[TileAt],
    stride: usize,
    bias: Option<&[f32]>,
    out: *mut f32,
) {
    let (alpha, tp, plane_len) = (W::ALPHA, padded(tiles.len()), p.h * p.w);
    debug_assert!(
        p.channels * tp <= stride && mm.len() >= (alpha * alpha - 1) * stride + p.channels * tp
    );
    let zero = _mm256_setzero_ps();
    // pm[i][b] = sum_a A^T[i][a] M[a][b], over the eight tiles (columns past alpha stay zero).
    let mut pm = [[zero; 8]; 4];
    for o in 0..p.channels {
        let b0 = _mm256_set1_ps(bias.map_or(0.0, |b| b[o]));
        for g in (0..tp).step_by(8) {
            for b in 0..alpha {
                let col: [__m256; 8] = std::array::from_fn(|a| {
                    if a < alpha {
                        let at = (a * alpha + b) * stride + o * tp + g;
                        _mm256_loadu_ps(mm.as_ptr().add(at))
                    } else {
                        zero
                    }
                });
                for (pi, v) in pm.iter_mut().zip(apply(&W::AT, &col)) {
                    pi[b] = v;
                }
            }
            for (i, pi) in pm.iter().enumerate() {
                // Y[i][.] = A^T P[i][.] + bias, then row i of tile q is the low half of
                // r[q] (q < 4) or the high half of r[q - 4].
                let r = transpose4x2(&apply(&W::AT, pi).map(|v| _mm256_add_ps(v, b0)));
                for (q, tile) in tiles.iter().skip(g).take(8).enumerate() {
                    let row = tile.y as usize + i;
                    if row >= p.h {
                        continue;
                    }
                    let v = if q < 4 {
                        _mm256_castps256_ps128(r[q])
                    } else {
                        _mm256_extractf128_ps::<1>(r[q - 4])
                    };
                    let dst = out.add(tile.base + o * plane_len + row * p.w + tile.x as usize);
                    store4(dst, p.w - tile.x as usize, v);
                }
            }
        }
    }
}
