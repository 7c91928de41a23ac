//! Fused scaled-dot-product attention on the CPU, blocked as flash-attention does it: the
//! `L x S` score matrix is never stored. The forward walks key blocks with an online softmax
//! (running row max and sum) and keeps only each row's log-sum-exp; the backward recomputes
//! each block's probabilities from it. Memory is O((L + S) * E) per head, whatever the length.
//!
//! Operands are `(BH, L, E)` queries, `(BH, S, E)` keys, `(BH, S, Ev)` values (and the
//! backward's `(BH, L, Ev)` upstream gradient) given as strided views ([`AttnInput`]: any
//! offset per problem and any row stride, features contiguous), so the heads of a fused QKV
//! projection or the filled part of a KV cache are read in place, never copied. Block
//! products go through `gemm`; rayon spreads (head, block) tasks over the threads. Results
//! are new buffers, written in the [`Interleave`] the caller asks for: contiguous
//! `(BH, L, E)`, or `(B, L, H, E)` with the heads of a row side by side (PyTorch's layout,
//! the one a QKV projection's heads come in), so that the model's `transpose(1, 2)` and
//! reshape back to `(B, L, H * E)` are views rather than copies.

use super::float::KernelFloat;
use super::strided::{wide, Loop};
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Queries per block.
const BLOCK_Q: usize = 64;
/// Keys per block.
const BLOCK_K: usize = 128;

/// Sizes: `bh` (batch x heads) problems of `l` queries and `s` keys, each of `e` features,
/// values of `ev` features. All positive (the op layer sends empty problems elsewhere).
#[derive(Clone, Copy, Debug)]
pub struct AttnDims {
    pub bh: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
}

/// A `(bh, rows, features)` operand read in place: row `i` of problem `b` is the
/// `features` contiguous elements at `data[base[b] + i * row_stride]`.
#[derive(Clone, Copy)]
pub struct AttnInput<'a, T> {
    pub data: &'a [T],
    pub base: &'a [usize],
    pub row_stride: usize,
}

impl<'a, T> AttnInput<'a, T> {
    /// Problem `b` from row `i` on (to the end of the buffer; `gemm_into` bounds the reads).
    pub(super) fn at(&self, b: usize, i: usize) -> &'a [T] {
        &self.data[self.base[b] + i * self.row_stride..]
    }
}

/// How the kernels lay out a `(bh, rows, f)` result: problem `b`'s row `i` starts at element
/// `(b / heads) * rows * heads * f + i * heads * f + (b % heads) * f`. `heads = 1` is the
/// contiguous `(bh, rows, f)`; `heads = H` (the last batch dim) is `(B, rows, H, f)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interleave {
    pub heads: usize,
}

/// Rows being written: row `r` starts at `ptr + r * row_stride`. Copies go to tasks that
/// write disjoint elements (their own problems, or their own rows of one problem).
#[derive(Clone, Copy)]
struct DstRows<T> {
    ptr: SyncPtr<T>,
    row_stride: usize,
}

impl<T> DstRows<T> {
    /// The rows from row `r` on.
    ///
    /// # Safety
    /// Row `r` lies inside the allocation.
    unsafe fn at_row(self, r: usize) -> Self {
        DstRows {
            ptr: SyncPtr(self.ptr.add(r * self.row_stride)),
            row_stride: self.row_stride,
        }
    }
}

/// A new `(bh, rows, f)` result buffer laid out as `order` says, and the writer of each
/// problem's rows.
struct Results<T> {
    data: Vec<T>,
    order: Interleave,
    rows: usize,
    f: usize,
}

impl<T: KernelFloat> Results<T> {
    /// A buffer of zeros where the kernel accumulates into it (`zeroed`), else of any values
    /// (the kernel writes every element).
    fn new(bh: usize, rows: usize, f: usize, order: Interleave, zeroed: bool) -> Self {
        assert!(
            order.heads > 0 && bh.is_multiple_of(order.heads),
            "attention: {bh} problems do not split into groups of {} heads",
            order.heads
        );
        let len = bh * rows * f;
        Results {
            data: match zeroed {
                true => super::allocator::zeros::<T>(len),
                false => super::allocator::scratch::<T>(len),
            },
            order,
            rows,
            f,
        }
    }

    /// The writer of the whole buffer; [`Writer::problem`] gives each problem's rows.
    fn writer(&mut self) -> Writer<T> {
        Writer {
            ptr: SyncPtr(self.data.as_mut_ptr()),
            len: self.data.len(),
            order: self.order,
            rows: self.rows,
            f: self.f,
        }
    }
}

/// [`Results`] as the tasks write it.
#[derive(Clone, Copy)]
struct Writer<T> {
    ptr: SyncPtr<T>,
    len: usize,
    order: Interleave,
    rows: usize,
    f: usize,
}

impl<T> Writer<T> {
    /// Problem `b`'s rows (`b` below the buffer's problem count).
    fn problem(self, b: usize) -> DstRows<T> {
        let h = self.order.heads;
        let base = (b / h) * self.rows * h * self.f + (b % h) * self.f;
        // Its last element, (rows - 1) * h * f + f - 1 further, is inside the buffer too.
        assert!(
            self.rows == 0
                || self.f == 0
                || base + (self.rows - 1) * h * self.f + self.f <= self.len,
            "attention: problem {b} lies past the result buffer"
        );
        DstRows {
            // SAFETY: `base` is inside the buffer (asserted above).
            ptr: SyncPtr(unsafe { self.ptr.add(base.min(self.len)) }),
            row_stride: h * self.f,
        }
    }
}

/// An additive mask broadcast over `(bh, l, s)`: element `(b, i, j)` is at
/// `base[b] + i * row_stride + j * col_stride`.
#[derive(Clone, Copy)]
pub struct AttnMask<'a, T> {
    pub data: &'a [T],
    pub base: &'a [usize],
    pub row_stride: usize,
    pub col_stride: usize,
}

/// What the scores see besides `q k^T * scale`.
#[derive(Clone, Copy)]
pub struct AttnOptions<'a, T> {
    pub scale: f64,
    pub causal: bool,
    pub mask: Option<AttnMask<'a, T>>,
    /// Dropout probability on the attention weights and the seed of its mask; the mask of
    /// element `(b, i, j)` is a hash of them, so the backward regenerates it.
    pub dropout: f64,
    pub seed: u64,
    /// The index of problem 0 among the caller's problems, where a caller runs them in
    /// groups (`attention_half.rs`): the dropout mask of problem `b` is that of problem
    /// `first_problem + b` of the whole call.
    pub first_problem: usize,
}

impl<T: KernelFloat> AttnOptions<'_, T> {
    /// Keys `j` that query `i` may see under the causal rule (`j <= i`, torch's top-left
    /// aligned `tril`): the number of the first `s` keys.
    fn visible(&self, i: usize, s: usize) -> usize {
        if self.causal {
            (i + 1).min(s)
        } else {
            s
        }
    }

    /// Dropout's keep factor for `(b, i, j)`: 0 or 1 / (1 - p).
    fn keep(&self, b: usize, i: usize, j: usize, d: &AttnDims) -> f64 {
        if self.dropout == 0.0 {
            return 1.0;
        }
        let n = (((self.first_problem + b) * d.l + i) * d.s + j) as u64;
        let u = (splitmix(self.seed ^ splitmix(n)) >> 11) as f64 / (1u64 << 53) as f64;
        if u < self.dropout {
            0.0
        } else {
            1.0 / (1.0 - self.dropout)
        }
    }
}

/// A 64-bit mixing function (SplitMix64's finaliser): a counter-based random stream.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A destination of [`gemm_into`] in a slice: `(slice, row stride)`, bounds-checked.
fn in_slice<T>(dst: &mut [T], m: usize, n: usize, ldd: usize) -> DstRows<T> {
    assert!(
        m == 0 || n == 0 || dst.len() >= (m - 1) * ldd + n,
        "attention: gemm destination too small"
    );
    DstRows {
        ptr: SyncPtr(dst.as_mut_ptr()),
        row_stride: ldd,
    }
}

/// `dst (m x n) = [dst +] beta * a (m x k) * b (k x n)`; each operand given as (slice, row
/// stride, column stride).
///
/// # Safety
/// `dst`'s `m` rows of `n` elements lie inside one allocation, and no other task touches
/// them meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_into<T: KernelFloat>(
    m: usize,
    n: usize,
    k: usize,
    dst: DstRows<T>,
    accumulate: bool,
    a: (&[T], usize, usize),
    b: (&[T], usize, usize),
    beta: f64,
) {
    if m == 0 || n == 0 {
        return;
    }
    let ldd = dst.row_stride;
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                std::slice::from_raw_parts_mut(dst.ptr.add(r * ldd), n).fill(T::of(0.0));
            }
        }
        return;
    }
    assert!(
        a.0.len() > (m - 1) * a.1 + (k - 1) * a.2,
        "attention: gemm lhs too small"
    );
    assert!(
        b.0.len() > (k - 1) * b.1 + (n - 1) * b.2,
        "attention: gemm rhs too small"
    );
    // SAFETY: the asserts above bound every element gemm reads inside its slice; the
    // caller vouches for the destination.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.ptr.0,
            1,
            ldd as isize,
            accumulate,
            a.0.as_ptr(),
            a.2 as isize,
            a.1 as isize,
            b.0.as_ptr(),
            b.2 as isize,
            b.1 as isize,
            T::of(1.0),
            T::of(beta),
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// Scores of query rows `i0..i0+rows` against keys `j0..j0+cols` of head `b`, with scale,
/// mask and the causal rule applied (masked entries are -inf), into `sc` (rows x cols).
#[allow(clippy::too_many_arguments)]
fn scores<T: KernelFloat>(
    q: AttnInput<T>,
    k: AttnInput<T>,
    d: &AttnDims,
    o: &AttnOptions<T>,
    b: usize,
    (i0, rows): (usize, usize),
    (j0, cols): (usize, usize),
    sc: &mut [T],
) {
    // SAFETY: `in_slice` checked that `sc` holds the rows x cols block.
    unsafe {
        gemm_into(
            rows,
            cols,
            d.e,
            in_slice(sc, rows, cols, cols),
            false,
            (q.at(b, i0), q.row_stride, 1),
            (k.at(b, j0), 1, k.row_stride),
            o.scale,
        )
    };
    for r in 0..rows {
        let i = i0 + r;
        let row = &mut sc[r * cols..(r + 1) * cols];
        if let Some(m) = &o.mask {
            let base = m.base[b] + i * m.row_stride;
            for (c, x) in row.iter_mut().enumerate() {
                *x = T::of(x.f64() + m.data[base + (j0 + c) * m.col_stride].f64());
            }
        }
        let visible = o.visible(i, d.s);
        for (c, x) in row.iter_mut().enumerate() {
            if j0 + c >= visible {
                *x = T::of(f64::NEG_INFINITY);
            }
        }
    }
}

/// `exp(x - m)` with `exp(-inf - -inf) = 0` (a fully masked row contributes nothing).
fn exp_shifted(x: f64, m: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        0.0
    } else {
        (x - m).exp()
    }
}

/// Forward: the output `(BH, L, Ev)`, laid out as `order` says, and each row's log-sum-exp
/// `(BH, L)` (saved for the backward; -inf for a row whose every key is masked, whose
/// output is 0 as in PyTorch's SDPA).
pub fn forward<T: KernelFloat>(
    q: AttnInput<T>,
    k: AttnInput<T>,
    v: AttnInput<T>,
    d: AttnDims,
    o: &AttnOptions<T>,
    order: Interleave,
) -> (Vec<T>, Vec<T>) {
    // Every output row is written once, at the end of its query block.
    let mut out = Results::new(d.bh, d.l, d.ev, order, false);
    let writer = out.writer();
    let mut lse = vec![T::of(f64::NEG_INFINITY); d.bh * d.l];
    // Chunk by head, then by query block within the head.
    lse.par_chunks_mut(d.l).enumerate().for_each(|(b, lse_h)| {
        lse_h
            .par_chunks_mut(BLOCK_Q)
            .enumerate()
            .for_each(|(qb, lse_blk)| {
                let i0 = qb * BLOCK_Q;
                // SAFETY: row i0 < l of problem b; this task alone writes rows
                // i0..i0 + lse_blk.len() of it.
                let out_blk = unsafe { writer.problem(b).at_row(i0) };
                forward_block([q, k, v], &d, o, b, i0, out_blk, lse_blk)
            });
    });
    (out.data, lse)
}

/// Lanes of the row loops below: one AVX-512 vector of f32. Independent accumulators let
/// the max and the sum vectorise (a float sum in one accumulator is a serial chain).
const LANES: usize = 16;

/// The largest score of a row (masked `-inf` scores included; NaN ignored, as `f64::max`).
fn row_max<T: KernelFloat>(row: &[T]) -> T {
    let mut lanes = [T::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (m, &x) in lanes.iter_mut().zip(c) {
            *m = if x > *m { x } else { *m };
        }
    }
    rest.iter()
        .chain(&lanes)
        .fold(T::NEG_INFINITY, |m, &x| if x > m { x } else { m })
}

/// `row[c] = e^(row[c] - m)` (0 for a masked score) and the sum of the results, in
/// [`LANES`] accumulators: the forward's online softmax over one key block.
struct ExpSum<'a, T> {
    row: &'a mut [T],
    m: T,
    sum: &'a mut T,
}

impl<T: KernelFloat> Loop for ExpSum<'_, T> {
    #[inline(always)]
    fn run(self) {
        let mut lanes = [T::ZERO; LANES];
        let mut chunks = self.row.chunks_exact_mut(LANES);
        for c in &mut chunks {
            for (acc, x) in lanes.iter_mut().zip(c.iter_mut()) {
                *x = x.exp_shifted(self.m);
                *acc += *x;
            }
        }
        let mut total = T::ZERO;
        for x in chunks.into_remainder() {
            *x = x.exp_shifted(self.m);
            total += *x;
        }
        *self.sum = lanes.iter().fold(total, |s, &a| s + a);
    }
}

/// The backward's row without dropout: `p = e^(score - lse)` (the attention weights) and
/// `dp = p * (dp - delta)` (the scores' gradient, `dS = P * (dP - D)`).
struct ProbsAndDscores<'a, T> {
    p: &'a mut [T],
    dp: &'a mut [T],
    lse: T,
    delta: T,
}

impl<T: KernelFloat> Loop for ProbsAndDscores<'_, T> {
    #[inline(always)]
    fn run(self) {
        for (p, dp) in self.p.iter_mut().zip(self.dp.iter_mut()) {
            *p = p.exp_shifted(self.lse);
            *dp = *p * (*dp - self.delta);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn forward_block<T: KernelFloat>(
    [q, k, v]: [AttnInput<T>; 3],
    d: &AttnDims,
    o: &AttnOptions<T>,
    b: usize,
    i0: usize,
    out_blk: DstRows<T>,
    lse_blk: &mut [T],
) {
    let rows = lse_blk.len();
    let mut m = vec![f64::NEG_INFINITY; rows];
    let mut l = vec![0.0f64; rows];
    let mut acc = vec![T::of(0.0); rows * d.ev];
    let mut sc = vec![T::of(0.0); rows * BLOCK_K];
    let last_visible = o.visible(i0 + rows - 1, d.s);
    let mut j0 = 0;
    while j0 < last_visible {
        let cols = BLOCK_K.min(d.s - j0);
        scores(
            q,
            k,
            d,
            o,
            b,
            (i0, rows),
            (j0, cols),
            &mut sc[..rows * cols],
        );
        for r in 0..rows {
            let row = &mut sc[r * cols..(r + 1) * cols];
            let m_new = m[r].max(row_max(row).f64());
            let alpha = exp_shifted(m[r], m_new);
            // The row's sum in T lanes (at most BLOCK_K terms, each <= 1).
            let mut sum = T::ZERO;
            wide(ExpSum {
                row,
                m: T::of(m_new),
                sum: &mut sum,
            });
            if o.dropout > 0.0 {
                // Dropout weights the values; the normaliser `l` sums the undropped weights.
                for (c, x) in row.iter_mut().enumerate() {
                    *x = T::of(x.f64() * o.keep(b, i0 + r, j0 + c, d));
                }
            }
            l[r] = l[r] * alpha + sum.f64();
            m[r] = m_new;
            if alpha != 1.0 {
                for a in &mut acc[r * d.ev..(r + 1) * d.ev] {
                    *a = T::of(a.f64() * alpha);
                }
            }
        }
        // SAFETY: `in_slice` checked that `acc` holds the rows x ev block.
        unsafe {
            gemm_into(
                rows,
                d.ev,
                cols,
                in_slice(&mut acc, rows, d.ev, d.ev),
                true,
                (&sc, cols, 1),
                (v.at(b, j0), v.row_stride, 1),
                1.0,
            )
        };
        j0 += cols;
    }
    for r in 0..rows {
        let inv = if l[r] > 0.0 { 1.0 / l[r] } else { 0.0 };
        // SAFETY: this task owns these rows of the output (see `forward`).
        let out_row = unsafe { std::slice::from_raw_parts_mut(out_blk.at_row(r).ptr.0, d.ev) };
        for (e, x) in out_row.iter_mut().enumerate() {
            *x = T::of(acc[r * d.ev + e].f64() * inv);
        }
        lse_blk[r] = T::of(if l[r] > 0.0 {
            m[r] + l[r].ln()
        } else {
            f64::NEG_INFINITY
        });
    }
}

/// Backward: gradients of q, k and v from the upstream gradient `dout` of the output, with
/// the forward's `out` and `lse`; each gradient laid out as `orders` says.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: KernelFloat>(
    [q, k, v]: [AttnInput<T>; 3],
    out: AttnInput<T>,
    lse: &[T],
    dout: AttnInput<T>,
    d: AttnDims,
    o: &AttnOptions<T>,
    orders: [Interleave; 3],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    // D_i = sum_e dout[i, e] * out[i, e]: the row term of softmax's backward.
    let delta: Vec<f64> = (0..d.bh * d.l)
        .map(|r| {
            let (a, b) = (
                &out.at(r / d.l, r % d.l)[..d.ev],
                &dout.at(r / d.l, r % d.l)[..d.ev],
            );
            a.iter().zip(b).map(|(x, y)| x.f64() * y.f64()).sum()
        })
        .collect();
    // dK and dV accumulate over query blocks; dQ over key blocks, except where one key
    // block writes each of its rows once.
    let one_key_block = d.s <= BLOCK_K;
    let mut dq = Results::new(d.bh, d.l, d.e, orders[0], !one_key_block);
    let mut dk = Results::new(d.bh, d.s, d.e, orders[1], true);
    let mut dv = Results::new(d.bh, d.s, d.ev, orders[2], true);
    let (dq_w, dk_w, dv_w) = (dq.writer(), dk.writer(), dv.writer());
    let ctx = BackwardCtx {
        q,
        k,
        v,
        lse,
        dout,
        delta: &delta,
        d,
        o,
    };
    // SAFETY (all three passes): each task writes only its own problem's rows, or its own
    // block of rows of one problem, of each result.
    if one_key_block {
        // One key block per head: each block's probabilities serve dK, dV and dQ at once
        // (the passes below would compute them twice), one task per head.
        (0..d.bh).into_par_iter().for_each(|b| unsafe {
            let dkv = (dk_w.problem(b), dv_w.problem(b));
            ctx.key_block(b, (0, d.s), dkv, Some(dq_w.problem(b)))
        });
        return (dq.data, dk.data, dv.data);
    }
    // dK and dV: one task per head and key block, looping over the query blocks.
    let key_blocks = d.s.div_ceil(BLOCK_K);
    (0..d.bh * key_blocks).into_par_iter().for_each(|t| unsafe {
        let (b, j0) = (t / key_blocks, (t % key_blocks) * BLOCK_K);
        let dkv = (dk_w.problem(b).at_row(j0), dv_w.problem(b).at_row(j0));
        ctx.key_block(b, (j0, BLOCK_K.min(d.s - j0)), dkv, None)
    });
    // dQ: one task per head and query block, looping over the key blocks.
    let query_blocks = d.l.div_ceil(BLOCK_Q);
    (0..d.bh * query_blocks)
        .into_par_iter()
        .for_each(|t| unsafe {
            let (b, i0) = (t / query_blocks, (t % query_blocks) * BLOCK_Q);
            let rows = BLOCK_Q.min(d.l - i0);
            ctx.query_block(b, (i0, rows), dq_w.problem(b).at_row(i0))
        });
    (dq.data, dk.data, dv.data)
}

/// What both backward passes read.
struct BackwardCtx<'a, T> {
    q: AttnInput<'a, T>,
    k: AttnInput<'a, T>,
    v: AttnInput<'a, T>,
    lse: &'a [T],
    dout: AttnInput<'a, T>,
    delta: &'a [f64],
    d: AttnDims,
    o: &'a AttnOptions<'a, T>,
}

impl<T: KernelFloat> BackwardCtx<'_, T> {
    /// For query rows `i0..+rows` and keys `j0..+cols` of head `b`: `p` = the attention
    /// weights after dropout and `ds` = the gradient of the (scaled, masked) scores.
    #[allow(clippy::too_many_arguments)]
    fn probs_and_dscores(
        &self,
        b: usize,
        (i0, rows): (usize, usize),
        (j0, cols): (usize, usize),
        p: &mut [T],
        dp: &mut [T],
    ) {
        let d = &self.d;
        scores(self.q, self.k, d, self.o, b, (i0, rows), (j0, cols), p);
        // dP' = dO V^T (the gradient of the dropped-out weights).
        // SAFETY: `in_slice` checked that `dp` holds the rows x cols block.
        unsafe {
            gemm_into(
                rows,
                cols,
                d.ev,
                in_slice(dp, rows, cols, cols),
                false,
                (self.dout.at(b, i0), self.dout.row_stride, 1),
                (self.v.at(b, j0), 1, self.v.row_stride),
                1.0,
            )
        };
        for r in 0..rows {
            let i = i0 + r;
            let lse = self.lse[b * d.l + i];
            let delta = self.delta[b * d.l + i];
            let (p, dp) = (
                &mut p[r * cols..(r + 1) * cols],
                &mut dp[r * cols..(r + 1) * cols],
            );
            if self.o.dropout == 0.0 {
                wide(ProbsAndDscores {
                    p,
                    dp,
                    lse,
                    delta: T::of(delta),
                });
                continue;
            }
            for (c, (p, dp)) in p.iter_mut().zip(dp.iter_mut()).enumerate() {
                let prob = p.exp_shifted(lse).f64();
                let keep = self.o.keep(b, i, j0 + c, d);
                // dS = P * (keep * dP' - D); P' = P * keep is what V was weighted by.
                *dp = T::of(prob * (keep * dp.f64() - delta));
                *p = T::of(prob * keep);
            }
        }
    }

    /// dK and dV of keys `j0..j0 + cols` of head `b` (written from their first rows on), over
    /// every query block that sees them; with `dq_h`, also head `b`'s whole dQ (when these
    /// are all of its keys).
    ///
    /// # Safety
    /// The destinations hold those rows, and no other task writes them meanwhile.
    unsafe fn key_block(
        &self,
        b: usize,
        (j0, cols): (usize, usize),
        (dk_blk, dv_blk): (DstRows<T>, DstRows<T>),
        dq_h: Option<DstRows<T>>,
    ) {
        let d = &self.d;
        let mut p = vec![T::of(0.0); BLOCK_Q * cols];
        let mut ds = vec![T::of(0.0); BLOCK_Q * cols];
        // Under the causal rule, query rows before j0 see none of these keys.
        let first_q = if self.o.causal { j0 } else { 0 };
        let mut i0 = first_q - first_q % BLOCK_Q;
        while i0 < d.l {
            let rows = BLOCK_Q.min(d.l - i0);
            let (p, ds) = (&mut p[..rows * cols], &mut ds[..rows * cols]);
            self.probs_and_dscores(b, (i0, rows), (j0, cols), p, ds);
            // dV += P'^T dO ; dK += scale * dS^T Q.
            gemm_into(
                cols,
                d.ev,
                rows,
                dv_blk,
                true,
                (p, 1, cols),
                (self.dout.at(b, i0), self.dout.row_stride, 1),
                1.0,
            );
            gemm_into(
                cols,
                d.e,
                rows,
                dk_blk,
                true,
                (ds, 1, cols),
                (self.q.at(b, i0), self.q.row_stride, 1),
                self.o.scale,
            );
            if let Some(dq) = dq_h {
                // dQ = scale * dS K.
                gemm_into(
                    rows,
                    d.e,
                    cols,
                    dq.at_row(i0),
                    false,
                    (ds, cols, 1),
                    (self.k.at(b, j0), self.k.row_stride, 1),
                    self.o.scale,
                );
            }
            i0 += rows;
        }
    }

    /// dQ of query rows `i0..i0 + rows` of head `b`, over every key block they see.
    ///
    /// # Safety
    /// `dq_blk` holds those rows, and no other task writes them meanwhile.
    unsafe fn query_block(&self, b: usize, (i0, rows): (usize, usize), dq_blk: DstRows<T>) {
        let d = &self.d;
        let mut p = vec![T::of(0.0); rows * BLOCK_K];
        let mut ds = vec![T::of(0.0); rows * BLOCK_K];
        let last_visible = self.o.visible(i0 + rows - 1, d.s);
        let mut j0 = 0;
        while j0 < last_visible {
            let cols = BLOCK_K.min(d.s - j0);
            let (p, ds) = (&mut p[..rows * cols], &mut ds[..rows * cols]);
            self.probs_and_dscores(b, (i0, rows), (j0, cols), p, ds);
            // dQ += scale * dS K.
            gemm_into(
                rows,
                d.e,
                cols,
                dq_blk,
                true,
                (ds, cols, 1),
                (self.k.at(b, j0), self.k.row_stride, 1),
                self.o.scale,
            );
            j0 += cols;
        }
    }
}
