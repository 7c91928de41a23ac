//! Batched matrix multiplication `(b, m, k) x (b, k, n) -> (b, m, n)` on the CPU.
//!
//! Float dtypes go through the `gemm` crate, which takes a row and a column stride per
//! operand, so transposed, sliced and batch-broadcast (batch stride 0) operands are multiplied
//! where they lie, without copies. `gemm` has kernels for f32, f64 and f16 (f16 accumulates in
//! f32 inside gemm) but none for bf16: bf16 products run on AMX tiles or AVX512-BF16 dot
//! products where the CPU has them (`bf16_gemm.rs`), else their operands are widened to f32,
//! multiplied, and rounded back once. Integer dtypes use the naive triple loop (`naive_matmul`), which is also
//! the reference that the tests compare the gemm path with.

use super::strided::map1;
use super::sync_ptr::SyncPtr;
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::{Element, Layout};
use crate::error::{Error, Result};
use gemm::Parallelism;
use half::bf16;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Multiply-adds per matrix above which one gemm call is spread over all threads.
const GEMM_PAR_FLOPS: usize = 1 << 18;
/// Total multiply-adds above which a batch of small matrices is spread over threads, one
/// matrix per task.
const BATCH_PAR_FLOPS: usize = 1 << 16;

/// Multiply-adds per matrix below which a parallel product is split into one block of the
/// output per thread, each computed by a single-threaded gemm, instead of gemm's own threading.
/// On two threads the split was as fast or faster for every product measured up to 2^29
/// multiply-adds (linear 64 x 512 -> 2048's input gradient: 2.0 -> 0.9 ms). The unit tests
/// use a lower bound so that a product of a size a naive reference can check takes gemm's
/// own threading too.
const GEMM_SPLIT_FLOPS: usize = if cfg!(test) { 1 << 24 } else { 1 << 30 };

/// Boundaries of `parts` near-equal shares of `0..len`, at multiples of 16 (a SIMD register
/// of f32) where `len` allows.
fn split_points(len: usize, parts: usize) -> Vec<usize> {
    let units = len.div_ceil(16);
    (0..=parts)
        .map(|p| (units * p / parts * 16).min(len))
        .collect()
}

/// `block(rows, cols)` in parallel on one share per thread of the longer of an `(m, n)`
/// output's dims (ranges as `(start, end)`).
fn split_output(d: Dims, threads: usize, block: impl Fn((usize, usize), (usize, usize)) + Sync) {
    let along_rows = d.m > d.n;
    let parts = split_points(if along_rows { d.m } else { d.n }, threads);
    // A dim shorter than 16 per thread leaves some shares empty.
    parts.par_windows(2).filter(|w| w[0] < w[1]).for_each(|w| {
        if along_rows {
            block((w[0], w[1]), (0, d.n))
        } else {
            block((0, d.m), (w[0], w[1]))
        }
    });
}

/// Problem sizes: `batch` products of `(m, k) x (k, n)`.
#[derive(Clone, Copy, Debug)]
struct Dims {
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
}

/// Where one operand's matrices sit in its buffer: offset and strides (batch, row, column).
#[derive(Clone, Copy, Debug)]
struct Mat {
    off: usize,
    bs: usize,
    rs: usize,
    cs: usize,
}

impl Mat {
    fn of(l: &Layout) -> Mat {
        let s = l.strides();
        Mat {
            off: l.offset(),
            bs: s[0],
            rs: s[1],
            cs: s[2],
        }
    }

    /// Storage index of element `[i, r, c]`.
    #[inline(always)]
    fn at(&self, i: usize, r: usize, c: usize) -> usize {
        self.off + i * self.bs + r * self.rs + c * self.cs
    }
}

/// `(b, m, k) x (b, k, n) -> (b, m, n)` (row-major output). Operands must have the same dtype.
pub fn matmul(a: &CpuStorage, al: &Layout, b: &CpuStorage, bl: &Layout) -> Result<CpuStorage> {
    let d = check(a, al, b, bl)?;
    let (ma, mb) = (Mat::of(al), Mat::of(bl));
    Ok(match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => {
            CpuStorage::F32(gemm_batched(x, ma, y, mb, d, None).into())
        }
        (CpuStorage::F64(x), CpuStorage::F64(y)) => {
            CpuStorage::F64(gemm_batched(x, ma, y, mb, d, None).into())
        }
        (CpuStorage::F16(x), CpuStorage::F16(y)) => {
            CpuStorage::F16(gemm_batched(x, ma, y, mb, d, None).into())
        }
        #[cfg(target_arch = "x86_64")]
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) if super::bf16_gemm::engine().is_some() => {
            CpuStorage::BF16(bf16_batched(x, ma, y, mb, d, None).into())
        }
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) => {
            CpuStorage::BF16(bf16_via_f32(x, al, y, bl, d).into())
        }
        (CpuStorage::I64(x), CpuStorage::I64(y)) => CpuStorage::I64(
            naive_matmul(x, ma, y, mb, d, |acc, p, q| {
                acc.wrapping_add(p.wrapping_mul(q))
            })
            .into(),
        ),
        (CpuStorage::U8(x), CpuStorage::U8(y)) => CpuStorage::U8(
            naive_matmul(x, ma, y, mb, d, |acc, p, q| {
                acc.wrapping_add(p.wrapping_mul(q))
            })
            .into(),
        ),
        (CpuStorage::I32(x), CpuStorage::I32(y)) => CpuStorage::I32(
            naive_matmul(x, ma, y, mb, d, |acc, p, q| {
                acc.wrapping_add(p.wrapping_mul(q))
            })
            .into(),
        ),
        _ => return Err(Error::unsupported_dtype("matmul", a.dtype())),
    })
}

/// `(b, m, k) x (b, k, n) + bias -> (b, m, n)`, with `bias` (`n` elements) added to every
/// row: gemm accumulates the product onto output blocks it first fills with the bias, so a
/// linear layer makes one pass over its output instead of a product and then an add; bf16
/// on the bf16 engine adds it to the f32 sums before their one rounding (as oneDNN's bf16
/// linear, and one rounding fewer than a product then an add). `None` for dtypes without a
/// kernel here (the op layer adds the bias itself).
pub fn matmul_bias(
    a: &CpuStorage,
    al: &Layout,
    b: &CpuStorage,
    bl: &Layout,
    bias: &CpuStorage,
    bias_offset: usize,
) -> Result<Option<CpuStorage>> {
    let d = check(a, al, b, bl)?;
    if bias.dtype() != a.dtype() || bias_offset + d.n > bias.len() {
        return Err(Error::invalid(
            "matmul_bias",
            format!(
                "the bias must be {} elements of {} from {bias_offset}, got a {} buffer of {}",
                d.n,
                a.dtype(),
                bias.dtype(),
                bias.len()
            ),
        ));
    }
    let (ma, mb) = (Mat::of(al), Mat::of(bl));
    let row = bias_offset..bias_offset + d.n;
    Ok(Some(match (a, b, bias) {
        (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(c)) => {
            CpuStorage::F32(gemm_batched(x, ma, y, mb, d, Some(&c[row.clone()])).into())
        }
        (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(c)) => {
            CpuStorage::F64(gemm_batched(x, ma, y, mb, d, Some(&c[row.clone()])).into())
        }
        (CpuStorage::F16(x), CpuStorage::F16(y), CpuStorage::F16(c)) => {
            CpuStorage::F16(gemm_batched(x, ma, y, mb, d, Some(&c[row.clone()])).into())
        }
        #[cfg(target_arch = "x86_64")]
        (CpuStorage::BF16(x), CpuStorage::BF16(y), CpuStorage::BF16(c))
            if super::bf16_gemm::engine().is_some() =>
        {
            CpuStorage::BF16(bf16_batched(x, ma, y, mb, d, Some(&c[row.clone()])).into())
        }
        _ => return Ok(None),
    }))
}

/// Validates ranks, sizes, dtypes and that every element of both layouts lies inside its
/// buffer (the gemm calls below read through raw pointers).
fn check(a: &CpuStorage, al: &Layout, b: &CpuStorage, bl: &Layout) -> Result<Dims> {
    if al.ndim() != 3 || bl.ndim() != 3 {
        return Err(Error::shape(
            "matmul",
            format!(
                "the kernel expects 3-D operands, got {:?} and {:?}",
                al.shape(),
                bl.shape()
            ),
        ));
    }
    let (sa, sb) = (al.shape(), bl.shape());
    if sa[0] != sb[0] || sa[2] != sb[1] {
        return Err(Error::shape(
            "matmul",
            format!("cannot multiply {sa:?} by {sb:?}"),
        ));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            "matmul",
            format!("operands have dtypes {} and {}", a.dtype(), b.dtype()),
        ));
    }
    if al.storage_extent() > a.len() || bl.storage_extent() > b.len() {
        return Err(Error::invalid(
            "matmul",
            "a layout reaches past the end of its buffer",
        ));
    }
    Ok(Dims {
        batch: sa[0],
        m: sa[1],
        k: sa[2],
        n: sb[2],
    })
}

/// The gemm path for the element types gemm supports (f32, f64, f16); with `bias` (`n`
/// elements) added to every output row.
fn gemm_batched<T: CpuElement>(
    a: &[T],
    ma: Mat,
    b: &[T],
    mb: Mat,
    d: Dims,
    bias: Option<&[T]>,
) -> Vec<T> {
    let len = d.batch * d.m * d.n;
    // k = 0 is a sum of nothing: zeros (or the bias alone).
    if len == 0 || d.k == 0 {
        let mut out = super::allocator::zeros::<T>(len);
        if let Some(bias) = bias.filter(|_| d.n > 0) {
            out.chunks_mut(d.n)
                .for_each(|row| row.copy_from_slice(bias));
        }
        return out;
    }
    // gemm with read_dst = false writes every output element without reading it, so the
    // buffer is not zero-filled first (that memset was ~5% of a convolution's time).
    let mut out = super::allocator::take::<T>(len);
    let dst_all = &mut out.spare_capacity_mut()[..len];
    let per_matrix = d.m * d.n * d.k;
    let threads = rayon::current_num_threads();
    // gemm computes a row-major product as C^T = B^T A^T and packs B^T (n, k) into panels
    // that serve only m rows of A. For a linear layer's weight (B = W^T, unit stride along
    // k) and a small batch (m < n) that copy of the whole weight dominated: linear 16 x 1024
    // -> 4096 spent half its time packing. Computed column-major instead, gemm packs only A
    // (m, k) and reads B in place; the (m, n) result is then transposed into place. That
    // transpose touches m * n elements where the packing touched k * n, so it pays only for
    // m < k: linear 512 x 256 -> 1024 spent 7% of its time transposing.
    let column_major = d.m < d.n && d.m < d.k && mb.rs == 1 && mb.cs != 1;
    let one = |dst: &mut [MaybeUninit<T>], i: usize, threads: usize| {
        let mut scratch = column_major.then(|| super::allocator::take::<T>(d.m * d.n));
        let (ptr, dst_cs, dst_rs) = match &mut scratch {
            Some(t) => (t.spare_capacity_mut().as_mut_ptr(), d.m, 1),
            None => (dst.as_mut_ptr(), 1, d.n),
        };
        let out = SyncPtr(ptr.cast::<T>());
        // Rows r0..r1, columns c0..c1 of product `i`.
        let gemm_block = |(r0, r1): (usize, usize), (c0, c1): (usize, usize), par: Parallelism| {
            if let Some(bias) = bias {
                // SAFETY: as for gemm's writes below: the block lies inside the destination
                // and no other block that runs at once overlaps it.
                unsafe { fill_rows(out, (r0, r1), (c0, c1), dst_rs, dst_cs, bias) };
            }
            // SAFETY: `check` proved that every element [i, r, c] of both layouts is inside
            // its slice, so the block's first elements are in bounds and gemm's reads at
            // start + r*rs + c*cs (r < rows, c < cols) stay in bounds; the destination is
            // one row-major (m, n) block of `out` or an (m, n) column-major scratch buffer,
            // and the blocks that run at once are disjoint. With read_dst false gemm
            // computes dst = 1 * lhs * rhs; with read_dst true (the block holds the bias)
            // dst = 1 * dst + 1 * lhs * rhs.
            unsafe {
                gemm::gemm(
                    r1 - r0,
                    c1 - c0,
                    d.k,
                    out.add(r0 * dst_rs + c0 * dst_cs),
                    dst_cs as isize,
                    dst_rs as isize,
                    bias.is_some(),
                    a.as_ptr().add(ma.at(i, r0, 0)),
                    ma.cs as isize,
                    ma.rs as isize,
                    b.as_ptr().add(mb.at(i, 0, c0)),
                    mb.cs as isize,
                    mb.rs as isize,
                    if bias.is_some() {
                        T::from_f64(1.0)
                    } else {
                        T::zero()
                    },
                    T::from_f64(1.0),
                    false,
                    false,
                    false,
                    par,
                )
            }
        };
        let (all_rows, all_cols) = ((0, d.m), (0, d.n));
        if threads == 1 {
            gemm_block(all_rows, all_cols, Parallelism::None);
        } else if per_matrix < GEMM_SPLIT_FLOPS {
            // Medium products: one single-threaded gemm per thread on its own share of the
            // larger output dim. gemm's own threading synchronises its threads twice per
            // depth slab (pack, then compute), which on a (64, 784) x (784, 128) product
            // cost all of the second thread's gain.
            split_output(d, threads, |rows, cols| {
                gemm_block(rows, cols, Parallelism::None)
            });
        } else {
            gemm_block(all_rows, all_cols, Parallelism::Rayon(threads));
        }
        if let Some(mut t) = scratch {
            // SAFETY: gemm wrote all m * n elements.
            unsafe { t.set_len(d.m * d.n) };
            transpose_into(&t, d.m, d.n, dst, threads);
            super::allocator::recycle(T::into_storage(t));
        }
    };
    let block = d.m * d.n;
    if per_matrix >= GEMM_PAR_FLOPS && threads > 1 {
        // Large matrices: each product is split over the threads (by `one`).
        for (i, dst) in dst_all.chunks_mut(block).enumerate() {
            one(dst, i, threads);
        }
    } else if d.batch > 1 && per_matrix * d.batch >= BATCH_PAR_FLOPS && threads > 1 {
        // Many small matrices: one matrix per task.
        dst_all
            .par_chunks_mut(block)
            .enumerate()
            .for_each(|(i, dst)| one(dst, i, 1));
    } else {
        for (i, dst) in dst_all.chunks_mut(block).enumerate() {
            one(dst, i, 1);
        }
    }
    // SAFETY: the loops above ran gemm on every (m, n) block of the first `len` elements,
    // and gemm (read_dst = false) wrote each element of its block.
    unsafe { out.set_len(len) };
    out
}

/// Writes `bias[c]` to every element `(r, c)` of the block `rows x cols` of the matrix at
/// `out` (element `(r, c)` at `r * rs + c * cs`).
///
/// # Safety
/// Every element of the block lies inside the allocation `out` points into, and nothing
/// else reads or writes the block meanwhile.
unsafe fn fill_rows<T: Copy>(
    out: SyncPtr<T>,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    rs: usize,
    cs: usize,
    bias: &[T],
) {
    for r in r0..r1 {
        if cs == 1 {
            let row = std::slice::from_raw_parts_mut(out.add(r * rs + c0), c1 - c0);
            row.copy_from_slice(&bias[c0..c1]);
        } else {
            for (c, &v) in bias.iter().enumerate().take(c1).skip(c0) {
                *out.add(r * rs + c * cs) = v;
            }
        }
    }
}

/// Rows of the output per transpose task, and the side of the square blocks it walks.
const TRANSPOSE_ROWS: usize = 32;

/// `dst` (row-major `(m, n)`) = the transpose of `src` (row-major `(n, m)`), in square blocks
/// so that the strided side reads whole cache lines before they leave L1 (element by element,
/// a (512, 1024) product's transpose was 13% of its time), on `threads` threads.
fn transpose_into<T: Copy + Send + Sync>(
    src: &[T],
    m: usize,
    n: usize,
    dst: &mut [MaybeUninit<T>],
    threads: usize,
) {
    const B: usize = TRANSPOSE_ROWS;
    let rows = |r0: usize, block: &mut [MaybeUninit<T>]| {
        let r1 = r0 + block.len() / n;
        for c0 in (0..n).step_by(B) {
            let c1 = (c0 + B).min(n);
            for r in r0..r1 {
                let row = &mut block[(r - r0) * n..(r - r0 + 1) * n];
                for c in c0..c1 {
                    row[c].write(src[c * m + r]);
                }
            }
        }
    };
    let dst = &mut dst[..m * n];
    if threads > 1 && m * n >= 2 * B * B {
        dst.par_chunks_mut(B * n)
            .enumerate()
            .for_each(|(i, block)| rows(i * B, block));
    } else {
        rows(0, dst);
    }
}

/// bf16 products on the CPU's bf16 engine (`bf16_gemm::gemm`, single-threaded), spread over the threads as
/// [`gemm_batched`] spreads gemm: a large product in one share of its longer output dim per
/// thread, a batch of small ones one matrix per task.
#[cfg(target_arch = "x86_64")]
fn bf16_batched(
    a: &[bf16],
    ma: Mat,
    b: &[bf16],
    mb: Mat,
    d: Dims,
    bias: Option<&[bf16]>,
) -> Vec<bf16> {
    use super::bf16_gemm::{self, MatRef};
    let engine = bf16_gemm::engine().expect("matmul checked the bf16 engine");
    let len = d.batch * d.m * d.n;
    let mut out = super::allocator::take::<bf16>(len);
    let dst = SyncPtr(out.spare_capacity_mut().as_mut_ptr().cast::<bf16>());
    // Rows r0..r1, columns c0..c1 of product `i`.
    let block = |i: usize, (r0, r1): (usize, usize), (c0, c1): (usize, usize)| {
        // SAFETY: `engine` is the CPU's; `check` proved that every
        // element [i, r, c] of both layouts is inside its slice; the destination block lies
        // in the `len` elements of `out`, and blocks that run at once are disjoint.
        unsafe {
            bf16_gemm::gemm(
                engine,
                r1 - r0,
                c1 - c0,
                d.k,
                MatRef {
                    ptr: a.as_ptr().add(ma.at(i, r0, 0)),
                    rs: ma.rs,
                    cs: ma.cs,
                },
                MatRef {
                    ptr: b.as_ptr().add(mb.at(i, 0, c0)),
                    rs: mb.rs,
                    cs: mb.cs,
                },
                dst.add(i * d.m * d.n + r0 * d.n + c0),
                d.n,
                bias.map(|b| &b[c0..c1]),
            )
        }
    };
    let threads = rayon::current_num_threads();
    let per_matrix = d.m * d.n * d.k;
    let (all_rows, all_cols) = ((0, d.m), (0, d.n));
    if per_matrix >= GEMM_PAR_FLOPS && threads > 1 {
        for i in 0..d.batch {
            split_output(d, threads, |rows, cols| block(i, rows, cols));
        }
    } else if d.batch > 1 && per_matrix * d.batch >= BATCH_PAR_FLOPS && threads > 1 {
        (0..d.batch)
            .into_par_iter()
            .for_each(|i| block(i, all_rows, all_cols));
    } else {
        (0..d.batch).for_each(|i| block(i, all_rows, all_cols));
    }
    // SAFETY: every (m, n) block of the first `len` elements was written by bf16_gemm::gemm.
    unsafe { out.set_len(len) };
    out
}

/// bf16 without AMX has no gemm kernel: widen to f32 (one matrix only when the batch is broadcast),
/// multiply in f32, round back once per output element.
fn bf16_via_f32(a: &[bf16], al: &Layout, b: &[bf16], bl: &Layout, d: Dims) -> Vec<bf16> {
    let (a32, ma) = widen(a, al);
    let (b32, mb) = widen(b, bl);
    gemm_batched(&a32, ma, &b32, mb, d, None)
        .into_iter()
        .map(<bf16 as Element>::from_f32)
        .collect()
}

/// A contiguous f32 copy of a 3-D bf16 operand. A broadcast batch (stride 0) is copied once
/// and keeps stride 0.
fn widen(v: &[bf16], l: &Layout) -> (Vec<f32>, Mat) {
    let (shape, strides) = (l.shape(), l.strides());
    let (rows, cols) = (shape[1], shape[2]);
    let broadcast = strides[0] == 0 || shape[0] <= 1;
    let copied = if broadcast {
        Layout::from_parts(
            vec![shape[0].min(1), rows, cols],
            strides.to_vec(),
            l.offset(),
        )
    } else {
        l.clone()
    };
    let data = map1(v, &copied, |x| x.to_f32());
    let bs = if broadcast { 0 } else { rows * cols };
    (
        data,
        Mat {
            off: 0,
            bs,
            rs: cols,
            cs: 1,
        },
    )
}

/// The reference triple loop: `acc = mul_add(acc, a[i, r, t], b[i, t, c])` over `t`.
/// Used for integer dtypes (wrapping arithmetic, as PyTorch's integer matmul) and by the
/// tests as the oracle for the gemm path. Output rows are spread over threads when large.
fn naive_matmul<T: CpuElement>(
    a: &[T],
    ma: Mat,
    b: &[T],
    mb: Mat,
    d: Dims,
    mul_add: impl Fn(T, T, T) -> T + Sync,
) -> Vec<T> {
    let mut out = super::allocator::zeros::<T>(d.batch * d.m * d.n);
    if out.is_empty() {
        return out;
    }
    let row = |row_idx: usize, dst: &mut [T]| {
        let (i, r) = (row_idx / d.m, row_idx % d.m);
        for (c, o) in dst.iter_mut().enumerate() {
            let mut acc = T::zero();
            for t in 0..d.k {
                acc = mul_add(acc, a[ma.at(i, r, t)], b[mb.at(i, t, c)]);
            }
            *o = acc;
        }
    };
    if out.len() * d.k >= BATCH_PAR_FLOPS {
        out.par_chunks_mut(d.n)
            .enumerate()
            .for_each(|(ri, dst)| row(ri, dst));
    } else {
        out.chunks_mut(d.n)
            .enumerate()
            .for_each(|(ri, dst)| row(ri, dst));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A random operand of logical shape `(batch, rows, cols)`, stored either row-major,
    /// transposed, or as one matrix broadcast over the batch, with an offset.
    fn operand(rng: &mut ChaCha8Rng, batch: usize, rows: usize, cols: usize) -> (Vec<f64>, Layout) {
        let kind = rng.random_range(0..3);
        operand_of_kind(rng, kind, batch, rows, cols)
    }

    /// [`operand`] stored as `kind`: 0 row-major, 1 transposed, 2 broadcast over the batch.
    fn operand_of_kind(
        rng: &mut ChaCha8Rng,
        kind: usize,
        batch: usize,
        rows: usize,
        cols: usize,
    ) -> (Vec<f64>, Layout) {
        let off = rng.random_range(0..3);
        let (nb, bs, rs, cs) = match kind {
            0 => (batch, rows * cols, cols, 1),
            1 => (batch, rows * cols, 1, rows),
            _ => (1, 0, cols, 1),
        };
        let len = off + nb * rows * cols;
        let data = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        (
            data,
            Layout::from_parts(vec![batch, rows, cols], vec![bs, rs, cs], off),
        )
    }

    /// The gemm path with a random bias row equals `product` (the naive product of the
    /// operands) plus the bias on every row, in every blocking `d` takes.
    fn assert_bias_added(
        rng: &mut ChaCha8Rng,
        a: &[f64],
        al: &Layout,
        b: &[f64],
        bl: &Layout,
        d: Dims,
        product: &[f64],
    ) {
        let bias: Vec<f64> = (0..d.n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let fast = gemm_batched(a, Mat::of(al), b, Mat::of(bl), d, Some(&bias));
        for (i, (x, y)) in fast.iter().zip(product).enumerate() {
            let want = y + bias[i % d.n];
            assert!((x - want).abs() < 1e-11, "{d:?} with bias: {x} vs {want}");
        }
    }

    #[test]
    fn gemm_path_matches_naive_on_random_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..60 {
            let d = Dims {
                batch: rng.random_range(1..4),
                m: rng.random_range(1..40),
                k: rng.random_range(1..70),
                n: rng.random_range(1..40),
            };
            let (a, al) = operand(&mut rng, d.batch, d.m, d.k);
            let (b, bl) = operand(&mut rng, d.batch, d.k, d.n);
            let fast = gemm_batched(&a, Mat::of(&al), &b, Mat::of(&bl), d, None);
            let slow = naive_matmul(&a, Mat::of(&al), &b, Mat::of(&bl), d, |acc, p, q| {
                acc + p * q
            });
            for (x, y) in fast.iter().zip(&slow) {
                assert!((x - y).abs() < 1e-12, "{d:?}: {x} vs {y}");
            }
            assert_bias_added(&mut rng, &a, &al, &b, &bl, d, &slow);
            // f32 and bf16 through the public kernel, against the f64 oracle.
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
            let out = matmul(
                &CpuStorage::F32(a32.into()),
                &al,
                &CpuStorage::F32(b32.into()),
                &bl,
            )
            .unwrap()
            .to_f64_vec();
            let tol = 1e-5 * d.k as f64;
            assert!(
                out.iter().zip(&slow).all(|(x, y)| (x - y).abs() < tol),
                "f32 {d:?}"
            );
            let a16: Vec<bf16> = a.iter().map(|&x| bf16::from_f64(x)).collect();
            let b16: Vec<bf16> = b.iter().map(|&x| bf16::from_f64(x)).collect();
            let out = matmul(
                &CpuStorage::BF16(a16.into()),
                &al,
                &CpuStorage::BF16(b16.into()),
                &bl,
            )
            .unwrap()
            .to_f64_vec();
            let tol = 2e-2 * (d.k as f64).sqrt() + 1e-2;
            assert!(
                out.iter().zip(&slow).all(|(x, y)| (x - y).abs() < tol),
                "bf16 {d:?}"
            );
        }
    }

    #[test]
    fn a_recycled_buffer_full_of_nan_is_overwritten() {
        // The output is not zero-filled: a cached buffer of the same size must come back
        // with every element written by gemm.
        let (m, k, n) = (256, 3, 300);
        // Asked for once, the size is in demand, so the pool keeps the NaN buffer.
        let mut stale = crate::backend::cpu::allocator::take::<f32>(m * n);
        stale.resize(m * n, f32::NAN);
        crate::backend::cpu::allocator::recycle(CpuStorage::F32(stale.into()));
        let a = CpuStorage::F32(vec![1.0; m * k].into());
        let b = CpuStorage::F32(vec![2.0; k * n].into());
        let out = matmul(
            &a,
            &Layout::contiguous(&[1, m, k]),
            &b,
            &Layout::contiguous(&[1, k, n]),
        )
        .unwrap();
        assert!(out.to_f64_vec().iter().all(|&v| v == 6.0));
    }

    #[test]
    fn large_and_batched_parallel_paths_match_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for d in [
            Dims {
                batch: 2,
                m: 80,
                k: 70,
                n: 90,
            },
            Dims {
                batch: 64,
                m: 8,
                k: 9,
                n: 10,
            },
        ] {
            let (a, al) = operand(&mut rng, d.batch, d.m, d.k);
            let (b, bl) = operand(&mut rng, d.batch, d.k, d.n);
            let fast = gemm_batched(&a, Mat::of(&al), &b, Mat::of(&bl), d, None);
            let slow = naive_matmul(&a, Mat::of(&al), &b, Mat::of(&bl), d, |acc, p, q| {
                acc + p * q
            });
            assert!(fast.iter().zip(&slow).all(|(x, y)| (x - y).abs() < 1e-11));
        }
    }

    #[test]
    fn split_and_threaded_products_match_naive() {
        // Three threads, so that the output splits into uneven shares: along the rows
        // (m > n), along the columns, through the column-major scratch (B transposed, m < n),
        // with sizes that are not multiples of 16, a dim too short to give every thread a
        // share, and one product large enough for gemm's own threading.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        pool.install(|| {
            let sizes = [
                (200, 70, 37),
                (37, 70, 200),
                (61, 90, 130),
                (4, 20000, 8),
                (260, 260, 260),
            ];
            for (m, k, n) in sizes {
                let d = Dims { batch: 2, m, k, n };
                assert!(d.m * d.k * d.n >= GEMM_PAR_FLOPS);
                for (ka, kb) in [(0, 0), (1, 1), (0, 1), (2, 0)] {
                    let (a, al) = operand_of_kind(&mut rng, ka, d.batch, d.m, d.k);
                    let (b, bl) = operand_of_kind(&mut rng, kb, d.batch, d.k, d.n);
                    let fast = gemm_batched(&a, Mat::of(&al), &b, Mat::of(&bl), d, None);
                    let slow = naive_matmul(&a, Mat::of(&al), &b, Mat::of(&bl), d, |acc, p, q| {
                        acc + p * q
                    });
                    assert!(
                        fast.iter().zip(&slow).all(|(x, y)| (x - y).abs() < 1e-11),
                        "{d:?} kinds {ka} {kb}"
                    );
                    assert_bias_added(&mut rng, &a, &al, &b, &bl, d, &slow);
                }
            }
        });
        assert_eq!(split_points(37, 3), [0, 16, 32, 37]);
        assert_eq!(split_points(200, 2), [0, 96, 200]);
    }

    #[test]
    fn matmul_bias_adds_the_bias_in_every_dtype_with_a_kernel() {
        let (m, k, n) = (3, 2, 4);
        let a = CpuStorage::F32(vec![1.0; m * k].into());
        let b = CpuStorage::F32(vec![2.0; k * n].into());
        // The bias row sits at offset 1 of its buffer.
        let bias = CpuStorage::F32(vec![9.0, 0.5, -1.0, 2.0, 3.0].into());
        let (al, bl) = (
            Layout::contiguous(&[1, m, k]),
            Layout::contiguous(&[1, k, n]),
        );
        let out = matmul_bias(&a, &al, &b, &bl, &bias, 1).unwrap().unwrap();
        assert_eq!(out.to_f64_vec(), [4.5, 3.0, 6.0, 7.0].repeat(m));
        // k = 0: the bias alone.
        let e = CpuStorage::F32(vec![].into());
        let (el, fl) = (
            Layout::contiguous(&[1, m, 0]),
            Layout::contiguous(&[1, 0, n]),
        );
        let out = matmul_bias(&e, &el, &e, &fl, &bias, 1).unwrap().unwrap();
        assert_eq!(out.to_f64_vec(), [0.5, -1.0, 2.0, 3.0].repeat(m));
        // A short or mistyped bias is an error.
        assert!(matmul_bias(&a, &al, &b, &bl, &bias, 2).is_err());
        let wide = CpuStorage::F64(vec![0.0; n].into());
        assert!(matmul_bias(&a, &al, &b, &bl, &wide, 0).is_err());
        // bf16 adds its bias in the bf16 engine's f32 sums, and is declined without one.
        let h = |v: Vec<f32>| {
            CpuStorage::BF16(v.into_iter().map(bf16::from_f32).collect::<Vec<_>>().into())
        };
        let half = matmul_bias(
            &h(vec![1.0; m * k]),
            &al,
            &h(vec![2.0; k * n]),
            &bl,
            &h(vec![0.5, -1.0, 2.0, 3.0]),
            0,
        )
        .unwrap();
        #[cfg(target_arch = "x86_64")]
        let engine = super::super::bf16_gemm::engine().is_some();
        #[cfg(not(target_arch = "x86_64"))]
        let engine = false;
        match half {
            Some(out) => {
                assert!(engine);
                assert_eq!(out.to_f64_vec(), [4.5, 3.0, 6.0, 7.0].repeat(m));
            }
            None => assert!(!engine),
        }
    }

    #[test]
    fn empty_inner_dim_gives_zeros_and_bad_layout_errors() {
        let a = CpuStorage::F32(vec![].into());
        let out = matmul(
            &a,
            &Layout::contiguous(&[1, 2, 0]),
            &a,
            &Layout::contiguous(&[1, 0, 3]),
        )
        .unwrap();
        assert_eq!(out, CpuStorage::F32(vec![0.0; 6].into()));
        let short = CpuStorage::F32(vec![1.0; 3].into());
        assert!(matmul(
            &short,
            &Layout::contiguous(&[1, 2, 2]),
            &short,
            &Layout::contiguous(&[1, 2, 2])
        )
        .is_err());
    }
}
