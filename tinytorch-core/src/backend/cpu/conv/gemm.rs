//! 2-D convolution of contiguous NCHW f32/f64 tensors (forward and both gradients) as
//! im2col + gemm, parallel over chunks of images.
//!
//! The batch is cut into chunks whose column matrix fits in a few megabytes, and each rayon
//! task runs one chunk from start to end: im2col into its own buffer, a single-threaded gemm
//! per group, then the scatter into its own slice of the output (or col2im, or a partial
//! weight gradient). Splitting every gemm over the threads instead costs a fork and join per
//! product and duplicates the operand packing; on two cores the chunk-parallel form is
//! measured at about 1.5x the gemm throughput (`gemm` crate, f32, the 5x5 48->96 layer of
//! seed-cnn: 83 GFLOP/s per core against 121 GFLOP/s for both cores on one product). Where
//! the chunks are fewer than the threads (a batch of one image), the work inside each chunk
//! is spread instead: im2col and col2im over rows and planes, the gemms over their output.
//!
//! Matrices per chunk of `nb` images (`L = OH*OW`, `K = Cg*kh*kw`, `Cog = Co/G` per group):
//! ```text
//! forward:      Y (Cog, nb*L)  = W_g (Cog, K) @ cols_g (K, nb*L)         -> (nb, Co, L)
//! grad input:   gcols_g (K, nb*L) = W_g^T (K, Cog) @ G_g (Cog, nb*L)     -> col2im
//! grad weight:  dW_g^T (K, Cog) += cols_g (K, nb*L) @ G_g^T (nb*L, Cog)
//! ```
//! The weight gradient is computed transposed because both of its operands have the
//! contracted `nb*L` dim contiguous, and gemm packs that product 3-8x faster with a
//! column-major result. Chunk boundaries depend only on the sizes (not on the number of
//! threads), and the per-chunk weight gradients are added in chunk order, so results do not
//! depend on the thread count.

use super::im2col::{col2im_into, im2col_into};
use crate::backend::cpu::float::KernelFloat;
use crate::backend::cpu::{allocator, CpuElement};
use crate::backend::ConvGeometry;
use crate::base::Layout;
use gemm::Parallelism;
use rayon::prelude::*;
use std::borrow::Cow;
use std::mem::MaybeUninit;

/// Bytes of one chunk's column matrix.
const CHUNK_BYTES: usize = 4 << 20;
/// A batch of at least this many images is cut into at least this many chunks, so that every
/// thread gets work.
const MIN_CHUNKS: usize = 8;

/// One convolution: the geometry of the whole batch, the output channels and the groups.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    pub geom: ConvGeometry,
    pub out_channels: usize,
    pub groups: usize,
}

impl Conv {
    /// Output positions per image (`OH * OW`).
    fn l(&self) -> usize {
        self.geom.output[0] * self.geom.output[1]
    }
    /// Input elements per image.
    fn image(&self) -> usize {
        self.geom.channels * self.geom.input[0] * self.geom.input[1]
    }
    /// Rows of the column matrix per group.
    fn k(&self) -> usize {
        self.geom.rows() / self.groups
    }
    /// Output channels per group.
    fn cog(&self) -> usize {
        self.out_channels / self.groups
    }
    /// Images per chunk.
    fn per_chunk<T>(&self) -> usize {
        let per_image = (self.geom.rows() * self.l() * std::mem::size_of::<T>()).max(1);
        let by_size = (CHUNK_BYTES / per_image).max(1);
        by_size.min(self.geom.batch.div_ceil(MIN_CHUNKS)).max(1)
    }
    /// `(first image, images)` of every chunk.
    fn chunks<T>(&self) -> Vec<(usize, usize)> {
        let per = self.per_chunk::<T>();
        (0..self.geom.batch)
            .step_by(per)
            .map(|s| (s, per.min(self.geom.batch - s)))
            .collect()
    }
    /// Threads for the work inside one chunk: the pool's where the chunks are fewer than its
    /// threads (a batch of one image is one chunk: 3 -> 64 channels 7x7 at 224x224 ran its
    /// input gradient on one core), else 1 (the chunks are the parallel work).
    fn inner_threads<T>(&self) -> usize {
        let threads = rayon::current_num_threads();
        if self.geom.batch.div_ceil(self.per_chunk::<T>()) < threads {
            threads
        } else {
            1
        }
    }
    /// The column matrix of images `start..start + nb` of the contiguous input `x`, in a
    /// pooled buffer; in parallel over its rows when `parallel`.
    fn cols<T: KernelFloat>(&self, x: &[T], start: usize, nb: usize, parallel: bool) -> Vec<T> {
        let g = self.geom.with_batch(nb);
        let (img, len) = (self.image(), g.rows() * g.cols());
        let shape = [nb, g.channels, g.input[0], g.input[1]];
        let mut cols = allocator::take::<T>(len);
        let src = &x[start * img..(start + nb) * img];
        im2col_into(
            src,
            &Layout::contiguous(&shape),
            &g,
            &mut cols.spare_capacity_mut()[..len],
            parallel,
        );
        // SAFETY: `im2col_into` wrote every element of the first `len`.
        unsafe { cols.set_len(len) };
        cols
    }
    /// The upstream gradient of images `start..start + nb` as the `(Co, nb*L)` matrix
    /// (borrowed as is for a single image).
    fn grad_matrix<'a, T: KernelFloat>(
        &self,
        gy: &'a [T],
        start: usize,
        nb: usize,
    ) -> Cow<'a, [T]> {
        let (co, l) = (self.out_channels, self.l());
        let chunk = &gy[start * co * l..(start + nb) * co * l];
        if nb == 1 {
            return Cow::Borrowed(chunk);
        }
        let mut m = allocator::take::<T>(chunk.len());
        for o in 0..co {
            for i in 0..nb {
                m.extend_from_slice(&chunk[(i * co + o) * l..(i * co + o + 1) * l]);
            }
        }
        Cow::Owned(m)
    }
}

/// Hand a scratch buffer back to the caching allocator.
fn recycle<T: CpuElement>(v: Vec<T>) {
    allocator::recycle(T::into_storage(v));
}

/// A matrix operand: pointer, row stride, column stride.
#[derive(Clone, Copy)]
pub(super) struct Mat<T> {
    ptr: *const T,
    rs: usize,
    cs: usize,
}

impl<T> Mat<T> {
    pub(super) fn new(ptr: *const T, rs: usize, cs: usize) -> Self {
        Mat { ptr, rs, cs }
    }
}

/// `dst (m, n; row stride dst_rs, unit column stride) = [dst +] a (m, k) @ b (k, n)` on
/// `threads` threads of the pool (1: the calling thread). gemm splits the output, never the
/// sum, so the result does not depend on `threads`.
///
/// # Safety
/// Every element the strides address must lie inside the allocations behind the pointers,
/// and `dst` must not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm_on<T: KernelFloat>(
    threads: usize,
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: usize,
    accumulate: bool,
    a: Mat<T>,
    b: Mat<T>,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst,
        1,
        dst_rs as isize,
        accumulate,
        a.ptr,
        a.cs as isize,
        a.rs as isize,
        b.ptr,
        b.cs as isize,
        b.rs as isize,
        T::from_f64(1.0),
        T::from_f64(1.0),
        false,
        false,
        false,
        if threads > 1 {
            Parallelism::Rayon(threads)
        } else {
            Parallelism::None
        },
    )
}

/// View an initialised `MaybeUninit` slice as `&mut [T]`.
///
/// # Safety
/// Every element of `s` must have been written.
unsafe fn assume_init_mut<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    &mut *(s as *mut [MaybeUninit<T>] as *mut [T])
}

/// A fresh output of `per_image` elements per image, its chunks of images written in
/// parallel by `task(chunk, slice)`, which must write every element of its slice.
fn write_by_chunks<T: KernelFloat>(
    c: &Conv,
    per_image: usize,
    task: impl Fn((usize, usize), &mut [MaybeUninit<T>]) + Sync,
) -> Vec<T> {
    let len = c.geom.batch * per_image;
    let mut out = allocator::take::<T>(len);
    if len > 0 {
        let chunks = c.chunks::<T>();
        out.spare_capacity_mut()[..len]
            .par_chunks_mut(c.per_chunk::<T>() * per_image)
            .zip(chunks.par_iter())
            .for_each(|(d, &chunk)| task(chunk, d));
    }
    // SAFETY: every chunk task wrote its whole slice of the first `len` elements.
    unsafe { out.set_len(len) };
    out
}

/// Forward: `(N, Co, OH, OW)` from the contiguous input `x` `(N, Ci, H, W)`, weight `w`
/// `(Co, Ci/G, kh, kw)` and optional bias `(Co,)`.
pub fn forward<T: KernelFloat>(x: &[T], w: &[T], bias: Option<&[T]>, c: &Conv) -> Vec<T> {
    let (co, l, k, cog) = (c.out_channels, c.l(), c.k(), c.cog());
    let inner = c.inner_threads::<T>();
    // Y (Co, nl) = W @ cols, one gemm per group, into `y` (room for co * nl elements).
    let products = |cols: &[T], nl: usize, y: &mut [MaybeUninit<T>]| {
        if k == 0 {
            // A product over nothing (no input channels) is zero.
            y.fill(MaybeUninit::new(T::zero()));
            return;
        }
        for g in 0..c.groups {
            // SAFETY: W_g is rows g*cog.. of the (Co, K) weight, cols_g rows g*k.. of the
            // (K*G, nl) column matrix and Y_g rows g*cog.. of `y`: all in bounds, and `y`
            // is a buffer of its own.
            unsafe {
                let wg = Mat::new(w.as_ptr().add(g * cog * k), k, 1);
                let cg = Mat::new(cols.as_ptr().add(g * k * nl), nl, 1);
                let yg = y.as_mut_ptr().add(g * cog * nl).cast::<T>();
                gemm_on(inner, cog, nl, k, yg, nl, false, wg, cg);
            }
        }
    };
    let task = |(start, nb): (usize, usize), dst: &mut [MaybeUninit<T>]| {
        let cols = c.cols(x, start, nb, inner > 1);
        if nb == 1 {
            // One image's output has Y's layout: multiply straight into it.
            products(&cols, l, dst);
            // SAFETY: `products` wrote all of `dst`.
            let y = unsafe { assume_init_mut(dst) };
            if let Some(b) = bias {
                for (row, &bo) in y.chunks_exact_mut(l).zip(b) {
                    row.iter_mut().for_each(|v| *v += bo);
                }
            }
        } else {
            let nl = nb * l;
            let mut y = allocator::take::<T>(co * nl);
            products(&cols, nl, &mut y.spare_capacity_mut()[..co * nl]);
            // SAFETY: `products` wrote all co * nl elements.
            unsafe { y.set_len(co * nl) };
            // (Co, nb, L) -> (nb, Co, L), adding the bias on the way.
            for (r, d) in dst.chunks_exact_mut(l).enumerate() {
                let (i, o) = (r / co, r % co);
                let src = &y[o * nl + i * l..o * nl + (i + 1) * l];
                match bias {
                    Some(b) => {
                        for (d, &v) in d.iter_mut().zip(src) {
                            d.write(v + b[o]);
                        }
                    }
                    None => {
                        d.write_copy_of_slice(src);
                    }
                }
            }
            recycle(y);
        }
        recycle(cols);
    };
    write_by_chunks(c, co * l, task)
}

/// Gradient of the input, `(N, Ci, H, W)`, from the contiguous upstream gradient `gy`
/// `(N, Co, OH, OW)` and the weight.
pub fn backward_input<T: KernelFloat>(gy: &[T], w: &[T], c: &Conv) -> Vec<T> {
    let (l, k, cog) = (c.l(), c.k(), c.cog());
    let inner = c.inner_threads::<T>();
    let task = |(start, nb): (usize, usize), dst: &mut [MaybeUninit<T>]| {
        let gc = c.geom.with_batch(nb);
        let nl = nb * l;
        let gm = c.grad_matrix(gy, start, nb);
        let mut gcols = allocator::take::<T>(gc.rows() * nl);
        let spare = &mut gcols.spare_capacity_mut()[..gc.rows() * nl];
        if cog == 0 || k == 0 {
            // A product over nothing (no output channels) is zero.
            spare.fill(MaybeUninit::new(T::zero()));
        } else {
            for g in 0..c.groups {
                // SAFETY: W_g^T is the transposed view of rows g*cog.. of the weight, G_g
                // rows g*cog.. of the (Co, nl) gradient matrix, gcols_g rows g*k.. of
                // `gcols` (room for rows * nl elements): in bounds, and `gcols` is a buffer
                // of its own.
                unsafe {
                    let wt = Mat::new(w.as_ptr().add(g * cog * k), 1, k);
                    let gp = gm.as_ptr().add(g * cog * nl);
                    let gg = Mat::new(gp, nl, 1);
                    let dst = spare.as_mut_ptr().add(g * k * nl).cast::<T>();
                    gemm_on(inner, k, nl, cog, dst, nl, false, wt, gg);
                }
            }
        }
        // SAFETY: the gemms (or the zero fill) wrote every row.
        unsafe { gcols.set_len(gc.rows() * nl) };
        col2im_into(&gcols, &gc, dst, inner > 1);
        recycle(gcols);
        if let Cow::Owned(v) = gm {
            recycle(v);
        }
    };
    write_by_chunks(c, c.image(), task)
}

/// Gradient of the weight, `(Co, Ci/G, kh, kw)`, from the contiguous input and upstream
/// gradient.
pub fn backward_weight<T: KernelFloat>(x: &[T], gy: &[T], c: &Conv) -> Vec<T> {
    let (l, k, cog, groups) = (c.l(), c.k(), c.cog(), c.groups);
    let inner = c.inner_threads::<T>();
    // dW_g^T (K, Cog) of one chunk, for every group: (G, K, Cog).
    let part = |(start, nb): (usize, usize)| -> Vec<T> {
        let nl = nb * l;
        let cols = c.cols(x, start, nb, inner > 1);
        let gm = c.grad_matrix(gy, start, nb);
        let mut dwt = vec![T::zero(); groups * k * cog];
        if nl > 0 && k > 0 && cog > 0 {
            for g in 0..groups {
                // SAFETY: cols_g is rows g*k.. of the (K*G, nl) columns, G_g^T the transposed
                // view of rows g*cog.. of the (Co, nl) gradient matrix, and the destination
                // block g of `dwt`: all in bounds, and `dwt` is a buffer of its own.
                unsafe {
                    let cg = Mat::new(cols.as_ptr().add(g * k * nl), nl, 1);
                    let gt = Mat::new(gm.as_ptr().add(g * cog * nl), 1, nl);
                    let dst = dwt.as_mut_ptr().add(g * k * cog);
                    gemm_on(inner, k, cog, nl, dst, cog, false, cg, gt);
                }
            }
        }
        recycle(cols);
        if let Cow::Owned(v) = gm {
            recycle(v);
        }
        dwt
    };
    let parts: Vec<Vec<T>> = c.chunks::<T>().into_par_iter().map(part).collect();
    let mut total = vec![T::zero(); groups * k * cog];
    for p in parts {
        for (t, v) in total.iter_mut().zip(p) {
            *t += v;
        }
    }
    // (G, K, Cog) -> (G, Cog, K) = (Co, Ci/G * kh * kw).
    let mut dw = Vec::with_capacity(total.len());
    for g in 0..groups {
        for o in 0..cog {
            dw.extend((0..k).map(|r| total[(g * k + r) * cog + o]));
        }
    }
    dw
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::im2col::tests::out_len;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `y[n, o, oy, ox]`, `dx` and `dw` straight from the definition of a grouped, strided,
    /// dilated, padded convolution, for the upstream gradient `gy`.
    pub(in crate::backend::cpu) fn naive(
        x: &[f64],
        w: &[f64],
        gy: &[f64],
        c: &Conv,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let g = c.geom;
        let (co, cig) = (c.out_channels, g.channels / c.groups);
        let [h, wd] = g.input;
        let [oh, ow] = g.output;
        let mut y = vec![0.0; g.batch * co * oh * ow];
        let (mut dx, mut dw) = (vec![0.0; x.len()], vec![0.0; w.len()]);
        for n in 0..g.batch {
            for o in 0..co {
                let grp = o / c.cog();
                for (oy, ox) in (0..oh).flat_map(|a| (0..ow).map(move |b| (a, b))) {
                    let yi = ((n * co + o) * oh + oy) * ow + ox;
                    for ci in 0..cig {
                        let cin = grp * cig + ci;
                        for (i, j) in
                            (0..g.kernel[0]).flat_map(|a| (0..g.kernel[1]).map(move |b| (a, b)))
                        {
                            let iy = (oy * g.stride[0] + i * g.dilation[0]) as isize
                                - g.padding[0] as isize;
                            let ix = (ox * g.stride[1] + j * g.dilation[1]) as isize
                                - g.padding[1] as isize;
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                continue;
                            }
                            let xi = ((n * g.channels + cin) * h + iy as usize) * wd + ix as usize;
                            let wi = ((o * cig + ci) * g.kernel[0] + i) * g.kernel[1] + j;
                            y[yi] += x[xi] * w[wi];
                            dx[xi] += gy[yi] * w[wi];
                            dw[wi] += gy[yi] * x[xi];
                        }
                    }
                }
            }
        }
        (y, dx, dw)
    }

    /// `f` run in a pool of `threads` threads.
    pub(in crate::backend::cpu) fn on_threads<R: Send>(
        threads: usize,
        f: impl FnOnce() -> R + Send,
    ) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
            .install(f)
    }

    /// Random operands in [-1, 1) for `c` with the definition's results in f64: the output
    /// plus bias, and both gradients for the upstream gradient `gy`.
    pub(in crate::backend::cpu) struct Reference {
        pub x: Vec<f32>,
        pub w: Vec<f32>,
        pub gy: Vec<f32>,
        pub bias: Vec<f32>,
        pub y: Vec<f64>,
        pub dx: Vec<f64>,
        pub dw: Vec<f64>,
    }

    impl Reference {
        pub fn new(c: &Conv, rng: &mut ChaCha8Rng) -> Reference {
            let g = &c.geom;
            let rand_vec = |rng: &mut ChaCha8Rng, n: usize| -> Vec<f64> {
                (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
            };
            let x = rand_vec(rng, g.batch * g.channels * g.input[0] * g.input[1]);
            let w = rand_vec(rng, c.out_channels * g.rows() / c.groups);
            let gy = rand_vec(rng, g.batch * c.out_channels * g.output[0] * g.output[1]);
            let bias = rand_vec(rng, c.out_channels);
            let (y, dx, dw) = naive(&x, &w, &gy, c);
            let l = g.output[0] * g.output[1];
            let y = (0..y.len())
                .map(|i| y[i] + bias[(i / l) % c.out_channels])
                .collect();
            let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
            Reference {
                x: f(&x),
                w: f(&w),
                gy: f(&gy),
                bias: f(&bias),
                y,
                dx,
                dw,
            }
        }

        /// Assert that the f32 `got` matches `want` (sums of up to a few thousand products
        /// of values in [-1, 1]).
        pub fn check(got: &[f32], want: &[f64], what: &str, c: &Conv) {
            assert_eq!(got.len(), want.len(), "{what} {c:?}");
            for (a, b) in got.iter().zip(want) {
                let tol = 5e-5 * (1.0 + b.abs());
                assert!((*a as f64 - b).abs() < tol, "{what} {c:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn chunked_convolution_matches_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut cases = 0;
        while cases < 40 {
            let groups = rng.random_range(1..4);
            let (cig, cog) = (rng.random_range(1..4), rng.random_range(1..4));
            let kernel = [rng.random_range(1..4), rng.random_range(1..4)];
            let stride = [rng.random_range(1..3), rng.random_range(1..3)];
            let dilation = [rng.random_range(1..3), rng.random_range(1..3)];
            let padding = [rng.random_range(0..3), rng.random_range(0..3)];
            let input = [rng.random_range(1..9), rng.random_range(1..9)];
            let span = |a: usize| dilation[a] * (kernel[a] - 1) + 1;
            if (0..2).any(|a| input[a] + 2 * padding[a] < span(a)) {
                continue;
            }
            let output =
                [0, 1].map(|a| out_len(input[a], kernel[a], stride[a], padding[a], dilation[a]));
            // Batches of 1 (the direct path), of several chunks, and with a short last chunk.
            let batch = [1, 3, 17][cases % 3];
            let c = Conv {
                geom: ConvGeometry {
                    batch,
                    channels: cig * groups,
                    input,
                    kernel,
                    stride,
                    dilation,
                    padding,
                    output,
                },
                out_channels: cog * groups,
                groups,
            };
            let rand_vec = |rng: &mut ChaCha8Rng, n: usize| -> Vec<f64> {
                (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
            };
            let x = rand_vec(&mut rng, batch * c.image());
            let w = rand_vec(&mut rng, c.out_channels * cig * kernel[0] * kernel[1]);
            let gy = rand_vec(&mut rng, batch * c.out_channels * c.l());
            let bias = rand_vec(&mut rng, c.out_channels);
            let (y_ref, dx_ref, dw_ref) = naive(&x, &w, &gy, &c);
            let close = |got: &[f64], want: &[f64], what: &str| {
                assert_eq!(got.len(), want.len(), "{what} {c:?}");
                for (a, b) in got.iter().zip(want) {
                    assert!((a - b).abs() < 1e-12, "{what} {c:?}: {a} vs {b}");
                }
            };
            close(&forward(&x, &w, None, &c), &y_ref, "forward");
            let with_bias: Vec<f64> = y_ref
                .iter()
                .enumerate()
                .map(|(i, v)| v + bias[(i / c.l()) % c.out_channels])
                .collect();
            close(
                &forward(&x, &w, Some(&bias), &c),
                &with_bias,
                "forward + bias",
            );
            close(&backward_input(&gy, &w, &c), &dx_ref, "grad input");
            close(&backward_weight(&x, &gy, &c), &dw_ref, "grad weight");
            // f32 runs the same code.
            let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
            let y32 = forward(&f(&x), &f(&w), None, &c);
            for (a, b) in y32.iter().zip(&y_ref) {
                assert!((*a as f64 - b).abs() < 1e-4, "f32 forward {c:?}");
            }
            cases += 1;
        }
    }

    #[test]
    fn one_image_spread_over_threads_matches_one_thread_and_the_definition() {
        // A batch of one image is one chunk: its column matrices, gemms and col2im run on
        // every thread of the pool, with results bit for bit those of one thread.
        let c = Conv {
            geom: ConvGeometry {
                batch: 1,
                channels: 6,
                input: [40, 37],
                kernel: [3, 3],
                stride: [1, 1],
                dilation: [1, 1],
                padding: [1, 1],
                output: [40, 37],
            },
            out_channels: 40,
            groups: 1,
        };
        let r = Reference::new(&c, &mut ChaCha8Rng::seed_from_u64(8));
        let run = |threads: usize| {
            on_threads(threads, || {
                assert_eq!(c.inner_threads::<f32>(), threads);
                (
                    forward(&r.x, &r.w, Some(&r.bias), &c),
                    backward_input(&r.gy, &r.w, &c),
                    backward_weight(&r.x, &r.gy, &c),
                )
            })
        };
        let (one, two) = (run(1), run(2));
        Reference::check(&two.0, &r.y, "forward", &c);
        Reference::check(&two.1, &r.dx, "grad input", &c);
        Reference::check(&two.2, &r.dw, "grad weight", &c);
        assert!(one == two, "results depend on the number of threads");
    }
}
