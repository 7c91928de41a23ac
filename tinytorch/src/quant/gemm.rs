//! The int8 matrix product of quantized layers: `C[m, n] = Σ_k A[m, k] · B[k, n]` with `A`
//! u8 (activations, affine), `B` i8 (weights, symmetric) and exact i32 sums.
//!
//! The weights are packed once (`PackedWeight`) in the layout of AVX-512 VNNI's `vpdpbusd`,
//! which multiplies four u8 by four i8 and adds them into each of 16 i32 lanes: panels of 64
//! output columns, and in each panel, for every four consecutive k, the 64 columns' four
//! bytes side by side (one 256-byte run, four zmm registers). `K` is padded to a multiple of
//! 4 and `N` to a multiple of 64 with zero weights, which add nothing.
//!
//! Three kernels read that packing (`Kernel`): VNNI keeps a 6 x 64 block of `C` in 24 zmm
//! registers; AVX2 widens the bytes to i16 and multiplies pairs with `vpmaddwd` (exact:
//! AVX2's byte multiply `vpmaddubsw` saturates at 16 bits, which is why fbgemm halves the
//! activations' range on such CPUs); the portable kernel computes the same sums with scalar
//! arithmetic. All three are tested against each other and against a plain loop.

use rayon::prelude::*;

/// Output columns per panel: four zmm registers of 16 i32 lanes.
const PANEL: usize = 64;

/// Where weight `(column j, row kk)` lies in the packing: panel `j / PANEL`, run `kk / 4`,
/// the column's four bytes, byte `kk % 4`.
fn packed_at(k4: usize, j: usize, kk: usize) -> usize {
    (j / PANEL) * k4 * PANEL + (kk / 4) * PANEL * 4 + (j % PANEL) * 4 + kk % 4
}

/// Int8 weights `B` (`K x N`, given as the `N x K` rows of a Linear layer's weight) packed for
/// the kernels, with each column's sum (for the activations' zero point).
#[derive(Clone, Debug, PartialEq)]
pub struct PackedWeight {
    /// Rows of `B` (the layer's input features).
    pub k: usize,
    /// Columns of `B` (the layer's output features).
    pub n: usize,
    /// `k` rounded up to a multiple of 4.
    k4: usize,
    /// Panels of `PANEL` columns, each `k4 / 4` runs of `PANEL * 4` bytes.
    data: Vec<i8>,
    /// `Σ_k B[k, n]` for every column.
    pub col_sums: Vec<i32>,
}

impl PackedWeight {
    /// Pack `weight`, the `n x k` int8 rows of a Linear layer (row `j` holds output `j`'s
    /// weights).
    pub fn pack(weight: &[i8], n: usize, k: usize) -> PackedWeight {
        assert_eq!(weight.len(), n * k, "an n x k weight");
        let k4 = k.next_multiple_of(4);
        let panels = n.div_ceil(PANEL);
        let mut data = vec![0i8; panels * k4 * PANEL];
        for j in 0..n {
            for kk in 0..k {
                data[packed_at(k4, j, kk)] = weight[j * k + kk];
            }
        }
        let col_sums = (0..n)
            .map(|j| weight[j * k..(j + 1) * k].iter().map(|&w| w as i32).sum())
            .collect();
        PackedWeight {
            k,
            n,
            k4,
            data,
            col_sums,
        }
    }

    /// Bytes of the packed weights and column sums.
    pub fn bytes(&self) -> usize {
        self.data.len() + 4 * self.col_sums.len()
    }

    /// The weights back as `n x k` rows (the inverse of `pack`).
    pub fn unpack(&self) -> Vec<i8> {
        let mut weight = vec![0i8; self.n * self.k];
        for j in 0..self.n {
            for kk in 0..self.k {
                weight[j * self.k + kk] = self.data[packed_at(self.k4, j, kk)];
            }
        }
        weight
    }

    fn panel(&self, p: usize) -> &[i8] {
        &self.data[p * self.k4 * PANEL..(p + 1) * self.k4 * PANEL]
    }
}

/// Which kernel runs the product.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kernel {
    /// The fastest this CPU has.
    #[default]
    Auto,
    /// AVX-512 VNNI (`vpdpbusd`).
    Vnni,
    /// AVX2 (`vpmaddwd` on bytes widened to i16).
    Avx2,
    /// Scalar arithmetic, on any CPU.
    Portable,
}

impl Kernel {
    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Kernel::Auto | Kernel::Portable => true,
                Kernel::Avx2 => is_x86_feature_detected!("avx2"),
                Kernel::Vnni => {
                    is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                        && is_x86_feature_detected!("avx512vnni")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            matches!(self, Kernel::Auto | Kernel::Portable)
        }
    }

    /// The kernels this CPU can run, fastest first (`Auto` excluded).
    pub fn available() -> Vec<Kernel> {
        [Kernel::Vnni, Kernel::Avx2, Kernel::Portable]
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    /// The kernel that will run: `Auto` becomes the fastest available, and a kernel this
    /// CPU lacks becomes the portable one.
    pub fn resolve(self) -> Kernel {
        match self {
            Kernel::Auto => Kernel::available()[0],
            k if k.is_available() => k,
            _ => Kernel::Portable,
        }
    }
}

/// `C = A · B` in i32: `a` is `m` rows of `b.k` u8 (row stride `lda >= b.k4`, the padding
/// bytes present and read), `c` is `m x b.n` row-major. Panels of columns are split over the
/// compute threads.
pub fn gemm_u8i8(a: &[u8], lda: usize, m: usize, b: &PackedWeight, c: &mut [i32], kernel: Kernel) {
    check_operands(a, lda, m, b, c);
    let kernel = kernel.resolve();
    let out = SharedOut(c.as_mut_ptr());
    (0..b.n.div_ceil(PANEL)).into_par_iter().for_each(|p| {
        let out = &out; // the whole wrapper, which is Sync, not its pointer field
                        // SAFETY: every task writes only its own panel's columns, so no two alias.
        unsafe { panel_product(a, lda, m, b, p, out.0, kernel) }
    });
}

/// [`gemm_u8i8`] on the calling thread only: for callers that split the rows of a larger
/// product over the threads themselves (a convolution's blocks of output positions).
pub fn gemm_u8i8_serial(
    a: &[u8],
    lda: usize,
    m: usize,
    b: &PackedWeight,
    c: &mut [i32],
    kernel: Kernel,
) {
    check_operands(a, lda, m, b, c);
    let kernel = kernel.resolve();
    for p in 0..b.n.div_ceil(PANEL) {
        // SAFETY: `c` is exclusively borrowed and has m x b.n elements.
        unsafe { panel_product(a, lda, m, b, p, c.as_mut_ptr(), kernel) }
    }
}

fn check_operands(a: &[u8], lda: usize, m: usize, b: &PackedWeight, c: &[i32]) {
    assert!(lda >= b.k4 && (m == 0 || a.len() >= (m - 1) * lda + b.k4));
    assert_eq!(c.len(), m * b.n);
}

/// Panel `p`'s columns of `C = A · B`, written into `c` (`m x b.n`, row-major).
///
/// # Safety
/// `c` points to `m * b.n` writable i32 that nothing else writes in those columns meanwhile;
/// `kernel` is resolved (the CPU has its features); `a` as [`gemm_u8i8`] checks.
unsafe fn panel_product(
    a: &[u8],
    lda: usize,
    m: usize,
    b: &PackedWeight,
    p: usize,
    c: *mut i32,
    kernel: Kernel,
) {
    let cols = (b.n - p * PANEL).min(PANEL);
    let panel = b.panel(p);
    // The panel's columns of C: rows of `cols` i32 at stride `b.n`, from column p * PANEL.
    // SAFETY: inside C (the caller's promise).
    let c_panel = unsafe { c.add(p * PANEL) };
    // SAFETY (both SIMD kernels): the CPU has the kernel's features; `a` holds `m` rows of
    // at least `k4` bytes at stride `lda`, `panel` `k4 * PANEL` bytes, and C's rows have
    // `cols` columns from `c_panel` at stride `b.n`.
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Vnni => {
            unsafe { vnni::panel(a, lda, m, b.k4, panel, c_panel, b.n, cols) };
            return;
        }
        Kernel::Avx2 => {
            unsafe { avx2::panel(a, lda, m, b.k4, panel, c_panel, b.n, cols) };
            return;
        }
        Kernel::Auto | Kernel::Portable => {}
    }
    for i in 0..m {
        let mut row = [0i32; PANEL];
        portable_row(&a[i * lda..i * lda + b.k4], panel, &mut row);
        // SAFETY: as above: row i of this panel's columns.
        unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), c_panel.add(i * b.n), cols) };
    }
}

/// C's base pointer, shared by the panel tasks (each writes disjoint columns).
struct SharedOut(*mut i32);
// SAFETY: the tasks write disjoint columns of C (see `gemm_u8i8`), and C outlives them.
unsafe impl Sync for SharedOut {}

/// One row of A times one panel, with scalar arithmetic: the reference the VNNI kernel is
/// tested against.
fn portable_row(row: &[u8], panel: &[i8], out: &mut [i32; PANEL]) {
    for (s, run) in panel.chunks_exact(PANEL * 4).enumerate() {
        let x = &row[4 * s..4 * s + 4];
        for (col, w) in run.chunks_exact(4).enumerate() {
            out[col] += x[0] as i32 * w[0] as i32
                + x[1] as i32 * w[1] as i32
                + x[2] as i32 * w[2] as i32
                + x[3] as i32 * w[3] as i32;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// Rows at a time: 6 rows x 4 registers = 24 accumulators, with the 4 weight registers and
    /// the broadcast 29 of the 32 zmm registers.
    const MR: usize = 6;

    /// One panel: blocks of `MR` rows, then the rows left one at a time, each written to C's
    /// `cols` columns at `c` (row stride `ldc`). Only the zmm registers that hold columns
    /// are computed (a panel of 6 columns costs one, not four).
    ///
    /// # Safety
    /// AVX-512 F/BW/VNNI present; `a` holds `m` rows of `k4` bytes at stride `lda`; `panel`
    /// holds `k4 * PANEL` bytes; `c` has `m` rows of `cols <= PANEL` writable i32 at stride
    /// `ldc`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn panel(
        a: &[u8],
        lda: usize,
        m: usize,
        k4: usize,
        panel: &[i8],
        c: *mut i32,
        ldc: usize,
        cols: usize,
    ) {
        let mut i = 0;
        while i < m {
            let a_rows = a[i * lda..].as_ptr();
            let block = if i + MR <= m { MR } else { 1 };
            // SAFETY: forwarded; rows i..i + block exist.
            unsafe {
                let c_rows = c.add(i * ldc);
                let w = panel.as_ptr();
                match (block, cols.div_ceil(16)) {
                    (MR, 1) => rows::<MR, 1>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (MR, 2) => rows::<MR, 2>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (MR, 3) => rows::<MR, 3>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (MR, _) => rows::<MR, 4>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (_, 1) => rows::<1, 1>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (_, 2) => rows::<1, 2>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    (_, 3) => rows::<1, 3>(a_rows, lda, k4, w, c_rows, ldc, cols),
                    _ => rows::<1, 4>(a_rows, lda, k4, w, c_rows, ldc, cols),
                }
            }
            i += block;
        }
    }

    /// `R` rows of the panel's first `16 V` columns: for every 4 k, broadcast each row's four
    /// bytes and multiply them into the columns' four weights (`vpdpbusd`); then store the
    /// first `cols` sums.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn rows<const R: usize, const V: usize>(
        a: *const u8,
        lda: usize,
        k4: usize,
        w: *const i8,
        c: *mut i32,
        ldc: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm512_setzero_si512(); V]; R];
        for s in 0..k4 / 4 {
            // SAFETY: run `s` of the panel is PANEL * 4 bytes at offset s * PANEL * 4.
            let run = unsafe { w.add(s * PANEL * 4) };
            let wv: [__m512i; V] =
                std::array::from_fn(|v| unsafe { _mm512_loadu_si512(run.add(64 * v).cast()) });
            for (r, acc_r) in acc.iter_mut().enumerate() {
                // SAFETY: row r has k4 bytes; bytes 4s..4s+4 are inside.
                let x = unsafe { (a.add(r * lda + 4 * s) as *const i32).read_unaligned() };
                let xv = _mm512_set1_epi32(x);
                for v in 0..V {
                    acc_r[v] = _mm512_dpbusd_epi32(acc_r[v], xv, wv[v]);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (v, vec) in acc_r.iter().enumerate() {
                let left = cols.saturating_sub(16 * v).min(16);
                if left == 0 {
                    break;
                }
                let mask: __mmask16 = if left == 16 {
                    0xffff
                } else {
                    (1u16 << left) - 1
                };
                // SAFETY: row r of C has `cols` writable i32 from `c + r * ldc`; the mask
                // writes only the first `left` of these 16.
                unsafe { _mm512_mask_storeu_epi32(c.add(r * ldc + 16 * v), mask, *vec) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// Columns a block covers: 16 columns' 4 k-bytes are 64 bytes, two ymm loads widened to
    /// four ymm of i16 (4 columns x 4 k each).
    const NB: usize = 16;
    /// Rows at a time: 2 rows x 4 accumulators, with 4 weight and 2 broadcast registers, fit
    /// the 16 ymm registers.
    const MR: usize = 2;

    /// One panel, in blocks of `NB` columns and `MR` rows (see `super::vnni::panel` for the
    /// arguments).
    ///
    /// # Safety
    /// AVX2 present; the rest as `super::vnni::panel`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn panel(
        a: &[u8],
        lda: usize,
        m: usize,
        k4: usize,
        panel: &[i8],
        c: *mut i32,
        ldc: usize,
        cols: usize,
    ) {
        for block in 0..cols.div_ceil(NB) {
            let cols_here = (cols - block * NB).min(NB);
            let mut i = 0;
            while i < m {
                let a_rows = a[i * lda..].as_ptr();
                // SAFETY: forwarded; rows i.. exist and the block's columns are inside.
                unsafe {
                    let w = panel.as_ptr().add(block * NB * 4);
                    let c_rows = c.add(i * ldc + block * NB);
                    if i + MR <= m {
                        rows::<MR>(a_rows, lda, k4, w, c_rows, ldc, cols_here);
                        i += MR;
                    } else {
                        rows::<1>(a_rows, lda, k4, w, c_rows, ldc, cols_here);
                        i += 1;
                    }
                }
            }
        }
    }

    /// `R` rows times 16 columns. Each accumulator lane holds a pair sum for one column
    /// (`x0 w0 + x1 w1` or `x2 w2 + x3 w3`); the pairs are added at the end.
    #[target_feature(enable = "avx2")]
    unsafe fn rows<const R: usize>(
        a: *const u8,
        lda: usize,
        k4: usize,
        w: *const i8,
        c: *mut i32,
        ldc: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm256_setzero_si256(); 4]; R];
        for s in 0..k4 / 4 {
            // SAFETY: the block's 64 bytes of run `s` (PANEL * 4 bytes each) are inside.
            let run = unsafe { w.add(s * PANEL * 4) };
            let (lo, hi) = unsafe {
                (
                    _mm256_loadu_si256(run.cast()),
                    _mm256_loadu_si256(run.add(32).cast()),
                )
            };
            // Columns 0-3, 4-7, 8-11, 12-15: each 4 columns x 4 k as i16.
            let wv = [
                _mm256_cvtepi8_epi16(_mm256_castsi256_si128(lo)),
                _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(lo)),
                _mm256_cvtepi8_epi16(_mm256_castsi256_si128(hi)),
                _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(hi)),
            ];
            for (r, acc_r) in acc.iter_mut().enumerate() {
                // SAFETY: row r has k4 bytes; bytes 4s..4s+4 are inside.
                let x = unsafe { (a.add(r * lda + 4 * s) as *const i32).read_unaligned() };
                // The four bytes as four i16, repeated for the four columns.
                let xv = _mm256_cvtepu8_epi16(_mm_set1_epi32(x));
                for v in 0..4 {
                    acc_r[v] = _mm256_add_epi32(acc_r[v], _mm256_madd_epi16(xv, wv[v]));
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            // Column j of block v is lanes 2j + 2j+1 of `acc_r[v]`. `hadd` adds those pairs
            // within each 128-bit half, giving columns 0 1 4 5 | 2 3 6 7; the permute puts
            // the 64-bit pairs back in order.
            let mut row = [0i32; NB];
            for half in 0..2 {
                let pairs = _mm256_hadd_epi32(acc_r[2 * half], acc_r[2 * half + 1]);
                let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(pairs);
                // SAFETY: `row` holds 16 i32; this half writes 8 of them.
                unsafe { _mm256_storeu_si256(row.as_mut_ptr().add(8 * half).cast(), ordered) };
            }
            // SAFETY: row r of C has `cols` writable i32 from `c + r * ldc`.
            unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), c.add(r * ldc), cols) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 56) as u8
            })
            .collect()
    }

    /// Every shape class (K not a multiple of 4, N not of 64 or 16, panels of 1 to 4 vectors,
    /// M odd, one row), in parallel and on one thread, against
    /// a plain triple loop; every kernel this CPU has (the extreme bytes 255 x -128 included:
    /// they would saturate a 16-bit product sum).
    #[test]
    fn every_kernel_equals_the_plain_sums() {
        for (m, k, n) in [
            (5, 7, 3),
            (4, 64, 64),
            (9, 130, 200),
            (1, 33, 65),
            (0, 8, 8),
            (3, 12, 70),
            (7, 20, 30),
            (13, 9, 100),
        ] {
            let extreme = (m, k, n) == (3, 12, 70);
            let w: Vec<i8> = lcg(n * k, 1)
                .into_iter()
                .map(|b| if extreme { -128 } else { b as i8 })
                .collect();
            let k4 = k.next_multiple_of(4);
            let mut a = if extreme {
                vec![255; m * k4]
            } else {
                lcg(m * k4, 2)
            };
            for i in 0..m {
                a[i * k4 + k..(i + 1) * k4].fill(0); // padding
            }
            let packed = PackedWeight::pack(&w, n, k);
            assert_eq!(packed.unpack(), w);
            let mut want = vec![0i32; m * n];
            for i in 0..m {
                for j in 0..n {
                    want[i * n + j] = (0..k)
                        .map(|kk| a[i * k4 + kk] as i32 * w[j * k + kk] as i32)
                        .sum();
                }
            }
            for kernel in Kernel::available() {
                let mut c = vec![0i32; m * n];
                gemm_u8i8(&a, k4, m, &packed, &mut c, kernel);
                assert_eq!(c, want, "m {m} k {k} n {n} kernel {kernel:?}");
                let mut c = vec![0i32; m * n];
                gemm_u8i8_serial(&a, k4, m, &packed, &mut c, kernel);
                assert_eq!(c, want, "serial: m {m} k {k} n {n} kernel {kernel:?}");
            }
            for j in 0..n {
                assert_eq!(
                    packed.col_sums[j],
                    (0..k).map(|kk| w[j * k + kk] as i32).sum::<i32>()
                );
            }
        }
    }
}
