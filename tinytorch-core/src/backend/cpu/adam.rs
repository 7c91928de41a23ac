//! The fused Adam/AdamW update: one pass over a parameter, its gradient and its moment
//! buffers instead of the dozen elementwise ops the update is written as (each its own pass
//! over memory and its own dispatch: a 128 x 128 weight spent more time in dispatch than in
//! arithmetic). It does the composed ops' arithmetic in their order, with every scalar
//! rounded to the element type first, so both paths give the same bits.

use super::binary::Arith;
use super::{CpuElement, CpuStorage};
use crate::backend::{AdamStep, BackendStorage};
use crate::base::DType;
use num_traits::Float;
use rayon::prelude::*;

/// Elements per rayon task (and below which the update stays on one thread).
const TASK_ELEMS: usize = 16 * 1024;

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

/// The update on host buffers, each operand a (buffer, element offset) pair holding `n`
/// elements from there; `false`, nothing done, for a dtype without the fused kernel (only f32
/// and f64 have it) or operands of different dtypes.
pub(crate) fn adam_update(
    (p, p_at): (&mut CpuStorage, usize),
    (g, g_at): (&CpuStorage, usize),
    (m, m_at): (&mut CpuStorage, usize),
    (v, v_at): (&mut CpuStorage, usize),
    v_max: Option<(&mut CpuStorage, usize)>,
    n: usize,
    step: &AdamStep,
) -> bool {
    fn typed<T: CpuElement + Float + Arith>(
        (p, p_at): (&mut CpuStorage, usize),
        (g, g_at): (&CpuStorage, usize),
        (m, m_at): (&mut CpuStorage, usize),
        (v, v_at): (&mut CpuStorage, usize),
        v_max: Option<(&mut CpuStorage, usize)>,
        n: usize,
        step: &AdamStep,
    ) -> bool {
        let (Some(p), Some(g), Some(m), Some(v)) = (
            T::slice_mut(p),
            T::slice(g),
            T::slice_mut(m),
            T::slice_mut(v),
        ) else {
            return false;
        };
        let v_max = match v_max {
            Some((vm, at)) => match T::slice_mut(vm) {
                Some(vm) => Some(&mut vm[at..at + n]),
                None => return false,
            },
            None => None,
        };
        adam_step(
            &mut p[p_at..p_at + n],
            &g[g_at..g_at + n],
            &mut m[m_at..m_at + n],
            &mut v[v_at..v_at + n],
            v_max,
            step,
        );
        true
    }
    let dtype = p.dtype();
    let args = ((p, p_at), (g, g_at), (m, m_at), (v, v_at));
    match dtype {
        DType::F32 => typed::<f32>(args.0, args.1, args.2, args.3, v_max, n, step),
        DType::F64 => typed::<f64>(args.0, args.1, args.2, args.3, v_max, n, step),
        _ => false,
    }
}
