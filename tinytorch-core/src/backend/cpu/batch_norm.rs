//! Fused training-mode batch normalisation on the CPU, over a contiguous `(N, C, S)` input
//! (`S` = the product of the spatial dims, 1 for `(N, C)`). The input is `N * C` contiguous
//! rows of `S` elements, row `r` belonging to channel `r % C`. Statistics are per channel,
//! over `M = N * S` elements:
//!
//! ```text
//! forward:  mean = sum(x) / M,  var = sum((x - mean)^2) / M,  rstd = 1 / sqrt(var + eps)
//!           y = (x - mean) * scale + b,  scale = w * rstd
//! backward: dbias = sum(g),  dweight = rstd * sum(g * (x - mean))
//!           dx = w * rstd * (g - dbias / M - (x - mean) * rstd^2 * sum(g * (x - mean)) / M)
//! ```
//!
//! `x - mean` is taken before scaling (as PyTorch's composite path does), not folded into
//! `x * scale + (b - mean * scale)`: when the spread is small beside the mean (a constant
//! channel, images with a large offset), the folded form's two large terms cancel and the
//! result keeps only the rounding error of `x * scale`.
//!
//! which is the gradient through the batch statistics too. The forward reads the input from
//! memory twice (statistics, normalise) and writes once; the backward reads input and
//! gradient twice and writes once, where the composite of tensor ops makes about ten
//! full-size temporaries. Per-channel sums are accumulated in f64 from 8-lane partial sums
//! of each row; the rows are split into fixed groups whose partial sums merge in order, so
//! the result does not depend on the number of threads.
//!
//! With `relu` the forward's output is `max(y, 0)` (`batch_norm(...).relu()` in one pass),
//! and the backward takes `g` only where the pre-activation `(x - mean) * scale + b` was positive,
//! recomputing it from `x` with the forward's own operations (so the same bits): the ReLU's
//! forward pass and its backward pass over memory disappear. With a residual (a residual
//! block's `relu(bn(x) + shortcut)`), the output is `max(y + r, 0)` in the same pass, and the
//! backward expects `g` already through the ReLU (whose mask `x` alone no longer gives: the
//! caller takes it from the output).

use super::float::KernelFloat;
use super::norm::lane_sum;
use super::strided::{wide, Map1};
use super::unary::{FloatStore, Widen};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Elements per rayon task; problems of at most two tasks stay on the calling thread.
const TASK_ELEMS: usize = 16 * 1024;

/// The shape of the problem: `n * c` rows of `s` elements.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub n: usize,
    pub c: usize,
    pub s: usize,
}

impl Dims {
    fn rows(self) -> usize {
        self.n * self.c
    }
    /// Elements per channel.
    fn count(self) -> f64 {
        (self.n * self.s) as f64
    }
    /// Rows per task: whole rows, about `TASK_ELEMS` elements.
    fn rows_per_task(self) -> usize {
        (TASK_ELEMS / self.s.max(1)).max(1)
    }
    fn parallel(self) -> bool {
        self.rows() * self.s > 2 * TASK_ELEMS && rayon::current_num_threads() > 1
    }
}

/// What the forward's output pass applies after `y = (x - mean) * scale + b`.
#[derive(Clone, Copy)]
pub enum Then<'a, S> {
    /// Nothing: `y`.
    Nothing,
    /// `max(y, 0)`, whose backward [`backward`] includes.
    Relu,
    /// `max(y + r, 0)` with `r` laid out like `x`; [`backward`] then takes `g` through the
    /// ReLU already.
    AddRelu(&'a [S]),
}

/// What the backward needs of the forward, per channel.
pub struct Stats<T> {
    /// Batch mean.
    pub mean: Vec<T>,
    /// `1 / sqrt(var + eps)`.
    pub rstd: Vec<T>,
    /// Biased batch variance (for the running statistics).
    pub var: Vec<T>,
    /// The forward's `y = (x - mean) * scale + shift` per channel (for a fused ReLU's mask):
    /// `scale = w * rstd`, `shift` the bias.
    scale: Vec<T>,
    shift: Vec<T>,
    /// Whether the backward gates `g` by the ReLU of the recomputed pre-activation.
    relu: bool,
}

/// One task's row buffers for a half-precision input: its rows widened to the compute type,
/// and an output row before rounding. They stay empty for f32 and f64, which are read and
/// written in place.
struct Scratch<C> {
    x: Vec<C>,
    g: Vec<C>,
    r: Vec<C>,
    out: Vec<MaybeUninit<C>>,
}

impl<C> Scratch<C> {
    fn new() -> Self {
        Scratch {
            x: Vec::new(),
            g: Vec::new(),
            r: Vec::new(),
            out: Vec::new(),
        }
    }
}

/// `src` in the compute type: itself when it is stored in that type, else widened into `buf`.
fn widened<'a, S: FloatStore>(src: &'a [S], buf: &'a mut Vec<S::C>) -> &'a [S::C]
where
    S::C: KernelFloat,
{
    if let Some(row) = S::as_compute(src) {
        return row;
    }
    buf.clear();
    buf.resize(src.len(), <S::C as KernelFloat>::ZERO);
    wide(Widen { dst: buf, src });
    buf
}

/// A row's sum, and its sum of squares about its own mean (rounded to `T`) less what that
/// rounding adds: the statistics of the forward.
fn stat_row<T: KernelFloat>(xr: &[T]) -> [f64; 2] {
    let len = xr.len() as f64;
    let sum = lane_sum(xr, xr, |v, _| v).f64();
    let row_mean = sum / len;
    let m = T::of(row_mean);
    let m2 = lane_sum(xr, xr, |v, _| (v - m) * (v - m)).f64();
    [sum, m2 - len * (row_mean - m.f64()).powi(2)]
}

/// A row's `sum(g')` and `sum(g' * (x - mean))`, `g'` the gradient through the fused ReLU's
/// mask `live = (scale, shift)` when there was one: the sums of the backward.
fn grad_row<T: KernelFloat>(gr: &[T], xr: &[T], mean: T, live: Option<(T, T)>) -> [f64; 2] {
    match live {
        Some((sc, sh)) => [
            lane_sum(gr, xr, |gv, v| gate(gv, v, mean, sc, sh)).f64(),
            lane_sum(gr, xr, |gv, v| gate(gv, v, mean, sc, sh) * (v - mean)).f64(),
        ],
        None => [
            lane_sum(gr, gr, |gv, _| gv).f64(),
            lane_sum(gr, xr, |gv, v| gv * (v - mean)).f64(),
        ],
    }
}

/// `K` sums per channel of `row_sums(r)` over every row `r` of that channel.
fn per_channel<C, const K: usize>(
    d: Dims,
    row_sums: impl Fn(usize, &mut Scratch<C>) -> [f64; K] + Sync,
) -> Vec<[f64; K]> {
    let group = |r0: usize, r1: usize| {
        let mut acc = vec![[0.0; K]; d.c];
        let mut scratch = Scratch::new();
        for r in r0..r1 {
            let sums = row_sums(r, &mut scratch);
            for (a, v) in acc[r % d.c].iter_mut().zip(sums) {
                *a += v;
            }
        }
        acc
    };
    let per = d.rows_per_task();
    let groups = d.rows().div_ceil(per);
    let task = |t: usize| group(t * per, ((t + 1) * per).min(d.rows()));
    let parts: Vec<Vec<[f64; K]>> = if d.parallel() {
        (0..groups).into_par_iter().map(task).collect()
    } else {
        (0..groups).map(task).collect()
    };
    let mut total = vec![[0.0; K]; d.c];
    for part in parts {
        for (t, p) in total.iter_mut().zip(part) {
            for k in 0..K {
                t[k] += p[k];
            }
        }
    }
    total
}

/// One elementwise pass of [`per_channel_affine`].
enum Pass<'a, S: FloatStore> {
    /// `out = (x - mean) * a + b`, then what `Then` says (a ReLU keeps NaN, as `relu`).
    Forward(Then<'a, S>),
    /// `out = g' * gc + (x - mean) * a + b`, with `g' = g`, or with `live = Some((scale,
    /// shift))`, `g` where `(x - mean) * scale + shift > 0` and 0 elsewhere (NaN passing, as
    /// ReLU's backward).
    Backward {
        g: &'a [S],
        gc: &'a [S::C],
        live: Option<ChannelGate<'a, S::C>>,
    },
}

/// A fused ReLU's per-channel `(scale, shift)` of the forward, whose pre-activation
/// `(x - mean) * scale + shift` says where the gradient passes.
type ChannelGate<'a, C> = (&'a [C], &'a [C]);

/// [`Pass`] for one row, in the compute type.
enum RowPass<'a, C> {
    Forward(Then<'a, C>),
    Backward {
        g: &'a [C],
        gc: C,
        live: Option<(C, C)>,
    },
}

/// `g` where the pre-activation `(x - mean) * scale + shift` of a fused ReLU was positive
/// (or NaN), else 0: the gradient that reaches the normalisation.
#[inline(always)]
fn gate<T: KernelFloat>(g: T, x: T, mean: T, scale: T, shift: T) -> T {
    if (x - mean) * scale + shift <= T::ZERO {
        T::ZERO
    } else {
        g
    }
}

/// One row of [`per_channel_affine`]: `o = (x - m) * a + b` and the other forms of
/// [`RowPass`].
fn affine_row<T: KernelFloat>(
    o: &mut [MaybeUninit<T>],
    xr: &[T],
    pass: RowPass<'_, T>,
    [m, a, b]: [T; 3],
) {
    match pass {
        RowPass::Forward(Then::Nothing) => {
            for (o, &v) in o.iter_mut().zip(xr) {
                o.write((v - m) * a + b);
            }
        }
        RowPass::Forward(Then::Relu) => {
            for (o, &v) in o.iter_mut().zip(xr) {
                let y = (v - m) * a + b;
                o.write(if y < T::ZERO { T::ZERO } else { y });
            }
        }
        RowPass::Forward(Then::AddRelu(rr)) => {
            for ((o, &v), &r) in o.iter_mut().zip(xr).zip(rr) {
                let y = (v - m) * a + b + r;
                o.write(if y < T::ZERO { T::ZERO } else { y });
            }
        }
        RowPass::Backward { g, gc, live: None } => {
            for ((o, &v), &gv) in o.iter_mut().zip(xr).zip(g) {
                o.write(gv * gc + (v - m) * a + b);
            }
        }
        RowPass::Backward {
            g,
            gc,
            live: Some((sc, sh)),
        } => {
            for ((o, &v), &gv) in o.iter_mut().zip(xr).zip(g) {
                o.write(gate(gv, v, m, sc, sh) * gc + (v - m) * a + b);
            }
        }
    }
}

/// `out[row] = (x[row] - m[ch]) * a[ch] + b[ch]` and the other forms of [`Pass`]: the one
/// elementwise pass of the forward and of the backward. Half-precision rows are widened,
/// computed in the compute type and rounded once.
fn per_channel_affine<S: FloatStore>(
    d: Dims,
    x: &[S],
    pass: &Pass<'_, S>,
    [m, a, b]: [&[S::C]; 3],
) -> Vec<S>
where
    S::C: KernelFloat,
{
    let mut out = super::allocator::take::<S>(x.len());
    let dst = &mut out.spare_capacity_mut()[..x.len()];
    let task = |r0: usize, rows: &mut [MaybeUninit<S>]| {
        let mut sc = Scratch::new();
        for (i, o) in rows.chunks_exact_mut(d.s).enumerate() {
            let r = r0 + i;
            let ch = r % d.c;
            let span = r * d.s..(r + 1) * d.s;
            let xr = widened(&x[span.clone()], &mut sc.x);
            let row_pass = match pass {
                Pass::Forward(Then::Nothing) => RowPass::Forward(Then::Nothing),
                Pass::Forward(Then::Relu) => RowPass::Forward(Then::Relu),
                Pass::Forward(Then::AddRelu(r)) => {
                    RowPass::Forward(Then::AddRelu(widened(&r[span], &mut sc.r)))
                }
                Pass::Backward { g, gc, live } => RowPass::Backward {
                    g: widened(&g[span], &mut sc.g),
                    gc: gc[ch],
                    live: live.map(|(sc, sh)| (sc[ch], sh[ch])),
                },
            };
            let coefficients = [m[ch], a[ch], b[ch]];
            match S::as_compute_mut(o) {
                Some(o) => affine_row(o, xr, row_pass, coefficients),
                None => {
                    sc.out.resize(d.s, MaybeUninit::uninit());
                    affine_row(&mut sc.out, xr, row_pass, coefficients);
                    // SAFETY: `affine_row` wrote all `d.s` elements of the row buffer.
                    let computed =
                        unsafe { &*(&sc.out[..] as *const [MaybeUninit<S::C>] as *const [S::C]) };
                    wide(Map1 {
                        o,
                        x: computed,
                        f: &S::down,
                    });
                }
            }
        }
    };
    let per = d.rows_per_task();
    if d.parallel() {
        dst.par_chunks_mut(per * d.s)
            .enumerate()
            .for_each(|(t, rows)| task(t * per, rows));
    } else {
        task(0, dst);
    }
    // SAFETY: the tasks wrote every row of the first `x.len()` elements.
    unsafe { out.set_len(x.len()) };
    out
}

/// Forward in training mode: `y`, then what `then` says, and the batch statistics. `x`
/// (and a residual) holds `n * c * s` elements (f32, f64, or f16/bf16 computed in f32);
/// `weight` and `bias` (one per channel, in the compute type) default to 1 and 0.
pub fn forward<S: FloatStore>(
    x: &[S],
    d: Dims,
    weight: Option<&[S::C]>,
    bias: Option<&[S::C]>,
    eps: f64,
    then: Then<'_, S>,
) -> (Vec<S>, Stats<S::C>)
where
    S::C: KernelFloat,
{
    assert_eq!(x.len(), d.rows() * d.s, "batch_norm: bad input length");
    if let Then::AddRelu(r) = then {
        assert_eq!(r.len(), x.len(), "batch_norm: bad residual length");
    }
    let row = |r: usize| &x[r * d.s..(r + 1) * d.s];
    // The statistics in one pass over memory: each row, in L1 after its first read, gives its
    // sum and its sum of squares about its own mean, and the channel's sum of squares is
    // theirs plus the rows' spread about the channel mean (Chan et al.'s pairwise update),
    // taken about the channel's first element `k` so that this part does not cancel.
    let k = |ch: usize| x.get(ch * d.s).map_or(0.0, |v| KernelFloat::f64(v.up()));
    let len = d.s as f64;
    let sums = per_channel(d, |r, sc: &mut Scratch<S::C>| {
        let [sum, m2] = stat_row(widened(row(r), &mut sc.x));
        let dk = sum / len - k(r % d.c);
        [sum, m2, len * dk * dk]
    });
    let count = d.count();
    let mean_f64: Vec<f64> = sums.iter().map(|s| s[0] / count).collect();
    let var: Vec<f64> = (0..d.c)
        .map(|ch| {
            let dk = mean_f64[ch] - k(ch);
            ((sums[ch][1] + sums[ch][2] - count * dk * dk) / count).max(0.0)
        })
        .collect();
    let of = <S::C as KernelFloat>::of;
    let mean: Vec<S::C> = mean_f64.iter().map(|&m| of(m)).collect();
    let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let w = |ch: usize| weight.map_or(1.0, |w| KernelFloat::f64(w[ch]));
    let scale: Vec<S::C> = (0..d.c).map(|ch| of(w(ch) * rstd[ch])).collect();
    let shift: Vec<S::C> = match bias {
        Some(b) => b.to_vec(),
        None => vec![of(0.0); d.c],
    };
    let y = per_channel_affine(d, x, &Pass::Forward(then), [&mean, &scale, &shift]);
    let stats = Stats {
        mean,
        rstd: rstd.into_iter().map(of).collect(),
        var: var.into_iter().map(of).collect(),
        scale,
        shift,
        relu: matches!(then, Then::Relu),
    };
    (y, stats)
}

/// The gradients of the backward (`dx` only when asked for; `dx` in the input's type, the
/// parameters' gradients in the compute type).
pub struct Grads<S: FloatStore> {
    pub dx: Option<Vec<S>>,
    /// `rstd * sum(g * (x - mean))` per channel.
    pub dweight: Vec<S::C>,
    /// `sum(g)` per channel.
    pub dbias: Vec<S::C>,
}

/// Backward of [`forward`] from the upstream gradient `g` (laid out like `x`, of its type),
/// through the forward's ReLU when it had one without a residual (with one, `g` is the
/// gradient after the ReLU, and the residual's gradient is `g` itself).
pub fn backward<S: FloatStore>(
    x: &[S],
    g: &[S],
    d: Dims,
    weight: Option<&[S::C]>,
    stats: &Stats<S::C>,
    want_dx: bool,
) -> Grads<S>
where
    S::C: KernelFloat,
{
    let span = |r: usize| r * d.s..(r + 1) * d.s;
    let sums = per_channel(d, |r, sc: &mut Scratch<S::C>| {
        let xr = widened(&x[span(r)], &mut sc.x);
        let gr = widened(&g[span(r)], &mut sc.g);
        let ch = r % d.c;
        let m = stats.mean[ch];
        let live = stats.relu.then(|| (stats.scale[ch], stats.shift[ch]));
        grad_row(gr, xr, m, live)
    });
    let (of, f64_of) = (<S::C as KernelFloat>::of, <S::C as KernelFloat>::f64);
    let dbias: Vec<S::C> = sums.iter().map(|s| of(s[0])).collect();
    let dweight: Vec<S::C> = (0..d.c)
        .map(|ch| of(sums[ch][1] * f64_of(stats.rstd[ch])))
        .collect();
    let dx = want_dx.then(|| {
        // dx = gc * g + a * (x - mean) + b, with gc = w * rstd,
        // a = -gc * rstd^2 * sum(g (x - mean)) / M, b = -gc * sum(g) / M.
        let inv_m = 1.0 / d.count();
        let (mut gc, mut a, mut b) = (vec![], vec![], vec![]);
        for ch in 0..d.c {
            let rstd = f64_of(stats.rstd[ch]);
            let gcv = weight.map_or(1.0, |w| f64_of(w[ch])) * rstd;
            let av = -gcv * rstd * rstd * sums[ch][1] * inv_m;
            gc.push(of(gcv));
            a.push(of(av));
            b.push(of(-gcv * sums[ch][0] * inv_m));
        }
        let live = stats.relu.then_some((&stats.scale[..], &stats.shift[..]));
        let pass = Pass::Backward { g, gc: &gc, live };
        per_channel_affine(d, x, &pass, [&stats.mean, &a, &b])
    });
    Grads { dx, dweight, dbias }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forward and backward written out in f64, one channel at a time (with `relu`, the
    /// ReLU after it: `g` masked where the normalised value is not positive).
    #[allow(clippy::type_complexity)]
    fn reference(
        x: &[f64],
        g: &[f64],
        d: Dims,
        w: &[f64],
        b: &[f64],
        eps: f64,
        relu: bool,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut y, mut dx) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        let (mut dw, mut db) = (vec![0.0; d.c], vec![0.0; d.c]);
        let m = d.count();
        for ch in 0..d.c {
            let idx: Vec<usize> = (0..d.n)
                .flat_map(|i| (0..d.s).map(move |j| (i * d.c + ch) * d.s + j))
                .collect();
            let mean = idx.iter().map(|&i| x[i]).sum::<f64>() / m;
            let var = idx.iter().map(|&i| (x[i] - mean).powi(2)).sum::<f64>() / m;
            let rstd = 1.0 / (var + eps).sqrt();
            let pre = |i: usize| (x[i] - mean) * rstd * w[ch] + b[ch];
            let gm = |i: usize| if relu && pre(i) <= 0.0 { 0.0 } else { g[i] };
            let sg: f64 = idx.iter().map(|&i| gm(i)).sum();
            let sgx: f64 = idx.iter().map(|&i| gm(i) * (x[i] - mean)).sum();
            db[ch] = sg;
            dw[ch] = sgx * rstd;
            for &i in &idx {
                let xhat = (x[i] - mean) * rstd;
                y[i] = if relu { pre(i).max(0.0) } else { pre(i) };
                dx[i] = w[ch] * rstd * (gm(i) - sg / m - xhat * rstd * sgx / m);
            }
        }
        (y, dx, dw, db)
    }

    /// s = 1 ((N, C) input), a row with lanes and a tail, and a problem large enough for
    /// the parallel path.
    const SHAPES: [Dims; 3] = [
        Dims { n: 5, c: 3, s: 1 },
        Dims { n: 4, c: 3, s: 13 },
        Dims {
            n: 16,
            c: 8,
            s: 300,
        },
    ];

    /// A test problem of shape `d`: input, upstream gradient, weight and bias.
    struct Problem {
        x: Vec<f64>,
        g: Vec<f64>,
        w: Vec<f64>,
        b: Vec<f64>,
    }

    /// Deterministic values spread over both signs (and, with a ReLU, both sides of 0).
    fn problem(d: Dims) -> Problem {
        let len = d.rows() * d.s;
        Problem {
            x: (0..len)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.07)
                .collect(),
            g: (0..len)
                .map(|i| ((i * 13 % 7) as f64) * 0.3 - 1.0)
                .collect(),
            w: (0..d.c).map(|j| 0.5 + j as f64 * 0.1).collect(),
            b: (0..d.c).map(|j| j as f64 * -0.03).collect(),
        }
    }

    #[test]
    fn forward_and_backward_match_the_formulas_on_one_and_many_threads() {
        // Each shape without and with the fused ReLU.
        for d in SHAPES {
            let Problem { x, g, w, b } = problem(d);
            for relu in [false, true] {
                let then = if relu { Then::Relu } else { Then::Nothing };
                let (y, stats) = forward(&x, d, Some(&w), Some(&b), 1e-5, then);
                let grads = backward(&x, &g, d, Some(&w), &stats, true);
                let (ry, rdx, rdw, rdb) = reference(&x, &g, d, &w, &b, 1e-5, relu);
                let close = |a: &[f64], b: &[f64], what: &str| {
                    for (u, v) in a.iter().zip(b) {
                        assert!(
                            (u - v).abs() < 1e-10 * (1.0 + v.abs()),
                            "{d:?} relu {relu} {what}: {u} vs {v}"
                        );
                    }
                };
                close(&y, &ry, "y");
                close(grads.dx.as_ref().unwrap(), &rdx, "dx");
                close(&grads.dweight, &rdw, "dweight");
                close(&grads.dbias, &rdb, "dbias");
                if relu {
                    assert!(y.contains(&0.0) && y.iter().any(|&v| v > 0.0));
                }
            }
        }
    }

    #[test]
    fn a_residual_is_added_before_the_relu_and_the_backward_takes_the_gated_gradient() {
        // relu(bn(x) + r): the output against the f64 formulas, and the backward of a `g`
        // already through the ReLU's mask against the plain batch norm's (no gate of its
        // own: the mask of bn(x) alone would be wrong here). Half inputs: the f32 kernel on
        // the widened values, rounded once.
        for d in SHAPES {
            let len = d.rows() * d.s;
            let Problem { x, g, w, b } = problem(d);
            let r: Vec<f64> = (0..len)
                .map(|i| ((i * 11 % 9) as f64) * 0.4 - 1.5)
                .collect();
            let (y, stats) = forward(&x, d, Some(&w), Some(&b), 1e-5, Then::AddRelu(&r));
            let (bn, _, _, _) = reference(&x, &g, d, &w, &b, 1e-5, false);
            for i in 0..len {
                let want = (bn[i] + r[i]).max(0.0);
                assert!(
                    (y[i] - want).abs() < 1e-10 * (1.0 + want.abs()),
                    "{d:?} y[{i}]"
                );
            }
            assert!(y.contains(&0.0) && y.iter().any(|&v| v > 0.0));
            let gm: Vec<f64> = (0..len)
                .map(|i| if y[i] > 0.0 { g[i] } else { 0.0 })
                .collect();
            let grads = backward(&x, &gm, d, Some(&w), &stats, true);
            let (_, rdx, rdw, rdb) = reference(&x, &gm, d, &w, &b, 1e-5, false);
            let close = |a: &[f64], b: &[f64], what: &str| {
                for (u, v) in a.iter().zip(b) {
                    assert!(
                        (u - v).abs() < 1e-10 * (1.0 + v.abs()),
                        "{d:?} {what}: {u} vs {v}"
                    );
                }
            };
            close(grads.dx.as_ref().unwrap(), &rdx, "dx");
            close(&grads.dweight, &rdw, "dweight");
            close(&grads.dbias, &rdb, "dbias");

            let xh: Vec<half::bf16> = x.iter().map(|&v| half::bf16::from_f64(v)).collect();
            let rh: Vec<half::bf16> = r.iter().map(|&v| half::bf16::from_f64(v)).collect();
            let (xw, rw): (Vec<f32>, Vec<f32>) = (
                xh.iter().map(|v| v.to_f32()).collect(),
                rh.iter().map(|v| v.to_f32()).collect(),
            );
            let (w32, b32): (Vec<f32>, Vec<f32>) = (
                w.iter().map(|&v| v as f32).collect(),
                b.iter().map(|&v| v as f32).collect(),
            );
            let (yh, _) = forward(&xh, d, Some(&w32), Some(&b32), 1e-5, Then::AddRelu(&rh));
            let (yw, _) = forward(&xw, d, Some(&w32), Some(&b32), 1e-5, Then::AddRelu(&rw));
            let round: Vec<half::bf16> = yw.iter().map(|&v| half::bf16::from_f32(v)).collect();
            assert_eq!(yh, round, "{d:?} bf16 y");
        }
    }

    #[test]
    fn half_inputs_compute_as_their_f32_widening_and_round_once() {
        // A bf16 (or f16) input and upstream gradient give exactly the statistics and
        // parameter gradients of the f32 kernel on their widened values, and its y and dx
        // rounded once; with and without the fused ReLU, on one task and several.
        use half::{bf16, f16};
        fn check<H: FloatStore<C = f32> + PartialEq + std::fmt::Debug>(d: Dims) {
            let len = d.rows() * d.s;
            let x: Vec<H> = (0..len)
                .map(|i| H::down(((i * 37 % 101) as f32 - 50.0) * 0.07 + 3.0))
                .collect();
            let g: Vec<H> = (0..len)
                .map(|i| H::down((i * 13 % 7) as f32 * 0.3 - 1.0))
                .collect();
            let (xw, gw): (Vec<f32>, Vec<f32>) = (
                x.iter().map(|v| v.up()).collect(),
                g.iter().map(|v| v.up()).collect(),
            );
            let w: Vec<f32> = (0..d.c).map(|j| 0.5 + j as f32 * 0.1).collect();
            let b: Vec<f32> = (0..d.c).map(|j| j as f32 * -0.03).collect();
            for relu in [false, true] {
                let (then, then_w) = match relu {
                    true => (Then::Relu, Then::Relu),
                    false => (Then::Nothing, Then::Nothing),
                };
                let (y, stats) = forward(&x, d, Some(&w), Some(&b), 1e-5, then);
                let (yw, stats_w) = forward(&xw, d, Some(&w), Some(&b), 1e-5, then_w);
                let round = |v: &[f32]| v.iter().map(|&v| H::down(v)).collect::<Vec<H>>();
                assert_eq!(y, round(&yw), "{d:?} relu {relu}: y");
                assert_eq!(stats.mean, stats_w.mean);
                assert_eq!(stats.var, stats_w.var);
                let grads = backward(&x, &g, d, Some(&w), &stats, true);
                let grads_w = backward(&xw, &gw, d, Some(&w), &stats_w, true);
                assert_eq!(grads.dx.unwrap(), round(&grads_w.dx.unwrap()), "{d:?} dx");
                assert_eq!(grads.dweight, grads_w.dweight);
                assert_eq!(grads.dbias, grads_w.dbias);
            }
        }
        for d in SHAPES {
            check::<bf16>(d);
            check::<f16>(d);
        }
    }

    #[test]
    fn f32_variance_keeps_its_precision_far_from_zero() {
        // Values 1000 + a spread of about 1 (a mean 1000 standard deviations out), in f32:
        // the one-pass statistics must not lose the variance to cancellation. The reference
        // is the two-pass definition in f64.
        for d in [Dims { n: 64, c: 2, s: 1 }, Dims { n: 8, c: 2, s: 100 }] {
            let len = d.rows() * d.s;
            let x: Vec<f32> = (0..len)
                .map(|i| 1000.0 + ((i * 37 % 101) as f32 - 50.0) * 0.02)
                .collect();
            let (_, stats) = forward(&x, d, None, None, 0.0, Then::Nothing);
            for ch in 0..d.c {
                let xs: Vec<f64> = (0..d.n)
                    .flat_map(|n| (0..d.s).map(move |t| (n * d.c + ch) * d.s + t))
                    .map(|i| x[i] as f64)
                    .collect();
                let mean = xs.iter().sum::<f64>() / xs.len() as f64;
                let e = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / xs.len() as f64;
                let v = stats.var[ch] as f64;
                assert!((v - e).abs() < 1e-5 * e, "{d:?} channel {ch}: {v} vs {e}");
            }
        }
    }

    #[test]
    fn a_constant_channel_normalises_to_its_bias_exactly() {
        // Six equal f32 values (a mean computed exactly) at eps 1e-5: `x - mean` is 0, so
        // y is the bias, and so is dx's constant part. The folded `x * scale + (b - mean *
        // scale)` left the rounding of `x * scale` (|x * scale| about 900, one ulp 6e-5).
        let d = Dims { n: 3, c: 2, s: 1 };
        let x = [1.441_f32, 1.441, 1.441, 1.441, 1.441, 1.441];
        let (w, b) = ([0.308_f32, -1.9775], [1.0067_f32, -1.8505]);
        let (y, stats) = forward(&x, d, Some(&w), Some(&b), 1e-5, Then::Nothing);
        assert_eq!(y, [b[0], b[1], b[0], b[1], b[0], b[1]]);
        let g = [0.5_f32, -1.0, 0.25, 2.0, -0.75, 1.0];
        let dx = backward(&x, &g, d, Some(&w), &stats, true).dx.unwrap();
        for (i, v) in dx.iter().enumerate() {
            let ch = i % 2;
            let gc = w[ch] as f64 / (1e-5f64).sqrt();
            let mean_g: f64 = (0..3).map(|n| g[n * 2 + ch] as f64).sum::<f64>() / 3.0;
            let want = gc * (g[i] as f64 - mean_g);
            assert!(
                (*v as f64 - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{i}: {v} vs {want}"
            );
        }
    }
}
