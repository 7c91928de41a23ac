//! Learning-rate schedules of a training recipe, in closed form over optimizer steps: a linear
//! warm-up, then constant, cosine, step decay, or PyTorch's one-cycle policy. Being a pure
//! function of the step, a schedule needs no state of its own in a checkpoint: a resumed run
//! sets the same learning rate at the same step.
//!
//! `Warmup + Cosine` equals `SequentialLR([LinearLR(start_factor, total_iters=warmup),
//! CosineAnnealingLR(T_max=total-warmup, eta_min)], milestones=[warmup])` stepped once per
//! optimizer step (PyTorch's recursive form rounds differently in the last bits); `OneCycle`
//! equals `OneCycleLR`'s learning rates with `anneal_strategy="cos"`.

use crate::error::{Error, Result};
use crate::optim::Optimizer;
use std::f64::consts::PI;

/// The shape of a schedule after its warm-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScheduleKind {
    /// The base learning rate throughout.
    Constant,
    /// Cosine annealing from the base rate down to `min_lr` at the last step.
    Cosine {
        /// The learning rate at the end (`eta_min`).
        min_lr: f64,
    },
    /// Multiply by `gamma` every `step_size` steps (`StepLR` stepped per optimizer step).
    Step {
        /// Steps between decays.
        step_size: u64,
        /// The decay factor.
        gamma: f64,
    },
    /// One cycle: from `base / div_factor` up to the base rate over the first `pct_start` of
    /// the steps, then down to `base / (div_factor * final_div_factor)`, both halves cosine
    /// (`OneCycleLR(max_lr=base)`; it has its own warm-up).
    OneCycle {
        /// Fraction of the steps spent rising.
        pct_start: f64,
        /// `initial_lr = max_lr / div_factor`.
        div_factor: f64,
        /// `min_lr = initial_lr / final_div_factor`.
        final_div_factor: f64,
    },
}

impl ScheduleKind {
    /// `OneCycleLR`'s defaults (`pct_start=0.3, div_factor=25, final_div_factor=1e4`).
    pub fn one_cycle() -> ScheduleKind {
        ScheduleKind::OneCycle {
            pct_start: 0.3,
            div_factor: 25.0,
            final_div_factor: 1e4,
        }
    }
}

/// A learning-rate schedule over `total_steps` optimizer steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LrSchedule {
    /// What follows the warm-up.
    pub kind: ScheduleKind,
    /// Steps of linear warm-up (0 for none).
    pub warmup_steps: u64,
    /// The factor of the base rate at step 0 of the warm-up (`LinearLR`'s `start_factor`).
    pub warmup_start_factor: f64,
    /// Steps of the whole run, warm-up included (what cosine and one-cycle anneal over).
    pub total_steps: u64,
}

impl LrSchedule {
    /// A schedule, checked: positive total, warm-up shorter than the run and not combined
    /// with one-cycle, factors and fractions in range.
    pub fn new(
        kind: ScheduleKind,
        warmup_steps: u64,
        warmup_start_factor: f64,
        total_steps: u64,
    ) -> Result<LrSchedule> {
        const OP: &str = "LrSchedule";
        let bad = |what: String| Err(Error::invalid(OP, what));
        if total_steps == 0 {
            return bad("the run has no steps to schedule (total_steps = 0)".into());
        }
        if warmup_steps >= total_steps && warmup_steps > 0 {
            return bad(format!(
                "warm-up of {warmup_steps} steps does not fit a run of {total_steps} steps"
            ));
        }
        if !(warmup_start_factor > 0.0 && warmup_start_factor <= 1.0) {
            return bad(format!(
                "warm-up start factor must be in (0, 1], got {warmup_start_factor}"
            ));
        }
        match kind {
            ScheduleKind::OneCycle { pct_start, .. } if warmup_steps > 0 => {
                return bad(format!(
                    "one-cycle warms up by itself (pct_start {pct_start}); drop the warm-up \
                     of {warmup_steps} steps"
                ))
            }
            ScheduleKind::OneCycle {
                pct_start,
                div_factor,
                final_div_factor,
            } if !(pct_start > 0.0 && pct_start < 1.0)
                || div_factor <= 0.0
                || final_div_factor <= 0.0 =>
            {
                return bad(format!(
                    "one-cycle needs pct_start in (0, 1) and positive div factors, got \
                     pct_start {pct_start}, div_factor {div_factor}, final_div_factor \
                     {final_div_factor}"
                ))
            }
            ScheduleKind::Step { step_size: 0, .. } => {
                return bad("step decay needs a step size of at least 1".into())
            }
            ScheduleKind::Cosine { min_lr } if min_lr < 0.0 => {
                return bad(format!("cosine min_lr must be >= 0, got {min_lr}"))
            }
            _ => {}
        }
        Ok(LrSchedule {
            kind,
            warmup_steps,
            warmup_start_factor,
            total_steps,
        })
    }

    /// The learning rate of optimizer step `step` (0-based) for a group whose base rate is
    /// `base`.
    pub fn lr_at(&self, step: u64, base: f64) -> f64 {
        let w = self.warmup_steps;
        if step < w {
            let f0 = self.warmup_start_factor;
            return base * (f0 + (1.0 - f0) * step as f64 / w as f64);
        }
        // Steps after the warm-up, and how many there are in all.
        let (t, span) = ((step - w) as f64, (self.total_steps - w) as f64);
        match self.kind {
            ScheduleKind::Constant => base,
            ScheduleKind::Cosine { min_lr } => {
                let t = t.min(span);
                min_lr + (base - min_lr) * (1.0 + (PI * t / span).cos()) / 2.0
            }
            ScheduleKind::Step { step_size, gamma } => {
                base * gamma.powi(((step - w) / step_size) as i32)
            }
            ScheduleKind::OneCycle {
                pct_start,
                div_factor,
                final_div_factor,
            } => {
                let initial = base / div_factor;
                let last = initial / final_div_factor;
                // OneCycleLR's phase ends: step pct_start*total - 1, then total - 1.
                let rise_end = pct_start * self.total_steps as f64 - 1.0;
                let end = self.total_steps as f64 - 1.0;
                let s = (step as f64).min(end);
                let anneal = |from: f64, to: f64, pct: f64| {
                    to + (from - to) / 2.0 * ((PI * pct).cos() + 1.0)
                };
                if s <= rise_end {
                    anneal(initial, base, s / rise_end)
                } else {
                    anneal(base, last, (s - rise_end) / (end - rise_end))
                }
            }
        }
    }

    /// Set every param group of `opt` to its rate at `step`, given each group's base rate.
    pub fn apply(&self, opt: &mut dyn Optimizer, step: u64, base_lrs: &[f64]) -> Result<()> {
        let groups = opt.param_groups_mut();
        if groups.len() != base_lrs.len() {
            return Err(Error::invalid(
                "LrSchedule::apply",
                format!(
                    "{} base learning rates for an optimizer with {} param groups",
                    base_lrs.len(),
                    groups.len()
                ),
            ));
        }
        for (group, base) in groups.iter_mut().zip(base_lrs) {
            group.lr = Some(self.lr_at(step, *base));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_cosine_reaches_min_at_the_end() {
        let s = LrSchedule::new(ScheduleKind::Cosine { min_lr: 0.0 }, 10, 0.1, 110).unwrap();
        assert!((s.lr_at(0, 1.0) - 0.1).abs() < 1e-12);
        assert!((s.lr_at(5, 1.0) - 0.55).abs() < 1e-12);
        assert!((s.lr_at(10, 1.0) - 1.0).abs() < 1e-12);
        assert!((s.lr_at(60, 1.0) - 0.5).abs() < 1e-12);
        assert!(s.lr_at(110, 1.0).abs() < 1e-12);
    }

    #[test]
    fn step_decay_and_one_cycle_shapes() {
        let s = LrSchedule::new(
            ScheduleKind::Step {
                step_size: 3,
                gamma: 0.5,
            },
            0,
            1.0,
            10,
        )
        .unwrap();
        let lrs: Vec<f64> = (0..7).map(|i| s.lr_at(i, 1.0)).collect();
        assert_eq!(lrs, [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]);
        let c = LrSchedule::new(ScheduleKind::one_cycle(), 0, 1.0, 100).unwrap();
        assert!((c.lr_at(0, 1.0) - 0.04).abs() < 1e-12);
        assert!((c.lr_at(29, 1.0) - 1.0).abs() < 1e-12);
        assert!((c.lr_at(99, 1.0) - 0.04 / 1e4).abs() < 1e-15);
    }

    #[test]
    fn bad_schedules_are_errors() {
        assert!(LrSchedule::new(ScheduleKind::Constant, 0, 1.0, 0).is_err());
        assert!(LrSchedule::new(ScheduleKind::Constant, 10, 1.0, 10).is_err());
        assert!(LrSchedule::new(ScheduleKind::one_cycle(), 5, 1.0, 100).is_err());
        assert!(LrSchedule::new(ScheduleKind::Constant, 5, 0.0, 100).is_err());
        let e = LrSchedule::new(
            ScheduleKind::Step {
                step_size: 0,
                gamma: 0.1,
            },
            0,
            1.0,
            10,
        )
        .unwrap_err();
        assert!(e.to_string().contains("step size"), "{e}");
    }
}
