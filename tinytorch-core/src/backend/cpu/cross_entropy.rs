//! Fused cross-entropy with class-index targets on the CPU, over a contiguous `(rows, C)`
//! input of logits. The forward finds each row's max, then the sum of `exp(x - max)`, and
//! keeps only those two numbers per row; it never writes a log-softmax or a one-hot. With
//! `lse = max + ln(sum)`, the (weighted, smoothed) target distribution of a row with target
//! `t` is `q_j = w_j ((1 - eps) [j = t] + eps / C)`, and
//!
//! ```text
//! loss = sum_j q_j (lse - x_j)
//!      = (1 - eps) w_t (lse - x_t) + eps / C * (sum(w) ln(sum) + sum_j w_j (max - x_j))
//! dx_j = g * (softmax_j * sum(q) - q_j)
//!      = exp(x_j - max) * (g sum(q) / sum)  -  g eps / C * w_j  -  [j = t] g (1 - eps) w_t
//! ```
//!
//! (`w = 1` without class weights, so `sum(q) = 1`.) The smoothing term is written with
//! `max - x_j >= 0` rather than `lse * sum(w) - sum(w x)`, which would cancel catastrophically
//! for large logits. Rows whose target is `ignore_index` contribute nothing and get a zero
//! gradient. The backward recomputes `exp(x - max)` from the saved input, so the op keeps
//! `N` statistics rather than an `N x C` tensor.
//!
//! The exponentials dominate the cost, so they are computed a tile of [`TILE`] elements at a
//! time: `x - max` of several short rows (or a block of one long row) is written to a scratch
//! tile in L1, padded to a whole number of vectors, and `exp` runs over the tile in one
//! plain loop, which LLVM vectorises without a scalar remainder. Per row, `exp` would run
//! mostly in that scalar remainder for the short rows of classifiers (10 to 63 classes).
//! f32 uses the vectorisable `exp_f32` (about 2 ulp); on x86-64 the loops are also compiled
//! for AVX-512 and for AVX2, with an FMA form of the same `exp`, and the best the CPU has is
//! picked at run time (the baseline target only allows 4-wide SSE, without FMA). Sums run in 8 independent lanes in `T` within a tile and
//! are added in f64 across tiles, so that rows of 50k classes stay accurate. Rows are spread
//! over rayon threads only when the input is large enough to pay for the hand-off.

#[cfg(target_arch = "x86_64")]
use super::fast_math::{has_avx2_fma, has_avx512};
use super::float::KernelFloat;
use rayon::prelude::*;

/// Elements per rayon task; inputs of at most two tasks' worth stay on the calling thread
/// (below that, waking the pool costs more than the work).
const TASK_ELEMS: usize = 32 * 1024;
/// Independent accumulators of the max and the sums (one AVX2 register of f32).
const LANES: usize = 8;
/// Elements per tile of exponentials (4 KiB of f32: the tile stays in L1). A multiple of
/// [`VECTOR_PAD`].
const TILE: usize = 1024;
/// Tiles are padded to a multiple of this many elements: the vectorised `exp` loop's step
/// (16 lanes of AVX-512, unrolled 4 times), so that it leaves no scalar remainder.
const VECTOR_PAD: usize = 64;

/// The loss's settings, shared by forward and backward.
#[derive(Clone, Copy)]
pub struct Params<'a, T> {
    /// Number of classes `C` (the row length), at least 1.
    pub classes: usize,
    /// One weight per class, or `None` for all ones.
    pub weight: Option<&'a [T]>,
    /// Rows whose target equals this are skipped.
    pub ignore_index: i64,
    /// `eps` in `[0, 1]`: the target is mixed with the uniform distribution.
    pub label_smoothing: f64,
}

impl<T: KernelFloat> Params<'_, T> {
    /// The target class of a row, or `None` when the row is ignored. Targets must have been
    /// checked to be in `0..C` or equal to `ignore_index`.
    #[inline(always)]
    fn class(&self, target: i64) -> Option<usize> {
        (target != self.ignore_index).then_some(target as usize)
    }

    /// `w_t`, the weight of class `t`.
    #[inline(always)]
    fn weight_of(&self, t: usize) -> f64 {
        self.weight.map_or(1.0, |w| w[t].f64())
    }

    /// `sum(q)` of a row with target `t`: `(1 - eps) w_t + eps / C * sum(w)`.
    #[inline(always)]
    fn q_total(&self, t: usize, weight_sum: f64) -> f64 {
        let eps = self.label_smoothing;
        (1.0 - eps) * self.weight_of(t) + eps / self.classes as f64 * weight_sum
    }

    /// `sum(w)` (`C` without weights).
    fn weight_sum(&self) -> f64 {
        self.weight
            .map_or(self.classes as f64, |w| w.iter().map(|v| v.f64()).sum())
    }
}

/// What the backward needs of one row: its max and `sum_j exp(x_j - max)` (unset for
/// ignored rows).
#[derive(Clone, Copy, Debug)]
pub struct RowStats<T> {
    /// `max_j x_j`.
    pub max: T,
    /// `sum_j exp(x_j - max)`, at least 1 for a finite row.
    pub sum: f64,
}

/// The forward's results.
pub struct Forward<T> {
    /// Each row's loss (0 for ignored rows), in f64 so that reductions add unrounded values.
    pub losses: Vec<f64>,
    /// Each row's statistics, for the backward.
    pub stats: Vec<RowStats<T>>,
    /// The `Mean` denominator: the total weight `w_t` of the rows not ignored (their count
    /// without class weights).
    pub weight_total: f64,
}

/// The upstream gradient of each row's loss.
#[derive(Clone, Copy)]
pub enum RowGrad<'a, T> {
    /// The same value for every row (`Sum`, or `Mean` already divided by its denominator).
    Uniform(f64),
    /// One value per row (reduction `None`).
    PerRow(&'a [T]),
}

impl<T: KernelFloat> RowGrad<'_, T> {
    #[inline(always)]
    fn at(&self, row: usize) -> f64 {
        match self {
            RowGrad::Uniform(g) => *g,
            RowGrad::PerRow(g) => g[row].f64(),
        }
    }
}

/// Rows per task: at least one, about `TASK_ELEMS` elements.
fn rows_per_task(classes: usize) -> usize {
    (TASK_ELEMS / classes.max(1)).max(1)
}

/// True when the work is large enough to spread over threads.
fn parallel(elems: usize) -> bool {
    elems > 2 * TASK_ELEMS && rayon::current_num_threads() > 1
}

/// Whole rows per tile: as many as fit in [`TILE`], at least one (a longer row is then
/// processed in blocks of `TILE`).
fn rows_per_tile(classes: usize) -> usize {
    (TILE / classes).max(1)
}

/// What every task of one call shares.
#[derive(Clone, Copy)]
struct Ctx<'a, T> {
    /// The logits, `rows x C`.
    x: &'a [T],
    /// One target per row.
    targets: &'a [i64],
    p: Params<'a, T>,
    /// `sum(w)`.
    weight_sum: f64,
}

/// Every target is a class in `0..classes` or `ignore_index`: an index error naming the
/// first that is not.
pub fn check_targets(
    targets: &[i64],
    classes: usize,
    ignore_index: i64,
) -> crate::error::Result<()> {
    let c = classes as i64;
    match targets
        .iter()
        .find(|&&v| v != ignore_index && !(0..c).contains(&v))
    {
        None => Ok(()),
        Some(bad) => Err(crate::error::Error::index(
            "cross_entropy",
            format!("target {bad} is out of bounds for {classes} classes"),
        )),
    }
}

/// Forward over the contiguous logits `x` (`rows x C`) and one target per row (each in
/// `0..C` or `ignore_index`, checked by the caller).
pub fn forward<T: KernelFloat>(x: &[T], targets: &[i64], p: Params<T>) -> Forward<T> {
    let c = p.classes;
    assert!(
        c > 0 && x.len() == targets.len() * c,
        "cross_entropy: bad row length"
    );
    let rows = targets.len();
    let mut losses = vec![0.0f64; rows];
    let mut stats = vec![
        RowStats {
            max: T::ZERO,
            sum: 0.0,
        };
        rows
    ];
    let ctx = Ctx {
        x,
        targets,
        p,
        weight_sum: p.weight_sum(),
    };
    if parallel(x.len()) {
        let per = rows_per_task(c);
        losses
            .par_chunks_mut(per)
            .zip(stats.par_chunks_mut(per))
            .enumerate()
            .for_each(|(ti, (l, s))| forward_rows(&ctx, ti * per, l, s));
    } else {
        forward_rows(&ctx, 0, &mut losses, &mut stats);
    }
    let weight_total = targets
        .iter()
        .filter_map(|&t| p.class(t))
        .map(|t| p.weight_of(t))
        .sum();
    Forward {
        losses,
        stats,
        weight_total,
    }
}

/// Backward: `dx` (`rows x C`) from the saved logits, targets and row statistics and the
/// upstream gradient of each row's loss.
pub fn backward<T: KernelFloat>(
    x: &[T],
    targets: &[i64],
    p: Params<T>,
    stats: &[RowStats<T>],
    g: RowGrad<T>,
) -> Vec<T> {
    let c = p.classes;
    assert!(
        c > 0 && x.len() == targets.len() * c,
        "cross_entropy: bad row length"
    );
    // Every element is written below (ignored rows with zeros), so a stale buffer will do
    // (zeroing it first was a single-threaded memset, 9% of a 4096 x 1000 loss's step).
    let mut dx = super::allocator::scratch::<T>(x.len());
    let ctx = Ctx {
        x,
        targets,
        p,
        weight_sum: p.weight_sum(),
    };
    if parallel(x.len()) {
        let per = rows_per_task(c);
        dx.par_chunks_mut(per * c)
            .enumerate()
            .for_each(|(ti, d)| backward_rows(&ctx, ti * per, d, stats, g));
    } else {
        backward_rows(&ctx, 0, &mut dx, stats, g);
    }
    dx
}

/// The forward of the rows `r0..` that `losses` covers, compiled for the best SIMD level
/// the CPU has.
fn forward_rows<T: KernelFloat>(
    ctx: &Ctx<T>,
    r0: usize,
    losses: &mut [f64],
    stats: &mut [RowStats<T>],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU supports the features, checked just above.
            return unsafe { simd::forward_rows_avx512(ctx, r0, losses, stats) };
        }
        if has_avx2_fma() {
            // SAFETY: as above.
            return unsafe { simd::forward_rows_avx2(ctx, r0, losses, stats) };
        }
    }
    forward_rows_portable::<T, false>(ctx, r0, losses, stats)
}

/// The backward of the rows `r0..` that `dx` covers, compiled for the best SIMD level the
/// CPU has.
fn backward_rows<T: KernelFloat>(
    ctx: &Ctx<T>,
    r0: usize,
    dx: &mut [T],
    stats: &[RowStats<T>],
    g: RowGrad<T>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU supports the features, checked just above.
            return unsafe { simd::backward_rows_avx512(ctx, r0, dx, stats, g) };
        }
        if has_avx2_fma() {
            // SAFETY: as above.
            return unsafe { simd::backward_rows_avx2(ctx, r0, dx, stats, g) };
        }
    }
    backward_rows_portable::<T, false>(ctx, r0, dx, stats, g)
}

/// The portable bodies compiled with wider vector instructions enabled.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::*;

    /// [`forward_rows_portable`] with AVX-512.
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn forward_rows_avx512<T: KernelFloat>(
        ctx: &Ctx<T>,
        r0: usize,
        losses: &mut [f64],
        stats: &mut [RowStats<T>],
    ) {
        forward_rows_portable::<T, true>(ctx, r0, losses, stats)
    }

    /// [`forward_rows_portable`] with AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn forward_rows_avx2<T: KernelFloat>(
        ctx: &Ctx<T>,
        r0: usize,
        losses: &mut [f64],
        stats: &mut [RowStats<T>],
    ) {
        forward_rows_portable::<T, true>(ctx, r0, losses, stats)
    }

    /// [`backward_rows_portable`] with AVX-512.
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn backward_rows_avx512<T: KernelFloat>(
        ctx: &Ctx<T>,
        r0: usize,
        dx: &mut [T],
        stats: &[RowStats<T>],
        g: RowGrad<T>,
    ) {
        backward_rows_portable::<T, true>(ctx, r0, dx, stats, g)
    }

    /// [`backward_rows_portable`] with AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn backward_rows_avx2<T: KernelFloat>(
        ctx: &Ctx<T>,
        r0: usize,
        dx: &mut [T],
        stats: &[RowStats<T>],
        g: RowGrad<T>,
    ) {
        backward_rows_portable::<T, true>(ctx, r0, dx, stats, g)
    }
}

/// The forward of the rows `r0..` that `losses` covers (a task's rows), a tile at a time:
/// each row's max, then `exp(x - max)` of the tile and each row's sum, then each row's loss.
#[inline(always)]
fn forward_rows_portable<T: KernelFloat, const FMA: bool>(
    ctx: &Ctx<T>,
    r0: usize,
    losses: &mut [f64],
    stats: &mut [RowStats<T>],
) {
    let (c, p) = (ctx.p.classes, ctx.p);
    let x = &ctx.x[r0 * c..(r0 + losses.len()) * c];
    let per_tile = rows_per_tile(c);
    let mut tile = vec![T::ZERO; TILE];
    let (mut maxes, mut sums) = (vec![T::ZERO; per_tile], vec![0.0f64; per_tile]);
    for (gi, group) in x.chunks(per_tile * c).enumerate() {
        let n = group.len() / c;
        for (m, row) in maxes.iter_mut().zip(group.chunks_exact(c)) {
            *m = row_max(row);
        }
        // sum_j exp(x_j - max) per row: all rows of the group in one tile, or a long row
        // one block at a time.
        if c <= TILE {
            let e = exp_shifted::<T, FMA>(group, &maxes[..n], c, &mut tile);
            for (s, er) in sums.iter_mut().zip(e.chunks_exact(c)) {
                *s = lane_sum(er, er, |v, _| v);
            }
        } else if p.class(ctx.targets[r0 + gi]).is_some() {
            // A plain loop, not an iterator chain with a closure: `Iterator::fold` need
            // not be inlined into the SIMD-compiled caller, and outside it `exp` would be
            // compiled without vectors or FMA (`mul_add` then calls libm: 10x slower).
            sums[0] = 0.0;
            for block in group.chunks(TILE) {
                let e = exp_shifted::<T, FMA>(block, &maxes[..1], block.len(), &mut tile);
                sums[0] += lane_sum(e, e, |v, _| v);
            }
        }
        for (k, row) in group.chunks_exact(c).enumerate() {
            let i = gi * per_tile + k;
            let Some(t) = p.class(ctx.targets[r0 + i]) else {
                continue; // ignored: loss 0, statistics unused
            };
            let (max, sum) = (maxes[k], sums[k]);
            losses[i] = row_loss(row, t, max, sum, ctx);
            stats[i] = RowStats { max, sum };
        }
    }
}

/// The loss of one row with target `t`, from its max and `sum_j exp(x_j - max)`.
#[inline(always)]
fn row_loss<T: KernelFloat>(row: &[T], t: usize, max: T, sum: f64, ctx: &Ctx<T>) -> f64 {
    let (p, eps) = (ctx.p, ctx.p.label_smoothing);
    let ln_sum = sum.ln();
    // lse - x_t = (max - x_t) + ln(sum): both terms are small, so nothing cancels.
    let mut l = (1.0 - eps) * p.weight_of(t) * ((max.f64() - row[t].f64()) + ln_sum);
    if eps > 0.0 {
        // sum_j w_j (lse - x_j) = sum(w) ln(sum) + sum_j w_j (max - x_j).
        let spread = match p.weight {
            None => lane_sum(row, row, |v, _| max - v),
            Some(w) => lane_sum(row, w, |v, wj| wj * (max - v)),
        };
        l += eps / p.classes as f64 * (ctx.weight_sum * ln_sum + spread);
    }
    l
}

/// The backward of the rows `r0..` that `dx` covers (a task's rows), a tile at a time:
/// `exp(x - max)` of the tile, then each row's `dx` from it.
#[inline(always)]
fn backward_rows_portable<T: KernelFloat, const FMA: bool>(
    ctx: &Ctx<T>,
    r0: usize,
    dx: &mut [T],
    stats: &[RowStats<T>],
    g: RowGrad<T>,
) {
    let c = ctx.p.classes;
    let x = &ctx.x[r0 * c..r0 * c + dx.len()];
    let mut tile = vec![T::ZERO; TILE];
    if c <= TILE {
        // Several whole rows per tile of exponentials.
        let per_tile = rows_per_tile(c);
        let mut maxes = vec![T::ZERO; per_tile];
        for (gi, (group, dgroup)) in x
            .chunks(per_tile * c)
            .zip(dx.chunks_mut(per_tile * c))
            .enumerate()
        {
            let first = r0 + gi * per_tile;
            let n = group.len() / c;
            for (k, m) in maxes[..n].iter_mut().enumerate() {
                *m = stats[first + k].max;
            }
            let e = exp_shifted::<T, FMA>(group, &maxes[..n], c, &mut tile);
            for (k, (er, d)) in e
                .chunks_exact(c)
                .zip(dgroup.chunks_exact_mut(c))
                .enumerate()
            {
                match row_coefs(ctx, first + k, stats, g) {
                    Some(rc) => {
                        scale_into(er, d, rc.a, rc.b, ctx.p.weight);
                        d[rc.target] = d[rc.target] - rc.target_share;
                    }
                    None => d.fill(T::ZERO),
                }
            }
        }
    } else {
        // One long row at a time, a tile-sized block of it at a time.
        for (k, (row, d)) in x.chunks_exact(c).zip(dx.chunks_exact_mut(c)).enumerate() {
            let r = r0 + k;
            let Some(rc) = row_coefs(ctx, r, stats, g) else {
                d.fill(T::ZERO);
                continue;
            };
            let max = [stats[r].max];
            for (bi, (block, dblock)) in row.chunks(TILE).zip(d.chunks_mut(TILE)).enumerate() {
                let e = exp_shifted::<T, FMA>(block, &max, block.len(), &mut tile);
                let w = ctx.p.weight.map(|w| &w[bi * TILE..bi * TILE + block.len()]);
                scale_into(e, dblock, rc.a, rc.b, w);
            }
            d[rc.target] = d[rc.target] - rc.target_share;
        }
    }
}

/// The per-row constants of `dx_j = exp(x_j - max) * a - b * w_j - [j = t] target_share`.
struct RowCoefs<T> {
    a: T,
    b: T,
    target: usize,
    target_share: T,
}

/// The constants of row `r`, or `None` when it is ignored (its gradient is zero).
#[inline(always)]
fn row_coefs<T: KernelFloat>(
    ctx: &Ctx<T>,
    r: usize,
    stats: &[RowStats<T>],
    g: RowGrad<T>,
) -> Option<RowCoefs<T>> {
    let p = ctx.p;
    let t = p.class(ctx.targets[r])?;
    let (gr, eps) = (g.at(r), p.label_smoothing);
    Some(RowCoefs {
        // softmax_j * sum(q) * g = exp(x_j - max) * g sum(q) / sum.
        a: T::of(gr * p.q_total(t, ctx.weight_sum) / stats[r].sum),
        // The uniform part of q, times g (and w_j).
        b: T::of(gr * eps / p.classes as f64),
        target: t,
        target_share: T::of(gr * (1.0 - eps) * p.weight_of(t)),
    })
}

/// `d_j = e_j * a - b * w_j` (`w_j = 1` without weights).
#[inline(always)]
fn scale_into<T: KernelFloat>(e: &[T], d: &mut [T], a: T, b: T, w: Option<&[T]>) {
    match w {
        None => {
            for (o, &v) in d.iter_mut().zip(e) {
                *o = v * a - b;
            }
        }
        Some(w) => {
            for ((o, &v), &wj) in d.iter_mut().zip(e).zip(w) {
                *o = v * a - b * wj;
            }
        }
    }
}

/// `exp(x - max)` of `x` (rows of `width` elements, one max per row) written to the start
/// of `tile`, which is padded with zeros to a multiple of [`VECTOR_PAD`] so that the `exp`
/// loop has no scalar remainder. Returns the exponentials.
#[inline(always)]
fn exp_shifted<'t, T: KernelFloat, const FMA: bool>(
    x: &[T],
    maxes: &[T],
    width: usize,
    tile: &'t mut [T],
) -> &'t [T] {
    let n = x.len();
    for ((o, row), &m) in tile[..n]
        .chunks_exact_mut(width)
        .zip(x.chunks_exact(width))
        .zip(maxes)
    {
        for (e, &v) in o.iter_mut().zip(row) {
            *e = v - m;
        }
    }
    let padded = n.next_multiple_of(VECTOR_PAD);
    tile[n..padded].fill(T::ZERO);
    for v in tile[..padded].iter_mut() {
        *v = v.fast_exp::<FMA>();
    }
    &tile[..n]
}

/// Maximum of a row in [`LANES`] lanes. NaN-blind: a row holding NaN still gets a NaN
/// loss, because `exp(NaN - max)` poisons the sum.
#[inline(always)]
fn row_max<T: KernelFloat>(v: &[T]) -> T {
    let max = |m: T, x: T| if x > m { x } else { m };
    let mut acc = [T::NEG_INFINITY; LANES];
    let chunks = v.chunks_exact(LANES);
    let rest = chunks.remainder();
    for ch in chunks {
        for l in 0..LANES {
            acc[l] = max(acc[l], ch[l]);
        }
    }
    rest.iter()
        .chain(acc.iter())
        .fold(T::NEG_INFINITY, |m, &x| max(m, x))
}

/// `sum_j f(a_j, b_j)` over two slices of one length: [`LANES`] lanes in `T` per block of
/// [`TILE`] elements, blocks added in f64.
#[inline(always)]
fn lane_sum<T: KernelFloat>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> f64 {
    let mut total = 0.0f64;
    for (ba, bb) in a.chunks(TILE).zip(b.chunks(TILE)) {
        let mut acc = [T::ZERO; LANES];
        let (ca, cb) = (ba.chunks_exact(LANES), bb.chunks_exact(LANES));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for l in 0..LANES {
                acc[l] += f(x[l], y[l]);
            }
        }
        // The tail one per lane (independent adds), then the lanes pairwise in f64.
        for (l, (&x, &y)) in ra.iter().zip(rb).enumerate() {
            acc[l] += f(x, y);
        }
        let q = [0, 1, 2, 3].map(|l| acc[l].f64() + acc[l + 4].f64());
        total += (q[0] + q[2]) + (q[1] + q[3]);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loss and gradient of one row written out in f64 from the definition
    /// `loss = -sum_j q_j log_softmax_j`, `dx = g (softmax sum(q) - q)`.
    fn reference(row: &[f64], t: usize, w: Option<&[f64]>, eps: f64, g: f64) -> (f64, Vec<f64>) {
        let c = row.len();
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        let wj = |j: usize| w.map_or(1.0, |w| w[j]);
        let q: Vec<f64> = (0..c)
            .map(|j| wj(j) * ((1.0 - eps) * (j == t) as u8 as f64 + eps / c as f64))
            .collect();
        let loss = (0..c).map(|j| q[j] * (lse - row[j])).sum();
        let total: f64 = q.iter().sum();
        let dx = (0..c)
            .map(|j| g * ((row[j] - lse).exp() * total - q[j]))
            .collect();
        (loss, dx)
    }

    /// The kernel in `T` against [`reference`] on a grid of logits in about [-3.5, 3.5],
    /// with an ignored row, for no weights, weights, and weights with smoothing.
    fn check<T: KernelFloat>(rows: usize, c: usize, tol: f64) {
        let x: Vec<f64> = (0..rows * c)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.07)
            .collect();
        let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
        let targets: Vec<i64> = (0..rows)
            .map(|r| if r == 1 { -100 } else { (r * 7 % c) as i64 })
            .collect();
        let w: Vec<f64> = (0..c).map(|j| 0.5 + j as f64 * 0.1).collect();
        let wt: Vec<T> = w.iter().map(|&v| T::of(v)).collect();
        for (weighted, eps) in [(false, 0.0), (true, 0.0), (true, 0.3)] {
            let p = Params {
                classes: c,
                weight: weighted.then_some(&wt[..]),
                ignore_index: -100,
                label_smoothing: eps,
            };
            let fwd = forward(&xt, &targets, p);
            let g: Vec<T> = (0..rows).map(|r| T::of(0.5 + r as f64 * 0.01)).collect();
            let dx = backward(&xt, &targets, p, &fwd.stats, RowGrad::PerRow(&g));
            for r in 0..rows {
                let got = (fwd.losses[r], &dx[r * c..(r + 1) * c]);
                if targets[r] < 0 {
                    assert_eq!(got.0, 0.0);
                    assert!(got.1.iter().all(|&d| d.f64() == 0.0));
                    continue;
                }
                let row = &x[r * c..(r + 1) * c];
                let weight = weighted.then_some(&w[..]);
                let (loss, want) = reference(row, targets[r] as usize, weight, eps, g[r].f64());
                assert!(
                    (got.0 - loss).abs() <= tol * (1.0 + loss.abs()),
                    "{} vs {loss}",
                    got.0
                );
                for (d, e) in got.1.iter().zip(&want) {
                    assert!((d.f64() - e).abs() <= tol, "{} vs {e}", d.f64());
                }
            }
        }
    }

    #[test]
    fn fma_exp_matches_f64_exp_within_about_two_ulp() {
        super::super::fast_math::tests::assert_exp_accurate(super::super::fast_math::exp_f32_fma);
    }

    #[test]
    fn portable_body_matches_the_dispatched_one() {
        // The CPU running the tests takes the AVX paths; the portable body (no FMA) is what
        // other CPUs run, so compare the two directly (37 classes: several rows per tile;
        // 1500: blocks of a long row).
        for c in [37usize, 1500] {
            let rows = 5;
            let x: Vec<f32> = (0..rows * c)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) * 0.09)
                .collect();
            let targets: Vec<i64> = (0..rows as i64).map(|r| (r * 11) % c as i64).collect();
            let p = Params {
                classes: c,
                weight: None,
                ignore_index: -100,
                label_smoothing: 0.1,
            };
            let fwd = forward(&x, &targets, p);
            let ctx = Ctx {
                x: &x,
                targets: &targets,
                p,
                weight_sum: p.weight_sum(),
            };
            let (mut losses, mut stats) = (vec![0.0; rows], fwd.stats.clone());
            forward_rows_portable::<f32, false>(&ctx, 0, &mut losses, &mut stats);
            for (a, b) in losses.iter().zip(&fwd.losses) {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
            }
            let g = RowGrad::Uniform(0.7);
            let dx = backward(&x, &targets, p, &fwd.stats, g);
            let mut dx_portable = vec![0.0f32; x.len()];
            backward_rows_portable::<f32, false>(&ctx, 0, &mut dx_portable, &fwd.stats, g);
            for (a, b) in dx_portable.iter().zip(&dx) {
                assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn matches_reference_on_one_and_many_threads() {
        // 37 classes: several rows per tile, lanes and a tail; 3000 rows: the parallel
        // path; 2500 classes: rows longer than a tile, in blocks. Row 1 is ignored.
        for (rows, c) in [(3usize, 37usize), (3000, 37), (4, 2500)] {
            check::<f64>(rows, c, 1e-12);
            // f32: exp_f32 (2 ulp) and f32 rounding of the inputs' differences.
            check::<f32>(rows, c, 1e-5);
        }
    }
}
