//! The int8 matrix product of quantized Linear layers: `C[m, n] = Σ_k A[m, k] · B[k, n]` with
//! `A` u8 (activations, affine), `B` i8 (weights, symmetric) and exact i32 sums.
//!
//! The weights are packed once (`PackedWeight`) in the layout of AVX-512 VNNI's `vpdpbusd`,
//! which multiplies four u8 by four i8 and adds them into each of 16 i32 lanes: panels of 64
//! output columns, and in each panel, for every four consecutive k, the 64 columns' four
//! bytes side by side (one 256-byte run, four zmm registers). `K` is padded to a multiple of
//! 4 and `N` to a multiple of 64 with zero weights, which add nothing. The VNNI kernel keeps a
//! 4 x 64 block of `C` in 16 registers; the portable kernel computes the same sums with
//! scalar arithmetic from the same packing, and the two are tested against each other.

use rayon::prelude::*;

/// Output columns per panel: four zmm registers of 16 i32 lanes.
const PANEL: usize = 64;

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
            let (panel, col) = (j / PANEL, j % PANEL);
            let base = panel * k4 * PANEL;
            for kk in 0..k {
                data[base + (kk / 4) * PANEL * 4 + col * 4 + kk % 4] = weight[j * k + kk];
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

    fn panel(&self, p: usize) -> &[i8] {
        &self.data[p * self.k4 * PANEL..(p + 1) * self.k4 * PANEL]
    }
}

/// Whether this CPU runs the VNNI kernel.
pub fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `C = A · B` in i32: `a` is `m` rows of `b.k` u8 (row stride `lda >= b.k4`, the padding
/// bytes present and read), `c` is `m x b.n` row-major. Panels of columns are split over the
/// compute threads. `portable` forces the scalar kernel.
pub fn gemm_u8i8(a: &[u8], lda: usize, m: usize, b: &PackedWeight, c: &mut [i32], portable: bool) {
    assert!(lda >= b.k4 && (m == 0 || a.len() >= (m - 1) * lda + b.k4));
    assert_eq!(c.len(), m * b.n);
    let panels = b.n.div_ceil(PANEL);
    let vnni = !portable && has_vnni();
    let out = SharedOut(c.as_mut_ptr());
    (0..panels).into_par_iter().for_each(|p| {
        let out = &out;
        let cols = (b.n - p * PANEL).min(PANEL);
        let panel = b.panel(p);
        // A panel's columns of C: rows of `cols` i32 at stride `b.n`, from column p * PANEL.
        // SAFETY: every task writes only its own panel's columns, so no two alias.
        let c_panel = unsafe { out.0.add(p * PANEL) };
        #[cfg(target_arch = "x86_64")]
        if vnni {
            // SAFETY: the CPU has AVX-512 F/BW/VNNI (checked above); `a` holds `m` rows of
            // at least `k4` bytes at stride `lda`, `panel` `k4 * PANEL` bytes, and C's rows
            // have `cols` columns from `c_panel` at stride `b.n`.
            unsafe { vnni::panel(a, lda, m, b.k4, panel, c_panel, b.n, cols) };
            return;
        }
        let _ = vnni;
        for i in 0..m {
            let mut row = [0i32; PANEL];
            portable_row(&a[i * lda..i * lda + b.k4], panel, &mut row);
            // SAFETY: as above: row i of this panel's columns.
            unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), c_panel.add(i * b.n), cols) };
        }
    });
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
    /// `cols` columns at `c` (row stride `ldc`).
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
            // SAFETY: forwarded; rows i.. exist.
            unsafe {
                let c_rows = c.add(i * ldc);
                if i + MR <= m {
                    rows::<MR>(a_rows, lda, k4, panel.as_ptr(), c_rows, ldc, cols);
                    i += MR;
                } else {
                    rows::<1>(a_rows, lda, k4, panel.as_ptr(), c_rows, ldc, cols);
                    i += 1;
                }
            }
        }
    }

    /// `R` rows of the panel: for every 4 k, broadcast each row's four bytes and multiply
    /// them into the 64 columns' four weights (`vpdpbusd`); then store the first `cols` sums.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn rows<const R: usize>(
        a: *const u8,
        lda: usize,
        k4: usize,
        w: *const i8,
        c: *mut i32,
        ldc: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        for s in 0..k4 / 4 {
            // SAFETY: run `s` of the panel is PANEL * 4 bytes at offset s * PANEL * 4.
            let run = unsafe { w.add(s * PANEL * 4) };
            let wv = [0, 1, 2, 3].map(|v| unsafe { _mm512_loadu_si512(run.add(64 * v).cast()) });
            for (r, acc_r) in acc.iter_mut().enumerate() {
                // SAFETY: row r has k4 bytes; bytes 4s..4s+4 are inside.
                let x = unsafe { (a.add(r * lda + 4 * s) as *const i32).read_unaligned() };
                let xv = _mm512_set1_epi32(x);
                for v in 0..4 {
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

    /// Every shape class (K not a multiple of 4, N not of 64, M not of 4, one row) against a
    /// plain triple loop; both kernels.
    #[test]
    fn both_kernels_equal_the_plain_sums() {
        for (m, k, n) in [
            (5, 7, 3),
            (4, 64, 64),
            (9, 130, 200),
            (1, 33, 65),
            (0, 8, 8),
        ] {
            let w: Vec<i8> = lcg(n * k, 1).into_iter().map(|b| b as i8).collect();
            let k4 = k.next_multiple_of(4);
            let mut a = lcg(m * k4, 2);
            for i in 0..m {
                a[i * k4 + k..(i + 1) * k4].fill(0); // padding
            }
            let packed = PackedWeight::pack(&w, n, k);
            let mut want = vec![0i32; m * n];
            for i in 0..m {
                for j in 0..n {
                    want[i * n + j] = (0..k)
                        .map(|kk| a[i * k4 + kk] as i32 * w[j * k + kk] as i32)
                        .sum();
                }
            }
            for portable in [true, false] {
                let mut c = vec![0i32; m * n];
                gemm_u8i8(&a, k4, m, &packed, &mut c, portable);
                assert_eq!(c, want, "m {m} k {k} n {n} portable {portable}");
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
