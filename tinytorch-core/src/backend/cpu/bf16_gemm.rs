//! bf16 matrix products with f32 accumulation, rounded to bf16 once per element, as
//! PyTorch's bf16 matmul on such CPUs (oneDNN) computes it, on one of two engines:
//!
//! - **AMX tiles** (Intel Sapphire Rapids and later): one `tdpbf16ps` multiplies a 16 x 32
//!   bf16 tile of A by a 32 x 16 tile of B into a 16 x 16 f32 tile, 8,192 multiply-adds,
//!   sixteen times an AVX-512 f32 FMA's share of a cycle. A 32 x 32 block of C is four such
//!   tiles (tmm0-3) from two A tiles (tmm4-5) and two B tiles (tmm6-7).
//! - **AVX512-BF16 dot products** (`vdpbf16ps`; AMD Zen 4, Intel Cooper Lake and later): each
//!   f32 lane adds the products of one pair of bf16 values, 32 multiply-adds per instruction,
//!   twice an f32 FMA's. The same 32 x 32 block is four pieces of 8 rows x 32 columns, 16
//!   accumulators each, every pair of A broadcast against a row of B's panel.
//!
//! Both read the same packing. B holds k in pairs (row `p` of a panel is `B[2p][j],
//! B[2p+1][j]` for its 16 columns `j`: an AMX tile row, and a `vdpbf16ps` operand), packed a
//! block of `KC` x `NC` at a time that stays in L2 while the rows of A pass it; A is packed
//! into 1 KiB tiles of 16 rows x 32 depths, whole when small, else `MC` rows at a time.
//! Packing takes any strides and pads m, n and k to 32 with zeros, so the kernels compute
//! whole blocks; only the rounding into the output is cut at its edges. Partial sums of one
//! column block wait in an f32 buffer between depth blocks; AMX rounds them to bf16 when the
//! block is done, the dot-product engine in its last depth block (masked stores).
//!
//! The tile instructions are written with `asm!` (Rust's AMX intrinsics are not stable), and
//! Linux gives a process the 8 KiB tile register state only once it asks
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)`): [`engine`] does the checks once.

use super::{allocator, CpuStorage};
use half::bf16;
use std::sync::LazyLock;

/// Depth (k) per packed block (a multiple of 32).
const KC: usize = 256;
/// Columns per packed block of B (a multiple of 32): KC x NC bf16 = 128 KiB, in L2.
const NC: usize = 256;
/// Rows per packed block of A, where A is packed a block at a time (a multiple of 32).
const MC: usize = 256;
/// Packed A up to this size is packed whole, once per product.
const A_WHOLE_BYTES: usize = 1 << 20;

/// The instructions that multiply bf16 here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// AMX tiles (`tdpbf16ps`).
    Amx,
    /// AVX512-BF16 dot products (`vdpbf16ps`).
    DotProduct,
}

/// The engine bf16 products run on here, if any: AMX where the CPU has AMX-BF16 (and
/// AVX512-BF16 for the rounding), Linux granted the tile state and the environment variable
/// `TINYTORCH_AMX` is not `0`; else the AVX512-BF16 dot products where the CPU has them and
/// `TINYTORCH_BF16_DOT` is not `0`; else none (bf16 products are widened to f32 and
/// multiplied by `gemm`).
pub fn engine() -> Option<Engine> {
    static ENGINE: LazyLock<Option<Engine>> = LazyLock::new(|| {
        let on = |var: &str| std::env::var(var).map_or(true, |v| v != "0");
        if !has_avx512_bf16() {
            None
        } else if on("TINYTORCH_AMX") && amx_supported() {
            Some(Engine::Amx)
        } else if on("TINYTORCH_BF16_DOT") {
            Some(Engine::DotProduct)
        } else {
            None
        }
    });
    *ENGINE
}

/// The packing, rounding and dot-product kernels' features.
fn has_avx512_bf16() -> bool {
    is_x86_feature_detected!("avx512bf16")
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
}

#[cfg(target_os = "linux")]
fn amx_supported() -> bool {
    // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
    #[allow(unused_unsafe)]
    // SAFETY: CPUID leaf 7 exists on every x86-64 CPU that has AVX-512.
    let edx = unsafe { std::arch::x86_64::__cpuid_count(7, 0) }.edx;
    if edx & (1 << 22) == 0 || edx & (1 << 24) == 0 {
        return false;
    }
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain system call; it fails (returns -1) on kernels without AMX support.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn amx_supported() -> bool {
    false
}

/// Where a matrix operand lies: its first element and its row and column strides, in
/// elements.
#[derive(Clone, Copy, Debug)]
pub struct MatRef {
    /// Element `[0, 0]`.
    pub ptr: *const bf16,
    /// Elements from one row to the next.
    pub rs: usize,
    /// Elements from one column to the next.
    pub cs: usize,
}

impl MatRef {
    /// Element `[r, c]`.
    ///
    /// # Safety
    /// `[r, c]` must be inside the operand.
    #[inline(always)]
    unsafe fn at(self, r: usize, c: usize) -> bf16 {
        *self.ptr.add(r * self.rs + c * self.cs)
    }
}

/// `out[r * out_rs + c] = sum_t A[r, t] * B[t, c] (+ bias[c])` for `r < m`, `c < n`, `t < k`,
/// summed in f32 on `engine` (the bias added to the f32 sum, as oneDNN's bf16 linear does)
/// and rounded to bf16 once. Single-threaded; callers split larger products.
///
/// # Safety
/// `engine` must be what [`engine`] returned (or, for tests, an engine of a CPU that has
/// both); `a` must be readable for `m x k` elements and `b` for `k x n` at their strides,
/// and `out` writable for `m` rows of `n` at row stride `out_rs`; `bias`, if any, holds `n`
/// elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm(
    engine: Engine,
    m: usize,
    n: usize,
    k: usize,
    a: MatRef,
    b: MatRef,
    out: *mut bf16,
    out_rs: usize,
    bias: Option<&[bf16]>,
) {
    if m == 0 || n == 0 {
        return;
    }
    // The bias widened once; padded to whole 32-column blocks so the kernels load it whole.
    let bias: Option<Vec<f32>> = bias.map(|b| {
        let mut wide: Vec<f32> = b[..n].iter().map(|v| v.to_f32()).collect();
        wide.resize(n.next_multiple_of(32), 0.0);
        wide
    });
    if k == 0 {
        for r in 0..m {
            let row = std::slice::from_raw_parts_mut(out.add(r * out_rs), n);
            match &bias {
                Some(b) => round_to_bf16(&vec![0.0; n], Some(&b[..n]), row),
                None => row.fill(bf16::ZERO),
            }
        }
        return;
    }
    let (mp, np, kp) = (
        m.next_multiple_of(32),
        n.next_multiple_of(32),
        k.next_multiple_of(32),
    );
    // A small enough is packed once and serves every column block of B; a larger one is
    // packed a block at a time, again for each column block.
    // The packers write every element the kernels read (zeros in the padding), and the
    // first depth block writes every partial sum, so the buffers come without a zero fill
    // (fresh ones per call were a tenth of a 512^3 product's time in page faults).
    let whole_a = mp * kp * 2 <= A_WHOLE_BYTES;
    let mut apack = if whole_a {
        let mut packed = allocator::scratch::<bf16>(mp * kp);
        pack_a(a, 0, mp, m, 0, k, &mut packed);
        packed
    } else {
        allocator::scratch::<bf16>(MC * KC)
    };
    let ncb = NC.min(np);
    let mut bpack = allocator::scratch::<bf16>(KC.min(kp) * ncb);
    // Partial sums of one column block, row stride `ncb`: AMX's output, and the dot
    // engine's from one depth block to the next (none where one block covers the depth:
    // its kernel rounds its registers into `out`).
    let acc_len = if engine == Engine::Amx || k > KC {
        mp * ncb
    } else {
        0
    };
    let mut acc = allocator::scratch::<f32>(acc_len);
    if engine == Engine::Amx {
        tiles::configure();
    }
    for n0 in (0..np).step_by(NC) {
        let nc = NC.min(np - n0);
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            let kcp = kc.next_multiple_of(32);
            pack_b(b, k0, kc, n0, nc, n, &mut bpack);
            for m0 in (0..mp).step_by(MC) {
                let mc = MC.min(mp - m0);
                // A's first tile of rows m0.. and depth k0.., and the distance from one
                // 16-row block of tiles to the next.
                let (a_first, a_block) = if whole_a {
                    (apack.as_ptr().add(m0 * kp + k0 * 16), 16 * kp)
                } else {
                    pack_a(a, m0, mc, m, k0, kc, &mut apack);
                    (apack.as_ptr(), 16 * kcp)
                };
                for j in (0..nc).step_by(32) {
                    let b_panels = bpack.as_ptr().add(j * kcp);
                    for i in (0..mc).step_by(32) {
                        let a = a_first.add(i / 16 * a_block);
                        let c = if acc.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            acc.as_mut_ptr().add((m0 + i) * ncb + j)
                        };
                        match engine {
                            Engine::Amx => tiles::block(a, a_block, b_panels, kcp, c, ncb, k0 == 0),
                            Engine::DotProduct => {
                                // The last depth block rounds its sums into `out` itself.
                                let (r0, c0) = (m0 + i, n0 + j);
                                let last = (k0 + kc == k).then(|| dot::Out {
                                    ptr: out.add(r0 * out_rs + c0),
                                    bias: bias
                                        .as_ref()
                                        .map_or(std::ptr::null(), |b| b[c0..].as_ptr()),
                                    rs: out_rs,
                                    rows: (m - r0).min(32),
                                    cols: (n - c0).min(32),
                                });
                                dot::block(a, a_block, b_panels, kcp, c, ncb, k0 == 0, last)
                            }
                        }
                    }
                }
            }
        }
        if engine == Engine::Amx {
            // n0 < np and both are multiples of 32, so n0 < n.
            let cols = nc.min(n - n0);
            let bias = bias.as_ref().map(|b| &b[n0..n0 + cols]);
            for r in 0..m {
                let dst = std::slice::from_raw_parts_mut(out.add(r * out_rs + n0), cols);
                round_to_bf16(&acc[r * ncb..r * ncb + cols], bias, dst);
            }
        }
    }
    if engine == Engine::Amx {
        tiles::release();
    }
    for packed in [apack, bpack] {
        allocator::recycle(CpuStorage::BF16(packed.into()));
    }
    allocator::recycle(CpuStorage::F32(acc.into()));
}

/// Packs rows `m0..m0 + mc` and depth `k0..k0 + kc` of A as tiles: blocks of 16 rows, each
/// `kcp / 32` tiles (`kcp`, `kc` rounded up to 32) of 16 rows x 32 (1 KiB, contiguous); zeros
/// past row `m` and depth `kc`.
///
/// # Safety
/// As [`gemm`]'s `a`.
unsafe fn pack_a(
    a: MatRef,
    m0: usize,
    mc: usize,
    m: usize,
    k0: usize,
    kc: usize,
    dst: &mut [bf16],
) {
    let kcp = kc.next_multiple_of(32);
    for (rb, block) in dst[..mc * kcp].chunks_exact_mut(16 * kcp).enumerate() {
        let r0 = m0 + 16 * rb;
        let rows = m.saturating_sub(r0).min(16);
        for (s, tile) in block.chunks_exact_mut(512).enumerate() {
            let t0 = k0 + 32 * s;
            let depth = (k0 + kc).saturating_sub(t0).min(32);
            if rows < 16 || depth < 32 {
                tile.fill(bf16::ZERO);
            }
            if a.rs == 1 && rows == 16 && depth == 32 {
                // Transposed A, a whole tile: 32 contiguous columns of 16 rows, turned in
                // registers.
                transpose_tile(a.ptr.add(t0 * a.cs + r0), a.cs, tile.as_mut_ptr());
            } else if a.rs == 1 {
                // Transposed A: a column of 16 rows is contiguous.
                for t in 0..depth {
                    let col = std::slice::from_raw_parts(a.ptr.add((t0 + t) * a.cs + r0), rows);
                    for (r, &v) in col.iter().enumerate() {
                        tile[32 * r + t] = v;
                    }
                }
            } else if a.cs == 1 {
                // Row-major A: 64-byte pieces of rows (a whole piece as one fixed-size copy,
                // which compiles to vector moves: a memmove call per piece was 28% of a
                // 128 x 1024 x 512 product).
                for (r, row) in tile.chunks_exact_mut(32).take(rows).enumerate() {
                    let src = a.ptr.add((r0 + r) * a.rs + t0);
                    if depth == 32 {
                        let piece: &mut [bf16; 32] = row.try_into().expect("rows of 32");
                        *piece = src.cast::<[bf16; 32]>().read_unaligned();
                    } else {
                        row[..depth].copy_from_slice(std::slice::from_raw_parts(src, depth));
                    }
                }
            } else {
                for (r, row) in tile.chunks_exact_mut(32).take(rows).enumerate() {
                    for (t, v) in row[..depth].iter_mut().enumerate() {
                        *v = a.at(r0 + r, t0 + t);
                    }
                }
            }
        }
    }
}

/// Packs depth `k0..k0 + kc` and columns `n0..n0 + nc` of B as tiles take them: panels of 16
/// columns, each `kcp / 2` rows of 16 column pairs `(B[2p][j], B[2p+1][j])` (so one tile, 16
/// such rows, is 1 KiB, contiguous); zeros past depth `kc` and column `n`.
///
/// # Safety
/// As [`gemm`]'s `b`.
unsafe fn pack_b(
    b: MatRef,
    k0: usize,
    kc: usize,
    n0: usize,
    nc: usize,
    n: usize,
    dst: &mut [bf16],
) {
    let kcp = kc.next_multiple_of(32);
    for (q, panel) in dst[..nc * kcp].chunks_exact_mut(16 * kcp).enumerate() {
        let c0 = n0 + 16 * q;
        let cols = n.saturating_sub(c0).min(16);
        if cols < 16 || kc < kcp {
            panel.fill(bf16::ZERO);
        }
        if b.cs == 1 && cols == 16 {
            // Row-major B, a whole panel: two rows of 16 interleaved by vector.
            for (p, pair_row) in panel.chunks_exact_mut(32).take(kc / 2).enumerate() {
                let upper = b.ptr.add((k0 + 2 * p) * b.rs + c0);
                interleave16(upper, upper.add(b.rs), pair_row.as_mut_ptr());
            }
            if kc % 2 == 1 {
                let last = std::slice::from_raw_parts(b.ptr.add((k0 + kc - 1) * b.rs + c0), 16);
                for (j, &v) in last.iter().enumerate() {
                    panel[32 * (kc / 2) + 2 * j] = v;
                }
            }
        } else if b.cs == 1 {
            // Row-major B, the last panel: two rows of `cols` interleaved.
            for (p, pair_row) in panel.chunks_exact_mut(32).take(kc.div_ceil(2)).enumerate() {
                for t in 0..2.min(kc - 2 * p) {
                    let row =
                        std::slice::from_raw_parts(b.ptr.add((k0 + 2 * p + t) * b.rs + c0), cols);
                    for (j, &v) in row.iter().enumerate() {
                        pair_row[2 * j + t] = v;
                    }
                }
            }
        } else if b.rs == 1 && cols == 16 && 15 * b.cs < (i32::MAX as usize) / 2 {
            // Transposed B, a whole panel: a pair is one 32-bit word of its column, and one
            // gather takes a pair row from the 16 columns.
            let first = b.ptr.add(c0 * b.cs + k0);
            for (p, pair_row) in panel.chunks_exact_mut(32).take(kc / 2).enumerate() {
                gather_pairs(first.add(2 * p), b.cs, pair_row.as_mut_ptr());
            }
            if kc % 2 == 1 {
                for j in 0..16 {
                    panel[32 * (kc / 2) + 2 * j] = *first.add(j * b.cs + kc - 1);
                }
            }
        } else if b.rs == 1 {
            // Transposed B: a column's depth is contiguous, pairs already adjacent.
            for j in 0..cols {
                let col = std::slice::from_raw_parts(b.ptr.add((c0 + j) * b.cs + k0), kc);
                for (p, pair) in col.chunks(2).enumerate() {
                    panel[32 * p + 2 * j..32 * p + 2 * j + pair.len()].copy_from_slice(pair);
                }
            }
        } else {
            for (p, pair_row) in panel.chunks_exact_mut(32).take(kc.div_ceil(2)).enumerate() {
                for t in 0..2.min(kc - 2 * p) {
                    for j in 0..cols {
                        pair_row[2 * j + t] = b.at(k0 + 2 * p + t, c0 + j);
                    }
                }
            }
        }
    }
}

/// One A tile from a transposed operand: `tile[32 r + t] = src[t * cs + r]` for 16 rows `r`
/// and 32 depths `t`. Pairs of depths are interleaved into 32-bit words (as
/// `interleave16`: word `r` of pair row `p` is row `r`'s pair), and the 16 x 16 words are
/// transposed: 32-bit and 64-bit unpacks within 128-bit lanes, then two rounds of 128-bit
/// lane shuffles.
///
/// # Safety
/// 16 elements readable at each `src + t * cs` (`t < 32`), 512 writable at `tile`;
/// AVX-512.
#[target_feature(enable = "avx512f")]
unsafe fn transpose_tile(src: *const bf16, cs: usize, tile: *mut bf16) {
    use std::arch::x86_64::{
        __m256i, __m512i, _mm256_loadu_si256, _mm512_cvtepu16_epi32, _mm512_or_si512,
        _mm512_shuffle_i32x4, _mm512_slli_epi32, _mm512_storeu_si512, _mm512_unpackhi_epi32,
        _mm512_unpackhi_epi64, _mm512_unpacklo_epi32, _mm512_unpacklo_epi64,
    };
    let column =
        |t: usize| _mm512_cvtepu16_epi32(_mm256_loadu_si256(src.add(t * cs).cast::<__m256i>()));
    // w[p], word r: the pair (A[r][2p], A[r][2p + 1]).
    let w: [__m512i; 16] = std::array::from_fn(|p| {
        _mm512_or_si512(column(2 * p), _mm512_slli_epi32::<16>(column(2 * p + 1)))
    });
    // t[2k], t[2k + 1]: words 4L + (0, 1) and 4L + (2, 3) of w[2k], w[2k + 1] interleaved,
    // in each 128-bit lane L.
    let mut t = w;
    for k in 0..8 {
        t[2 * k] = _mm512_unpacklo_epi32(w[2 * k], w[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(w[2 * k], w[2 * k + 1]);
    }
    // u[4k + j], lane L: word 4L + j of w[4k..4k + 4].
    let mut u = t;
    for k in 0..4 {
        u[4 * k] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    // Row 4L + j is lane L of u[j], u[4 + j], u[8 + j], u[12 + j]: a 4 x 4 transpose of
    // 128-bit lanes (0x88 takes lanes 0 and 2 of each operand, 0xdd lanes 1 and 3).
    for j in 0..4 {
        let (a, b, c, d) = (u[j], u[4 + j], u[8 + j], u[12 + j]);
        let v0 = _mm512_shuffle_i32x4::<0x88>(a, b);
        let v1 = _mm512_shuffle_i32x4::<0xdd>(a, b);
        let v2 = _mm512_shuffle_i32x4::<0x88>(c, d);
        let v3 = _mm512_shuffle_i32x4::<0xdd>(c, d);
        let rows = [
            _mm512_shuffle_i32x4::<0x88>(v0, v2),
            _mm512_shuffle_i32x4::<0x88>(v1, v3),
            _mm512_shuffle_i32x4::<0xdd>(v0, v2),
            _mm512_shuffle_i32x4::<0xdd>(v1, v3),
        ];
        for (l, row) in rows.into_iter().enumerate() {
            _mm512_storeu_si512(tile.add(32 * (4 * l + j)).cast(), row);
        }
    }
}

/// `dst[2j] = upper[j], dst[2j + 1] = lower[j]` for `j < 16`: both 32-byte rows widened to
/// 32-bit lanes, the lower one shifted into the high halves.
///
/// # Safety
/// 16 elements readable at `upper` and `lower`, 32 writable at `dst`; AVX-512 (which
/// [`engine`] requires).
#[target_feature(enable = "avx512f")]
unsafe fn interleave16(upper: *const bf16, lower: *const bf16, dst: *mut bf16) {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_cvtepu16_epi32, _mm512_or_si512, _mm512_slli_epi32,
        _mm512_storeu_si512,
    };
    let u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(upper.cast::<__m256i>()));
    let l = _mm512_cvtepu16_epi32(_mm256_loadu_si256(lower.cast::<__m256i>()));
    _mm512_storeu_si512(dst.cast(), _mm512_or_si512(u, _mm512_slli_epi32::<16>(l)));
}

/// `dst[2j..2j + 2] = src[j * cs..j * cs + 2]` for `j < 16` (one 32-bit gather).
///
/// # Safety
/// Two elements readable at each `src + j * cs`, `15 * cs` below `i32::MAX / 2`, 32 elements
/// writable at `dst`; AVX-512.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn gather_pairs(src: *const bf16, cs: usize, dst: *mut bf16) {
    use std::arch::x86_64::{
        _mm512_i32gather_epi32, _mm512_mullo_epi32, _mm512_set1_epi32, _mm512_setr_epi32,
        _mm512_storeu_si512,
    };
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // Offsets in elements, scaled by 2 bytes.
    let index = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(cs as i32));
    let pairs = _mm512_i32gather_epi32::<2>(index, src.cast());
    _mm512_storeu_si512(dst.cast(), pairs);
}

/// `dst[i] = bf16(src[i] (+ bias[i]))`, rounding to nearest even (AVX512-BF16's
/// `vcvtneps2bf16`, which [`engine`] requires).
///
/// # Safety
/// The CPU must have AVX512-BF16; `bias`, if any, is as long as `src`.
#[target_feature(enable = "avx512f,avx512bf16,avx512vl")]
unsafe fn round_to_bf16(src: &[f32], bias: Option<&[f32]>, dst: &mut [bf16]) {
    use std::arch::x86_64::{
        __m256bh, __m256i, _mm256_storeu_si256, _mm512_add_ps, _mm512_cvtneps_pbh, _mm512_loadu_ps,
    };
    let full = src.len() / 16 * 16;
    for i in (0..full).step_by(16) {
        let mut v = _mm512_loadu_ps(src.as_ptr().add(i));
        if let Some(b) = bias {
            v = _mm512_add_ps(v, _mm512_loadu_ps(b.as_ptr().add(i)));
        }
        let h = _mm512_cvtneps_pbh(v);
        _mm256_storeu_si256(
            dst.as_mut_ptr().add(i).cast(),
            std::mem::transmute::<__m256bh, __m256i>(h),
        );
    }
    for (i, (d, &s)) in dst.iter_mut().zip(src).enumerate().skip(full) {
        *d = <bf16 as crate::base::Element>::from_f32(s + bias.map_or(0.0, |b| b[i]));
    }
}

/// The tile instructions.
pub(crate) mod tiles {
    use half::bf16;
    use std::arch::asm;

    /// `ldtilecfg`'s 64-byte operand.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    /// Loads the tile configuration of this thread: palette 1, tiles 0-7 of 16 rows x 64
    /// bytes (16 f32, or 32 bf16, or 16 bf16 pairs).
    ///
    /// # Safety
    /// AMX must be available (see `engine`).
    pub unsafe fn configure() {
        configure_depth(32);
    }

    /// As [`configure`], for products of depth `kc` (16 or 32) per instruction: the A tiles
    /// (tmm4-5) 16 rows of `kc` bf16, the B tiles (tmm6-7) `kc / 2` rows of 16 pairs, the C
    /// tiles (tmm0-3) 16 x 16 f32. Depth 16 serves operands with 16 or fewer channels
    /// without multiplying zeros.
    ///
    /// # Safety
    /// AMX must be available (see `engine`); `kc` is 16 or 32.
    pub unsafe fn configure_depth(kc: usize) {
        debug_assert!(kc == 16 || kc == 32);
        let mut cfg = Config([0; 64]);
        cfg.0[0] = 1;
        for t in 0..8 {
            let (colsb, rows) = match t {
                4 | 5 => (2 * kc as u16, 16),
                6 | 7 => (64, kc as u8 / 2),
                _ => (64, 16),
            };
            cfg.0[16 + 2 * t..18 + 2 * t].copy_from_slice(&colsb.to_le_bytes());
            cfg.0[48 + t] = rows;
        }
        asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    }

    /// Returns the tile state to its initial (unused) state, so that context switches stop
    /// saving 8 KiB of tiles for this thread.
    ///
    /// # Safety
    /// AMX must be available.
    pub unsafe fn release() {
        asm!("tilerelease", options(nostack, nomem));
    }

    /// `C[32 x 32] (+)= A[32 x kcp] @ B[kcp x 32]`: A as `pack_a`'s tiles (`a` the upper 16
    /// rows' first tile, `a_block` elements on to the lower 16 rows'), B as two of `pack_b`'s
    /// panels of depth `kcp`, C f32 at row stride `c_rs`; `first` starts from zero instead
    /// of C.
    ///
    /// # Safety
    /// `configure` ran on this thread; the pointers hold those blocks.
    #[inline]
    pub unsafe fn block(
        a: *const bf16,
        a_block: usize,
        b: *const bf16,
        kcp: usize,
        c: *mut f32,
        c_rs: usize,
        first: bool,
    ) {
        let c_stride = c_rs * 4;
        let c_lower = c.add(16 * c_rs);
        if first {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
        } else {
            asm!(
                "tileloadd tmm0, [{c} + {s}*1]",
                "tileloadd tmm1, [{c} + {s}*1 + 64]",
                "tileloadd tmm2, [{cl} + {s}*1]",
                "tileloadd tmm3, [{cl} + {s}*1 + 64]",
                c = in(reg) c,
                cl = in(reg) c_lower,
                s = in(reg) c_stride,
                options(nostack, readonly),
            );
        }
        let (a_lower, b_right) = (a.add(a_block), b.add(16 * kcp));
        for step in 0..kcp / 32 {
            // Tiles are 512 elements (1 KiB) apart along the depth in both packings.
            asm!(
                "tileloadd tmm4, [{a} + {s}*1]",
                "tileloadd tmm6, [{b} + {s}*1]",
                "tileloadd tmm7, [{br} + {s}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tileloadd tmm5, [{al} + {s}*1]",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                a = in(reg) a.add(step * 512),
                al = in(reg) a_lower.add(step * 512),
                b = in(reg) b.add(step * 512),
                br = in(reg) b_right.add(step * 512),
                s = in(reg) 64usize,
                options(nostack, readonly),
            );
        }
        asm!(
            "tilestored [{c} + {s}*1], tmm0",
            "tilestored [{c} + {s}*1 + 64], tmm1",
            "tilestored [{cl} + {s}*1], tmm2",
            "tilestored [{cl} + {s}*1 + 64], tmm3",
            c = in(reg) c,
            cl = in(reg) c_lower,
            s = in(reg) c_stride,
            options(nostack),
        );
    }
}

/// The AVX512-BF16 kernel.
mod dot {
    use half::bf16;
    use std::arch::x86_64::{
        __m256i, __m512bh, _mm256_mask_storeu_epi16, _mm512_add_ps, _mm512_cvtneps_pbh,
        _mm512_dpbf16_ps, _mm512_loadu_ps, _mm512_loadu_si512, _mm512_set1_epi32,
        _mm512_setzero_ps, _mm512_storeu_ps,
    };

    /// Where a block's finished sums go, rounded to bf16: `rows` x `cols` (at most 32 x 32;
    /// fewer at the edges of the product) at `ptr`, row stride `rs`.
    #[derive(Clone, Copy)]
    pub struct Out {
        /// The block's first output element.
        pub ptr: *mut bf16,
        /// The f32 bias of the block's first column, 32 readable; null for none.
        pub bias: *const f32,
        /// Row stride of the output, in elements.
        pub rs: usize,
        /// Rows of the block inside the output.
        pub rows: usize,
        /// Columns of the block inside the output.
        pub cols: usize,
    }

    /// `C[32 x 32] (+)= A[32 x kcp] @ B[kcp x 32]` with the operands of `tiles::block`
    /// (A as `pack_a`'s tiles, B as two of `pack_b`'s panels, C f32 at row stride `c_rs`),
    /// as four pieces of 8 rows. With `last` (the last depth block) the sums are rounded
    /// into `last` instead of stored in C, saving a pass over C; with `first` too, C is
    /// neither read nor written and may be null.
    ///
    /// # Safety
    /// The CPU must have AVX512-BF16 and -BW; the pointers hold those blocks.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn block(
        a: *const bf16,
        a_block: usize,
        b: *const bf16,
        kcp: usize,
        c: *mut f32,
        c_rs: usize,
        first: bool,
        last: Option<Out>,
    ) {
        for piece in 0..4 {
            // Rows 8 * piece..: in the upper or lower 16-row block of tiles, 32 elements a
            // row within each tile.
            let rows = a.add(piece / 2 * a_block + piece % 2 * 8 * 32);
            let last = match last {
                Some(o) if o.rows > 8 * piece => Some(Out {
                    ptr: o.ptr.add(8 * piece * o.rs),
                    rows: o.rows - 8 * piece,
                    ..o
                }),
                // Rows past the product's end: nothing to keep.
                Some(_) => continue,
                None => None,
            };
            rows8(
                rows,
                b,
                kcp,
                c.wrapping_add(8 * piece * c_rs),
                c_rs,
                first,
                last,
            );
        }
    }

    /// Eight rows of [`block`]: 16 accumulators (8 rows x 2 vectors of 16 columns), one
    /// broadcast of a row's pair of A against the pair row of each panel per pair of depths.
    ///
    /// # Safety
    /// As [`block`], with `a` the first row's element in the first tile.
    #[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
    unsafe fn rows8(
        a: *const bf16,
        b: *const bf16,
        kcp: usize,
        c: *mut f32,
        c_rs: usize,
        first: bool,
        last: Option<Out>,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; 8];
        if !first {
            for (r, row) in acc.iter_mut().enumerate() {
                row[0] = _mm512_loadu_ps(c.add(r * c_rs));
                row[1] = _mm512_loadu_ps(c.add(r * c_rs + 16));
            }
        }
        let b_right = b.add(16 * kcp);
        // One A tile (32 depths, 16 pairs) at a time; tiles and the panels' 16 pair rows are
        // 512 elements apart along the depth.
        for step in 0..kcp / 32 {
            let (at, bl, br) = (
                a.add(step * 512),
                b.add(step * 512),
                b_right.add(step * 512),
            );
            for p in 0..16 {
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bl.add(32 * p).cast()));
                let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(br.add(32 * p).cast()));
                for (r, row) in acc.iter_mut().enumerate() {
                    let pair = at.add(32 * r + 2 * p).cast::<i32>().read_unaligned();
                    let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair));
                    row[0] = _mm512_dpbf16_ps(row[0], x, b0);
                    row[1] = _mm512_dpbf16_ps(row[1], x, b1);
                }
            }
        }
        let Some(o) = last else {
            for (r, row) in acc.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * c_rs), row[0]);
                _mm512_storeu_ps(c.add(r * c_rs + 16), row[1]);
            }
            return;
        };
        // Round to nearest even (`vcvtneps2bf16`), the columns past `cols` masked off.
        let mask = |from: usize| -> u16 {
            let n = o.cols.saturating_sub(from).min(16);
            ((1u32 << n) - 1) as u16
        };
        let (left, right) = (mask(0), mask(16));
        if !o.bias.is_null() {
            let (b0, b1) = (_mm512_loadu_ps(o.bias), _mm512_loadu_ps(o.bias.add(16)));
            for row in &mut acc {
                row[0] = _mm512_add_ps(row[0], b0);
                row[1] = _mm512_add_ps(row[1], b1);
            }
        }
        for (r, row) in acc.iter().enumerate().take(o.rows.min(8)) {
            let dst = o.ptr.add(r * o.rs);
            for (half, m, v) in [(0, left, row[0]), (16, right, row[1])] {
                // A half with no columns is skipped: its address may lie past the output.
                if m != 0 {
                    let h: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(v));
                    _mm256_mask_storeu_epi16(dst.add(half).cast(), m, h);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Products of random sizes (edges of every tile and block: m, n around 16/32/64, k
    /// around 32 and past KC), strides (row-major and transposed) and with or without a
    /// bias, against an f64 sum of
    /// the same bf16 values, on every engine this CPU has; skipped where it has neither.
    #[test]
    fn bf16_gemm_matches_f64_reference_on_every_engine_here() {
        let engines: Vec<Engine> = match engine() {
            // A CPU with AMX has AVX512-BF16 too.
            Some(Engine::Amx) => vec![Engine::Amx, Engine::DotProduct],
            Some(Engine::DotProduct) => vec![Engine::DotProduct],
            None => {
                eprintln!("skipped: no AMX-BF16 or AVX512-BF16 here");
                return;
            }
        };
        for e in engines {
            products_match_f64_reference(e);
        }
    }

    fn products_match_f64_reference(engine: Engine) {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        // Past every edge: tiles (16, 32), the 2x2 block (32), KC and NC (256), MC and the
        // size where A stops being packed whole (600 x 1100).
        let sizes = [
            (1, 1, 1),
            (16, 16, 32),
            (33, 17, 31),
            (70, 300, 1100),
            (5, 40, 513),
            (64, 64, 64),
            (600, 40, 1100),
            (300, 530, 70),
        ];
        for (i, &(m, n, k)) in sizes.iter().enumerate() {
            // Every element twice as far as needed, so that stride 2 fits too.
            let mut random = |len: usize| -> Vec<bf16> {
                (0..2 * len)
                    .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
                    .collect()
            };
            let (av, bv) = (random(m * k), random(k * n));
            // Row-major, transposed, and both strides 2 and over (the gather paths).
            let layout = |kind: usize, rows: usize, cols: usize| match kind % 3 {
                0 => (cols, 1),
                1 => (1, rows),
                _ => (2 * cols, 2),
            };
            let ((ars, acs), (brs, bcs)) = (layout(i, m, k), layout(i + 1, k, n));
            let a = MatRef {
                ptr: av.as_ptr(),
                rs: ars,
                cs: acs,
            };
            let b = MatRef {
                ptr: bv.as_ptr(),
                rs: brs,
                cs: bcs,
            };
            let out_rs = n + 3;
            let mut out = vec![bf16::from_f32(7.0); m * out_rs];
            // Every other product with a bias (large, so that dropping it cannot pass).
            let bias: Option<Vec<bf16>> = (i % 2 == 1).then(|| {
                (0..n)
                    .map(|_| bf16::from_f32(rng.random_range(-64.0..64.0)))
                    .collect()
            });
            // SAFETY: the CPU has `engine`; the operands have m*k and k*n elements at these
            // strides, out has m rows of out_rs >= n, and the bias n elements.
            unsafe {
                gemm(
                    engine,
                    m,
                    n,
                    k,
                    a,
                    b,
                    out.as_mut_ptr(),
                    out_rs,
                    bias.as_deref(),
                )
            };
            for r in 0..m {
                for c in 0..n {
                    // SAFETY: r < m, c < n, t < k.
                    let want: f64 = (0..k)
                        .map(|t| unsafe { a.at(r, t).to_f64() * b.at(t, c).to_f64() })
                        .sum::<f64>()
                        + bias.as_ref().map_or(0.0, |b| b[c].to_f64());
                    let got = out[r * out_rs + c].to_f64();
                    // f32 accumulation plus one bf16 rounding (2^-8 relative).
                    let tol = 1e-5 * k as f64 + want.abs() / 256.0;
                    assert!(
                        (got - want).abs() <= tol,
                        "{engine:?} {m}x{n}x{k} [{r},{c}]: {got} vs {want}"
                    );
                }
                assert_eq!(out[r * out_rs + n].to_f32(), 7.0, "wrote past column n");
            }
        }
    }
}
