//! The fused Adam/AdamW update: one pass over a parameter, its gradient and its moment
//! buffers instead of the dozen elementwise ops the update is written as (each its own pass
//! over memory and its own dispatch: a 128 x 128 weight spent more time in dispatch than in
//! arithmetic). It does the composed ops' arithmetic in their order, with every scalar
//! rounded to the element type first, so both paths give the same bits.

use super::binary::Arith;
use num_traits::Float;
use rayon::prelude::*;

/// Elements per rayon task (and below which the update stays on one thread).
const TASK_ELEMS: usize = 16 * 1024;

/// The scalars of one step, in f64 as the optimizer holds them.
#[derive(Clone, Copy, Debug)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay: decoupled (AdamW) or an L2 term added to the gradient (Adam).
    pub weight_decay: f64,
    /// Whether the decay is AdamW's `p *= 1 - lr * wd`.
    pub decoupled: bool,
    /// Gradient ascent instead of descent.
    pub maximize: bool,
    /// Running-average coefficient of the gradient.
    pub beta1: f64,
    /// Running-average coefficient of the squared gradient.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// `1 - beta1^step`.
    pub bias_correction1: f64,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
}

/// The step's scalars rounded to `T`, as the composed ops round them.
struct Scalars<T> {
    decay: T,
    l2: T,
    beta1: T,
    one_minus_beta1: T,
    beta2: T,
    one_minus_beta2: T,
    inv_bias_correction2_sqrt: T,
    eps: T,
    step_size: T,
}

impl<T: Float> Scalars<T> {
    fn of(s: &AdamStep) -> Self {
        let r = |v: f64| T::from(v).expect("a float converts to a float");
        Scalars {
            decay: r(1.0 - s.lr * s.weight_decay),
            l2: r(s.weight_decay),
            beta1: r(s.beta1),
            one_minus_beta1: r(1.0 - s.beta1),
            beta2: r(s.beta2),
            one_minus_beta2: r(1.0 - s.beta2),
            inv_bias_correction2_sqrt: r(1.0 / s.bias_correction2_sqrt),
            eps: r(s.eps),
            step_size: r(-s.lr / s.bias_correction1),
        }
    }
}

/// The decayed parameter and the new moments of one element: `(x, m, v)`.
#[inline(always)]
fn moments<T: Float>(s: &Scalars<T>, step: &AdamStep, x: T, g: T, m: T, v: T) -> (T, T, T) {
    let mut x = x;
    let mut d = if step.maximize { -g } else { g };
    if step.decoupled {
        x = x * s.decay;
    } else if step.weight_decay != 0.0 {
        d = d + x * s.l2;
    }
    (
        x,
        m * s.beta1 + s.one_minus_beta1 * d,
        v * s.beta2 + s.one_minus_beta2 * (d * d),
    )
}

/// The updated parameter from the decayed one, the first moment and the second moment used
/// (`v`, or AMSGrad's running maximum).
#[inline(always)]
fn apply<T: Float>(s: &Scalars<T>, x: T, m: T, second: T) -> T {
    let denom = second.sqrt() * s.inv_bias_correction2_sqrt + s.eps;
    x + s.step_size * (m / denom)
}

/// One task's elements; `v_max` present for AMSGrad.
fn update<T: Float + Arith>(
    s: &Scalars<T>,
    step: &AdamStep,
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    v_max: Option<&mut [T]>,
) {
    let elems = p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut());
    match v_max {
        None => {
            for (((p, &g), m), v) in elems {
                let (x, mm, vv) = moments(s, step, *p, g, *m, *v);
                (*m, *v) = (mm, vv);
                *p = apply(s, x, mm, vv);
            }
        }
        Some(vm) => {
            for ((((p, &g), m), v), vm) in elems.zip(vm.iter_mut()) {
                let (x, mm, vv) = moments(s, step, *p, g, *m, *v);
                (*m, *v, *vm) = (mm, vv, Arith::maximum(*vm, vv));
                *p = apply(s, x, mm, *vm);
            }
        }
    }
}

/// Update `p`, `m` (first moment), `v` (second moment) and, for AMSGrad, `v_max` in place
/// from the gradient `g`; all of one length.
pub fn adam_step<T: Float + Arith>(
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    v_max: Option<&mut [T]>,
    step: &AdamStep,
) {
    let s = &Scalars::of(step);
    if p.len() <= TASK_ELEMS {
        return update(s, step, p, g, m, v, v_max);
    }
    let tasks = p
        .par_chunks_mut(TASK_ELEMS)
        .zip(g.par_chunks(TASK_ELEMS))
        .zip(m.par_chunks_mut(TASK_ELEMS))
        .zip(v.par_chunks_mut(TASK_ELEMS));
    match v_max {
        Some(vm) => tasks
            .zip(vm.par_chunks_mut(TASK_ELEMS))
            .for_each(|((((p, g), m), v), vm)| update(s, step, p, g, m, v, Some(vm))),
        None => tasks.for_each(|(((p, g), m), v)| update(s, step, p, g, m, v, None)),
    }
}
