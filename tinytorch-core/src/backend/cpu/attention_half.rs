//! Scaled-dot-product attention on bf16 and f16 operands: `attention.rs`'s f32 kernels run
//! on one group of problems at a time (the heads of one batch element), the group's operands
//! widened into f32 scratch that stays in cache, and its results rounded once into the
//! caller's half-precision buffers, in the layout the caller asked for.
//!
//! Widening whole tensors instead (autocast's casts of q, k and v, the output's cast back,
//! and the four casts of their gradients) made each a pass over memory and a graph node,
//! and left the f32 output in a layout that the model's `transpose(1, 2).reshape(..)` then
//! copied: under `autocast(bf16)` the forward's casts around attention and those copies took
//! 3.1 ms of a 46.9 ms single-thread step of the small GPT on an Intel Xeon, besides the
//! backward's casts. The log-sum-exp the backward needs stays f32.

use super::attention::{self as kernel, AttnDims, AttnInput, AttnMask, AttnOptions, Interleave};
use super::strided::{wide, Loop, Map1};
use super::CpuElement;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Problems per group: a multiple of every layout's interleaved heads, so that each group's
/// rows of every result are one contiguous range (`Interleave` puts problem `b`'s rows
/// among those of the problems `b / heads * heads..` only).
fn group(orders: &[Interleave]) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    orders
        .iter()
        .fold(1, |g, o| g / gcd(g, o.heads.max(1)) * o.heads.max(1))
}

/// Problems `first..first + n` of a `(bh, rows, f)` operand, widened to a contiguous f32
/// `(n, rows, f)` buffer.
struct Staged {
    data: Vec<f32>,
    base: Vec<usize>,
    f: usize,
}

impl Staged {
    fn of<H: CpuElement>(x: AttnInput<H>, first: usize, n: usize, rows: usize, f: usize) -> Self {
        let mut data = Vec::with_capacity(n * rows * f);
        wide(Widen {
            x,
            problems: first..first + n,
            rows,
            f,
            out: &mut data.spare_capacity_mut()[..n * rows * f],
        });
        // SAFETY: `Widen` wrote all n * rows * f elements.
        unsafe { data.set_len(n * rows * f) };
        Staged {
            data,
            base: (0..n).map(|b| b * rows * f).collect(),
            f,
        }
    }

    /// The mask's `(n, l, s)` values of those problems, widened and contiguous.
    fn mask<H: CpuElement>(m: AttnMask<H>, first: usize, n: usize, l: usize, s: usize) -> Self {
        let mut data = Vec::with_capacity(n * l * s);
        for b in first..first + n {
            for i in 0..l {
                let row = m.base[b] + i * m.row_stride;
                data.extend((0..s).map(|j| m.data[row + j * m.col_stride].to_f32()));
            }
        }
        Staged {
            data,
            base: (0..n).map(|b| b * l * s).collect(),
            f: s,
        }
    }

    fn input(&self) -> AttnInput<'_, f32> {
        AttnInput {
            data: &self.data,
            base: &self.base,
            row_stride: self.f,
        }
    }

    fn as_mask(&self) -> AttnMask<'_, f32> {
        AttnMask {
            data: &self.data,
            base: &self.base,
            row_stride: self.f,
            col_stride: 1,
        }
    }
}

/// The rows `0..rows` (their first `f` elements) of `problems` of `x`, widened to f32 one
/// after another into `out`: a loop [`wide`] compiles for AVX-512 (bf16 widens by a shift).
struct Widen<'a, H> {
    x: AttnInput<'a, H>,
    problems: std::ops::Range<usize>,
    rows: usize,
    f: usize,
    out: &'a mut [MaybeUninit<f32>],
}

impl<H: CpuElement> Loop for Widen<'_, H> {
    #[inline(always)]
    fn run(self) {
        let mut dst = self.out.chunks_exact_mut(self.f.max(1));
        for b in self.problems {
            for i in 0..self.rows {
                let row = dst.next().expect("Staged::of sized the output");
                for (d, v) in row.iter_mut().zip(&self.x.at(b, i)[..self.f]) {
                    d.write(v.to_f32());
                }
            }
        }
    }
}

/// `dst[i] = src[i]` rounded to the half type (branch-free, in [`wide`]'s AVX-512 copy).
fn narrow<H: CpuElement>(src: &[f32], dst: &mut [H]) {
    let dst = &mut dst[..src.len()];
    // SAFETY: MaybeUninit<H> has H's layout, and every element is written.
    let out = unsafe { &mut *(dst as *mut [H] as *mut [MaybeUninit<H>]) };
    wide(Map1 {
        o: out,
        x: src,
        f: &H::from_f32,
    });
}

/// Hands a group's f32 results back to the buffer pool for the next group.
fn recycle<const N: usize>(bufs: [Vec<f32>; N]) {
    for b in bufs {
        super::allocator::recycle(super::CpuStorage::F32(b.into()));
    }
}

/// The options of a group whose first problem is `first`: its mask widened (the caller
/// keeps `mask` alive), its dropout masks those of the same problems of the whole call.
fn group_options<'a, H>(
    o: &AttnOptions<'_, H>,
    first: usize,
    mask: Option<&'a Staged>,
) -> AttnOptions<'a, f32> {
    AttnOptions {
        scale: o.scale,
        causal: o.causal,
        mask: mask.map(Staged::as_mask),
        dropout: o.dropout,
        seed: o.seed,
        first_problem: o.first_problem + first,
    }
}

/// [`kernel::forward`] of half operands: the output `(BH, L, Ev)` in `order`, rounded once,
/// and each row's log-sum-exp in f32.
pub fn forward<H: CpuElement>(
    [q, k, v]: [AttnInput<H>; 3],
    d: AttnDims,
    o: &AttnOptions<H>,
    order: Interleave,
) -> (Vec<H>, Vec<f32>) {
    let g = group(&[order]);
    // Every element is narrowed into: no zero fill.
    let mut out = super::allocator::scratch::<H>(d.bh * d.l * d.ev);
    let mut lse = vec![0f32; d.bh * d.l];
    out.par_chunks_mut(g * d.l * d.ev)
        .zip(lse.par_chunks_mut(g * d.l))
        .enumerate()
        .for_each(|(c, (out_g, lse_g))| {
            let first = c * g;
            let (qs, ks, vs) = (
                Staged::of(q, first, g, d.l, d.e),
                Staged::of(k, first, g, d.s, d.e),
                Staged::of(v, first, g, d.s, d.ev),
            );
            let mask = o.mask.map(|m| Staged::mask(m, first, g, d.l, d.s));
            let (y, l) = kernel::forward(
                qs.input(),
                ks.input(),
                vs.input(),
                AttnDims { bh: g, ..d },
                &group_options(o, first, mask.as_ref()),
                order,
            );
            narrow(&y, out_g);
            lse_g.copy_from_slice(&l);
            recycle([y, l]);
        });
    (out, lse)
}

/// [`kernel::backward`] of half operands: the gradients of q, k and v, each rounded once and
/// laid out as `orders` says, from the forward's operands, output and f32 log-sum-exp.
pub fn backward<H: CpuElement>(
    [q, k, v]: [AttnInput<H>; 3],
    out: AttnInput<H>,
    lse: &[f32],
    dout: AttnInput<H>,
    d: AttnDims,
    o: &AttnOptions<H>,
    orders: [Interleave; 3],
) -> (Vec<H>, Vec<H>, Vec<H>) {
    let g = group(&orders);
    // Every element is narrowed into: no zero fill.
    let buf = |rows: usize, f: usize| super::allocator::scratch::<H>(d.bh * rows * f);
    let (mut dq, mut dk, mut dv) = (buf(d.l, d.e), buf(d.s, d.e), buf(d.s, d.ev));
    dq.par_chunks_mut(g * d.l * d.e)
        .zip(dk.par_chunks_mut(g * d.s * d.e))
        .zip(dv.par_chunks_mut(g * d.s * d.ev))
        .enumerate()
        .for_each(|(c, ((dq_g, dk_g), dv_g))| {
            let first = c * g;
            let staged = [
                Staged::of(q, first, g, d.l, d.e),
                Staged::of(k, first, g, d.s, d.e),
                Staged::of(v, first, g, d.s, d.ev),
                Staged::of(out, first, g, d.l, d.ev),
                Staged::of(dout, first, g, d.l, d.ev),
            ];
            let [qs, ks, vs, outs, douts] = &staged;
            let mask = o.mask.map(|m| Staged::mask(m, first, g, d.l, d.s));
            let (gq, gk, gv) = kernel::backward(
                [qs.input(), ks.input(), vs.input()],
                outs.input(),
                &lse[first * d.l..(first + g) * d.l],
                douts.input(),
                AttnDims { bh: g, ..d },
                &group_options(o, first, mask.as_ref()),
                orders,
            );
            narrow(&gq, dq_g);
            narrow(&gk, dk_g);
            narrow(&gv, dv_g);
            recycle([gq, gk, gv]);
        });
    (dq, dk, dv)
}
