//! The one strided walker that every CPU kernel uses. A layout (or several layouts of the same
//! shape) is first reduced by merging adjacent dims (`merge_dims`); the walker then hands the
//! kernel *runs*: stretches along the innermost dim with a fixed stride per operand, so the
//! kernel's inner loop is a plain counted loop that LLVM vectorises when the strides are 1.
//! Above `PAR_THRESHOLD` elements the output is split into chunks processed by rayon.

use crate::base::layout::{merge_dims, Dims};
use crate::base::Layout;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Minimum number of elements before an elementwise kernel spreads over threads.
pub const PAR_THRESHOLD: usize = 1 << 15;
/// Elements per parallel task.
pub const PAR_CHUNK: usize = 1 << 14;

/// One stretch of the innermost dim: output position, length, and per-operand storage offset
/// and stride.
#[derive(Clone, Copy, Debug)]
pub struct Run<const K: usize> {
    /// Flat row-major index of the first element of the run.
    pub pos: usize,
    /// Number of elements.
    pub len: usize,
    /// Storage offset of the first element, per operand.
    pub offs: [usize; K],
    /// Storage stride along the run, per operand.
    pub strides: [usize; K],
}

/// Operands of the same shape, merged once and walked many times.
#[derive(Clone, Debug)]
pub struct MultiStrided<const K: usize> {
    shape: Dims,
    strides: [Dims; K],
    base: [usize; K],
    numel: usize,
}

impl<const K: usize> MultiStrided<K> {
    /// Merge the layouts, which must all have the same shape.
    pub fn new(layouts: [&Layout; K]) -> Self {
        let shape = layouts[0].shape();
        debug_assert!(layouts.iter().all(|l| l.shape() == shape));
        let strides: [&[usize]; K] = std::array::from_fn(|k| layouts[k].strides());
        let base = std::array::from_fn(|k| layouts[k].offset());
        match merge_dims(shape, strides) {
            Some((shape, strides)) => {
                let numel = shape.iter().product();
                MultiStrided {
                    shape,
                    strides,
                    base,
                    numel,
                }
            }
            None => MultiStrided {
                shape: smallvec::smallvec![0],
                strides: std::array::from_fn(|_| smallvec::smallvec![1]),
                base,
                numel: 0,
            },
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// True when every operand is contiguous in row-major order (after merging: one dim of
    /// stride 1).
    pub fn all_contiguous(&self) -> bool {
        self.shape.len() == 1 && self.strides.iter().all(|s| s[0] == 1)
    }

    /// Base storage offsets.
    pub fn base(&self) -> [usize; K] {
        self.base
    }

    /// Call `f` for every run covering flat indices `start..end`, in order.
    pub fn for_each_run(&self, start: usize, end: usize, mut f: impl FnMut(Run<K>)) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        let inner = self.shape[nd - 1];
        // Multi-index of `start`.
        let mut idx: Dims = smallvec::smallvec![0; nd];
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let inner_strides: [usize; K] = std::array::from_fn(|k| self.strides[k][nd - 1]);
        let mut pos = start;
        while pos < end {
            let offs: [usize; K] = std::array::from_fn(|k| {
                self.base[k]
                    + idx
                        .iter()
                        .zip(&self.strides[k])
                        .map(|(i, s)| i * s)
                        .sum::<usize>()
            });
            let len = (inner - idx[nd - 1]).min(end - pos);
            f(Run {
                pos,
                len,
                offs,
                strides: inner_strides,
            });
            pos += len;
            idx[nd - 1] += len;
            // Carry into outer dims.
            let mut d = nd - 1;
            while d > 0 && idx[d] == self.shape[d] {
                idx[d] = 0;
                idx[d - 1] += 1;
                d -= 1;
            }
        }
    }

    /// Build the row-major output (`numel` long) run by run, in parallel above the threshold.
    /// `f(out_chunk, run)` must write all `run.len` elements at the start of `out_chunk`.
    /// The buffer is never zero-filled first: for large outputs that memset (and the page
    /// faults it triggers) would cost as much as the kernel itself.
    pub fn collect_output<U: super::storage::CpuElement>(
        &self,
        f: impl Fn(&mut [MaybeUninit<U>], Run<K>) + Sync,
    ) -> Vec<U> {
        let n = self.numel;
        let mut out: Vec<U> = super::allocator::take(n);
        let spare = &mut out.spare_capacity_mut()[..n];
        if n >= PAR_THRESHOLD && rayon::current_num_threads() > 1 {
            spare
                .par_chunks_mut(PAR_CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| {
                    let start = c * PAR_CHUNK;
                    self.for_each_run(start, start + chunk.len(), |run| {
                        f(&mut chunk[run.pos - start..run.pos - start + run.len], run)
                    });
                });
        } else {
            self.for_each_run(0, n, |run| f(&mut spare[run.pos..run.pos + run.len], run));
        }
        // SAFETY: the runs of `for_each_run(0, n)` (or of the chunks, which partition 0..n)
        // cover every index below n exactly once, and `f` writes every element of its run.
        unsafe { out.set_len(n) };
        out
    }
}

/// A contiguous inner loop of the walkers below, run by [`wide`].
pub(crate) trait Loop {
    /// The loop itself; `#[inline(always)]` in every implementation, so that it is compiled
    /// into [`wide`]'s AVX-512 copy (a closure was not inlined there).
    fn run(self);
}

/// `loop_.run()`, compiled for AVX-512 where the CPU has it. The build's baseline ISA is
/// SSE2, so the contiguous inner loops run in copies made for the wider vectors: a loop over
/// f16/bf16 elements (widened, computed in f32, rounded back without branches) then
/// processes 16 elements at a time instead of 4 (bf16 `add` of 512K elements 3.4x f32's time
/// before, about 1.5x after).
#[inline(always)]
pub(crate) fn wide(loop_: impl Loop) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw")]
        unsafe fn avx512(loop_: impl Loop) {
            loop_.run()
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has AVX512-F and -BW.
            return unsafe { avx512(loop_) };
        }
    }
    loop_.run()
}

/// `o[i] = f(x[i])`: the contiguous loop of [`map1`], of casts and of roundings.
pub(crate) struct Map1<'a, T, U, F> {
    /// The outputs, as many as `x` has elements.
    pub(crate) o: &'a mut [MaybeUninit<U>],
    /// The inputs.
    pub(crate) x: &'a [T],
    /// The function.
    pub(crate) f: &'a F,
}

impl<T: Copy, U, F: Fn(T) -> U> Loop for Map1<'_, T, U, F> {
    #[inline(always)]
    fn run(self) {
        for (o, &x) in self.o.iter_mut().zip(self.x) {
            o.write((self.f)(x));
        }
    }
}

/// `o[i] = f(x[i], y[i])`, either side possibly one value broadcast (a slice of length 1
/// read at index 0 throughout).
struct Map2<'a, A, B, U, F> {
    o: &'a mut [MaybeUninit<U>],
    a: &'a [A],
    b: &'a [B],
    f: &'a F,
}

impl<A: Copy, B: Copy, U, F: Fn(A, B) -> U> Loop for Map2<'_, A, B, U, F> {
    #[inline(always)]
    fn run(self) {
        let f = self.f;
        match (self.a.len(), self.b.len()) {
            (na, nb) if na == nb => {
                for ((o, &x), &y) in self.o.iter_mut().zip(self.a).zip(self.b) {
                    o.write(f(x, y));
                }
            }
            (_, 1) => {
                let y = self.b[0];
                for (o, &x) in self.o.iter_mut().zip(self.a) {
                    o.write(f(x, y));
                }
            }
            _ => {
                let x = self.a[0];
                for (o, &y) in self.o.iter_mut().zip(self.b) {
                    o.write(f(x, y));
                }
            }
        }
    }
}

/// `d[i] = f(d[i], s[i])`.
struct Update2<'a, T, S, F> {
    d: &'a mut [T],
    s: &'a [S],
    f: &'a F,
}

impl<T: Copy, S: Copy, F: Fn(T, S) -> T> Loop for Update2<'_, T, S, F> {
    #[inline(always)]
    fn run(self) {
        for (x, &y) in self.d.iter_mut().zip(self.s) {
            *x = (self.f)(*x, y);
        }
    }
}

/// Apply `f` to every element of `src[layout]`, returning a row-major vector.
pub fn map1<T: Copy + Sync, U: super::storage::CpuElement>(
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync,
) -> Vec<U> {
    let walk = MultiStrided::new([layout]);
    walk.collect_output(|o, run| {
        let [off] = run.offs;
        let [s] = run.strides;
        match s {
            1 => wide(Map1 {
                o,
                x: &src[off..off + run.len],
                f: &f,
            }),
            // A broadcast run (e.g. a reduction's gradient expanded back to the input's
            // shape): one value, a vectorised fill.
            0 => {
                let v = f(src[off]);
                for o in o.iter_mut() {
                    o.write(v);
                }
            }
            // step_by instead of indexing: no bounds check per element.
            _ => {
                for (o, &x) in o.iter_mut().zip(src[off..].iter().step_by(s)) {
                    o.write(f(x));
                }
            }
        }
    })
}

/// Apply `f` elementwise to `a[al]` and `b[bl]` (same shape), returning a row-major vector.
pub fn map2<A: Copy + Sync, B: Copy + Sync, U: super::storage::CpuElement>(
    a: &[A],
    al: &Layout,
    b: &[B],
    bl: &Layout,
    f: impl Fn(A, B) -> U + Sync,
) -> Vec<U> {
    let walk = MultiStrided::new([al, bl]);
    walk.collect_output(|o, run| {
        let [oa, ob] = run.offs;
        let n = run.len;
        // Specialised inner loops: the common layouts (both contiguous, one side a broadcast
        // scalar) get loops without index arithmetic, which LLVM vectorises.
        match run.strides {
            [1, 1] => wide(Map2 {
                o,
                a: &a[oa..oa + n],
                b: &b[ob..ob + n],
                f: &f,
            }),
            [1, 0] => wide(Map2 {
                o,
                a: &a[oa..oa + n],
                b: &b[ob..ob + 1],
                f: &f,
            }),
            [0, 1] => wide(Map2 {
                o,
                a: &a[oa..oa + 1],
                b: &b[ob..ob + n],
                f: &f,
            }),
            [sa, sb] => {
                for (i, o) in o.iter_mut().enumerate() {
                    o.write(f(a[oa + i * sa], b[ob + i * sb]));
                }
            }
        }
    })
}

/// Apply `f` elementwise to three operands of the same shape, returning a row-major vector.
pub fn map3<A: Copy + Sync, B: Copy + Sync, C: Copy + Sync, U: super::storage::CpuElement>(
    a: (&[A], &Layout),
    b: (&[B], &Layout),
    c: (&[C], &Layout),
    f: impl Fn(A, B, C) -> U + Sync,
) -> Vec<U> {
    let walk = MultiStrided::new([a.1, b.1, c.1]);
    walk.collect_output(|o, run| {
        let [oa, ob, oc] = run.offs;
        let [sa, sb, sc] = run.strides;
        for (i, o) in o.iter_mut().enumerate() {
            o.write(f(a.0[oa + i * sa], b.0[ob + i * sb], c.0[oc + i * sc]));
        }
    })
}

/// Update `dst[dl]` in place with `f(dst, src)` elementwise (same shape). Sequential when the
/// destination is strided, since two runs of a strided destination may interleave in memory.
pub fn update2<T: Copy + Send + Sync, S: Copy + Sync>(
    dst: &mut [T],
    dl: &Layout,
    src: &[S],
    sl: &Layout,
    f: impl Fn(T, S) -> T + Sync,
) {
    let walk = MultiStrided::new([dl, sl]);
    if walk.numel() == 0 {
        // An empty layout's offset may lie past the end of the buffer.
        return;
    }
    if walk.all_contiguous() {
        let [od, os] = walk.base();
        let n = walk.numel();
        let d = &mut dst[od..od + n];
        let s = &src[os..os + n];
        let update = |d: &mut [T], s: &[S]| wide(Update2 { d, s, f: &f });
        if n >= PAR_THRESHOLD {
            d.par_chunks_mut(PAR_CHUNK)
                .zip(s.par_chunks(PAR_CHUNK))
                .for_each(|(d, s)| update(d, s));
        } else {
            update(d, s);
        }
        return;
    }
    walk.for_each_run(0, walk.numel(), |run| {
        let [od, os] = run.offs;
        let [sd, ss] = run.strides;
        if (sd, ss) == (1, 1) {
            // Contiguous runs of a strided whole (a slice of the destination: the backward of
            // `narrow` writes the gradient into its part of a zero tensor).
            let (d, s) = (&mut dst[od..od + run.len], &src[os..os + run.len]);
            wide(Update2 { d, s, f: &f });
        } else if ss == 0 {
            let y = src[os];
            for i in 0..run.len {
                let p = od + i * sd;
                dst[p] = f(dst[p], y);
            }
        } else {
            for i in 0..run.len {
                let p = od + i * sd;
                dst[p] = f(dst[p], src[os + i * ss]);
            }
        }
    });
}

/// Update every element of `dst[dl]` in place with `f`.
pub fn update1<T: Copy + Send + Sync>(dst: &mut [T], dl: &Layout, f: impl Fn(T) -> T + Sync) {
    let walk = MultiStrided::new([dl]);
    if walk.numel() == 0 {
        return;
    }
    if walk.all_contiguous() {
        let [od] = walk.base();
        let d = &mut dst[od..od + walk.numel()];
        if d.len() >= PAR_THRESHOLD {
            d.par_chunks_mut(PAR_CHUNK)
                .for_each(|d| d.iter_mut().for_each(|x| *x = f(*x)));
        } else {
            d.iter_mut().for_each(|x| *x = f(*x));
        }
        return;
    }
    walk.for_each_run(0, walk.numel(), |run| {
        let [od] = run.offs;
        let [sd] = run.strides;
        for i in 0..run.len {
            let p = od + i * sd;
            dst[p] = f(dst[p]);
        }
    });
}

/// Storage offsets of every element of `layout`, in row-major order. For index kernels, which
/// are dominated by their gathers rather than by this walk.
pub fn offsets(layout: &Layout) -> Vec<usize> {
    let walk = MultiStrided::new([layout]);
    let mut out = Vec::with_capacity(walk.numel());
    walk.for_each_run(0, walk.numel(), |run| {
        let [o] = run.offs;
        let [s] = run.strides;
        out.extend((0..run.len).map(|i| o + i * s));
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map1_walks_transposed_layout_in_row_major_order() {
        let src: Vec<i64> = (0..6).collect();
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1);
        assert_eq!(map1(&src, &l, |x| x), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn map1_expands_broadcast_runs() {
        // (2, 1) expanded to (2, 5): two runs of stride 0, filled with their one value;
        // large enough that the parallel chunks split a run.
        let src = vec![3.0f32, -1.0];
        let n = PAR_THRESHOLD + 3;
        let l = Layout::contiguous(&[2, 1])
            .broadcast_as("t", &[2, n])
            .unwrap();
        let out = map1(&src, &l, |x| x * 2.0);
        assert!(out[..n].iter().all(|&v| v == 6.0) && out[n..].iter().all(|&v| v == -2.0));
    }

    #[test]
    fn map2_broadcasts_and_parallel_matches_sequential() {
        let n = PAR_THRESHOLD * 3 + 7;
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let b = vec![2.0f64];
        let al = Layout::contiguous(&[n]);
        let bl = Layout::contiguous(&[1]).broadcast_as("t", &[n]).unwrap();
        let out = map2(&a, &al, &b, &bl, |x, y| x * y);
        assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f64));
        // Strided and chunked across a run boundary.
        let a2: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
        let l2 = Layout::from_parts(vec![n], vec![2], 1);
        let out2 = map1(&a2, &l2, |x| x);
        assert!(out2
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (2 * i + 1) as f64));
    }

    #[test]
    fn offsets_of_empty_layout_is_empty() {
        assert!(offsets(&Layout::contiguous(&[3, 0])).is_empty());
        assert_eq!(offsets(&Layout::contiguous(&[])), vec![0]);
    }
}
