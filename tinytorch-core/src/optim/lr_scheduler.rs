//! Learning-rate schedulers (`torch.optim.lr_scheduler`). A scheduler reads and writes the
//! `lr` of every param group of the optimizer passed to `step`; like PyTorch, constructing
//! one performs the initial step (epoch 0), and the recursive ("chainable") update forms are
//! used so schedulers compose.

use super::Optimizer;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::f64::consts::PI;

/// Epoch bookkeeping shared by the epoch-based schedulers (`LRScheduler`'s attributes).
#[derive(Clone, Debug)]
pub struct SchedulerState {
    /// Each group's lr when the scheduler was built (`base_lrs`).
    pub base_lrs: Vec<f64>,
    /// The epoch of the last step (`last_epoch`), 0 after construction.
    pub last_epoch: i64,
    /// The lrs set by the last step (`get_last_lr()`).
    pub last_lr: Vec<f64>,
}

/// An epoch-based schedule (`torch.optim.lr_scheduler.LRScheduler`).
pub trait LrScheduler {
    /// The shared bookkeeping.
    fn sched(&self) -> &SchedulerState;
    /// The shared bookkeeping, mutably.
    fn sched_mut(&mut self) -> &mut SchedulerState;
    /// The lrs for epoch `sched().last_epoch`, given the groups' current lrs (`get_lr`).
    fn compute_lr(&mut self, opt: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>>;

    /// Advance one epoch and write the new lrs into `opt` (`scheduler.step()`).
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        self.sched_mut().last_epoch += 1;
        apply(self, opt)
    }
    /// The lrs set by the last step (`get_last_lr()`).
    fn get_last_lr(&self) -> Vec<f64> {
        self.sched().last_lr.clone()
    }
    /// The epoch counter (`last_epoch`).
    fn last_epoch(&self) -> i64 {
        self.sched().last_epoch
    }
    /// A copy of the bookkeeping, for checkpoints (`scheduler.state_dict()`; the schedule's
    /// hyperparameters come from its constructor).
    fn state_dict(&self) -> SchedulerState {
        self.sched().clone()
    }
    /// Restore bookkeeping saved by [`LrScheduler::state_dict`] from a scheduler with as many
    /// param groups (`scheduler.load_state_dict`).
    fn load_state_dict(&mut self, state: &SchedulerState) -> Result<()> {
        let groups = self.sched().base_lrs.len();
        if state.base_lrs.len() != groups || state.last_lr.len() != groups {
            return Err(Error::invalid(
                "LrScheduler::load_state_dict",
                format!(
                    "state for {} param groups, the scheduler has {groups}",
                    state.base_lrs.len()
                ),
            ));
        }
        *self.sched_mut() = state.clone();
        Ok(())
    }
}

fn apply<S: LrScheduler + ?Sized>(s: &mut S, opt: &mut dyn Optimizer) -> Result<()> {
    let current = opt.lrs();
    let lrs = s.compute_lr(opt, &current)?;
    for (i, lr) in lrs.iter().enumerate() {
        opt.param_groups_mut()[i].lr = Some(*lr);
    }
    s.sched_mut().last_lr = lrs;
    Ok(())
}

/// Build a scheduler around fresh bookkeeping (`base_lrs` and `last_lr` from `opt`, epoch 0)
/// and perform the initial step, as every epoch-based constructor in PyTorch does.
fn start<S: LrScheduler>(
    opt: &mut dyn Optimizer,
    build: impl FnOnce(SchedulerState) -> S,
) -> Result<S> {
    let mut s = build(SchedulerState {
        base_lrs: opt.lrs(),
        last_epoch: 0,
        last_lr: opt.lrs(),
    });
    apply(&mut s, opt)?;
    Ok(s)
}

/// A period in epochs, which must be positive, as the `i64` that epoch arithmetic uses.
fn positive_epochs(op: &'static str, name: &str, epochs: usize) -> Result<i64> {
    if epochs == 0 {
        return Err(Error::invalid(op, format!("{name} must be positive")));
    }
    Ok(epochs as i64)
}

macro_rules! sched_accessors {
    () => {
        fn sched(&self) -> &SchedulerState {
            &self.state
        }
        fn sched_mut(&mut self) -> &mut SchedulerState {
            &mut self.state
        }
    };
}

/// Multiply the lr by `gamma` every `step_size` epochs (`torch.optim.lr_scheduler.StepLR`).
pub struct StepLR {
    state: SchedulerState,
    step_size: i64,
    gamma: f64,
}

impl StepLR {
    /// `StepLR(optimizer, step_size, gamma=0.1)`.
    pub fn new(opt: &mut dyn Optimizer, step_size: usize, gamma: f64) -> Result<Self> {
        let step_size = positive_epochs("StepLR", "step_size", step_size)?;
        start(opt, |state| StepLR {
            state,
            step_size,
            gamma,
        })
    }
}

impl LrScheduler for StepLR {
    sched_accessors!();
    fn compute_lr(&mut self, _: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        if e == 0 || e % self.step_size != 0 {
            return Ok(current.to_vec());
        }
        Ok(current.iter().map(|lr| lr * self.gamma).collect())
    }
}

/// Multiply the lr by `gamma` at each milestone epoch (`torch.optim.lr_scheduler.MultiStepLR`).
pub struct MultiStepLR {
    state: SchedulerState,
    milestones: Vec<i64>,
    gamma: f64,
}

impl MultiStepLR {
    /// `MultiStepLR(optimizer, milestones, gamma=0.1)`; a milestone listed twice applies twice.
    pub fn new(opt: &mut dyn Optimizer, milestones: &[usize], gamma: f64) -> Result<Self> {
        start(opt, |state| MultiStepLR {
            state,
            milestones: milestones.iter().map(|&m| m as i64).collect(),
            gamma,
        })
    }
}

impl LrScheduler for MultiStepLR {
    sched_accessors!();
    fn compute_lr(&mut self, _: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        let hits = self.milestones.iter().filter(|&&m| m == e).count() as i32;
        if hits == 0 {
            return Ok(current.to_vec());
        }
        Ok(current
            .iter()
            .map(|lr| lr * self.gamma.powi(hits))
            .collect())
    }
}

/// Multiply the lr by `gamma` every epoch (`torch.optim.lr_scheduler.ExponentialLR`).
pub struct ExponentialLR {
    state: SchedulerState,
    gamma: f64,
}

impl ExponentialLR {
    /// `ExponentialLR(optimizer, gamma)`.
    pub fn new(opt: &mut dyn Optimizer, gamma: f64) -> Result<Self> {
        start(opt, |state| ExponentialLR { state, gamma })
    }
}

impl LrScheduler for ExponentialLR {
    sched_accessors!();
    fn compute_lr(&mut self, _: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        if self.state.last_epoch == 0 {
            return Ok(current.to_vec());
        }
        Ok(current.iter().map(|lr| lr * self.gamma).collect())
    }
}

/// Cosine annealing from the base lr to `eta_min` over `t_max` epochs, then back up
/// (`torch.optim.lr_scheduler.CosineAnnealingLR`, its recursive form).
pub struct CosineAnnealingLR {
    state: SchedulerState,
    t_max: i64,
    eta_min: f64,
}

impl CosineAnnealingLR {
    /// `CosineAnnealingLR(optimizer, T_max, eta_min=0)`.
    pub fn new(opt: &mut dyn Optimizer, t_max: usize, eta_min: f64) -> Result<Self> {
        let t_max = positive_epochs("CosineAnnealingLR", "T_max", t_max)?;
        start(opt, |state| CosineAnnealingLR {
            state,
            t_max,
            eta_min,
        })
    }
}

impl LrScheduler for CosineAnnealingLR {
    sched_accessors!();
    fn compute_lr(&mut self, _: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        let (t, eta) = (self.t_max as f64, self.eta_min);
        if e == 0 {
            return Ok(current.to_vec());
        }
        if (e - 1 - self.t_max).rem_euclid(2 * self.t_max) == 0 {
            return Ok(current
                .iter()
                .zip(&self.state.base_lrs)
                .map(|(lr, base)| lr + (base - eta) * (1.0 - (PI / t).cos()) / 2.0)
                .collect());
        }
        let e = e as f64;
        let ratio = (1.0 + (PI * e / t).cos()) / (1.0 + (PI * (e - 1.0) / t).cos());
        Ok(current.iter().map(|lr| ratio * (lr - eta) + eta).collect())
    }
}

/// Scale the lr linearly from `start_factor` to `end_factor` of the base lr over
/// `total_iters` epochs (`torch.optim.lr_scheduler.LinearLR`, used for warm-up).
pub struct LinearLR {
    state: SchedulerState,
    start_factor: f64,
    end_factor: f64,
    total_iters: i64,
}

impl LinearLR {
    /// `LinearLR(optimizer, start_factor=1/3, end_factor=1.0, total_iters=5)`.
    pub fn new(
        opt: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<Self> {
        if !(start_factor > 0.0 && start_factor <= 1.0) {
            return Err(Error::invalid(
                "LinearLR",
                format!("Starting multiplicative factor expected to be greater than 0 and less or equal to 1, got {start_factor}"),
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(Error::invalid(
                "LinearLR",
                format!(
                    "Ending multiplicative factor expected to be between 0 and 1, got {end_factor}"
                ),
            ));
        }
        start(opt, |state| LinearLR {
            state,
            start_factor,
            end_factor,
            total_iters: total_iters as i64,
        })
    }
}

impl LrScheduler for LinearLR {
    sched_accessors!();
    fn compute_lr(&mut self, _: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        if e == 0 {
            return Ok(current.iter().map(|lr| lr * self.start_factor).collect());
        }
        if e > self.total_iters {
            return Ok(current.to_vec());
        }
        let (s, f) = (self.start_factor, self.end_factor);
        let factor = 1.0 + (f - s) / (self.total_iters as f64 * s + (e - 1) as f64 * (f - s));
        Ok(current.iter().map(|lr| lr * factor).collect())
    }
}

/// Options of [`OneCycleLR`] with PyTorch's defaults (cosine annealing, two phases).
#[derive(Clone, Copy, Debug)]
pub struct OneCycleOptions {
    /// Fraction of the cycle spent increasing the lr (default 0.3).
    pub pct_start: f64,
    /// Cycle momentum (or Adam's beta1) inversely to the lr (default true).
    pub cycle_momentum: bool,
    /// Lowest momentum (default 0.85).
    pub base_momentum: f64,
    /// Highest momentum (default 0.95).
    pub max_momentum: f64,
    /// initial_lr = max_lr / div_factor (default 25).
    pub div_factor: f64,
    /// min_lr = initial_lr / final_div_factor (default 1e4).
    pub final_div_factor: f64,
}

impl Default for OneCycleOptions {
    fn default() -> Self {
        OneCycleOptions {
            pct_start: 0.3,
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
        }
    }
}

/// The 1cycle policy (`torch.optim.lr_scheduler.OneCycleLR`, `anneal_strategy='cos'`,
/// `three_phase=False`): lr from `max_lr/div_factor` up to `max_lr`, then down to
/// `initial_lr/final_div_factor`, over `total_steps` steps.
pub struct OneCycleLR {
    state: SchedulerState,
    total_steps: i64,
    phases: Vec<Phase>,
    cycle_momentum: bool,
}

/// One annealing phase: (end_step, start_lr per group, end_lr per group, start_momentum,
/// end_momentum).
type Phase = (f64, Vec<f64>, Vec<f64>, f64, f64);

fn cos_anneal(start: f64, end: f64, pct: f64) -> f64 {
    end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0)
}

impl OneCycleLR {
    /// `OneCycleLR(optimizer, max_lr, total_steps, ...)`; `max_lr` has one value for every
    /// group or one per group. With `cycle_momentum` the optimizer must have `momentum`
    /// (SGD, RMSprop) or `betas` (Adam).
    pub fn new(
        opt: &mut dyn Optimizer,
        max_lr: &[f64],
        total_steps: usize,
        o: OneCycleOptions,
    ) -> Result<Self> {
        let n = opt.param_groups().len();
        let max_lrs: Vec<f64> = match max_lr.len() {
            1 => vec![max_lr[0]; n],
            m if m == n => max_lr.to_vec(),
            m => {
                return Err(Error::invalid(
                    "OneCycleLR",
                    format!("expected {n} values for max_lr, got {m}"),
                ))
            }
        };
        if total_steps == 0 {
            return Err(Error::invalid(
                "OneCycleLR",
                "Expected positive integer total_steps, but got 0",
            ));
        }
        if !(0.0..=1.0).contains(&o.pct_start) {
            return Err(Error::invalid(
                "OneCycleLR",
                format!(
                    "Expected float between 0 and 1 pct_start, but got {}",
                    o.pct_start
                ),
            ));
        }
        let initial: Vec<f64> = max_lrs.iter().map(|m| m / o.div_factor).collect();
        let min: Vec<f64> = initial.iter().map(|i| i / o.final_div_factor).collect();
        let phases = vec![
            (
                o.pct_start * total_steps as f64 - 1.0,
                initial.clone(),
                max_lrs.clone(),
                o.max_momentum,
                o.base_momentum,
            ),
            (
                total_steps as f64 - 1.0,
                max_lrs,
                min,
                o.base_momentum,
                o.max_momentum,
            ),
        ];
        if o.cycle_momentum {
            for g in opt.param_groups_mut() {
                let key = momentum_key(g)?;
                g.options.insert(key.into(), o.max_momentum);
            }
        }
        for (i, g) in opt.param_groups_mut().iter_mut().enumerate() {
            g.lr = Some(initial[i]);
        }
        start(opt, |state| OneCycleLR {
            state,
            total_steps: total_steps as i64,
            phases,
            cycle_momentum: o.cycle_momentum,
        })
    }
}

fn momentum_key(g: &super::ParamGroup) -> Result<&'static str> {
    if g.options.contains_key("beta1") {
        Ok("beta1")
    } else if g.options.contains_key("momentum") {
        Ok("momentum")
    } else {
        Err(Error::invalid(
            "OneCycleLR",
            "optimizer must support momentum or beta1 with `cycle_momentum` enabled",
        ))
    }
}

impl LrScheduler for OneCycleLR {
    sched_accessors!();
    fn compute_lr(&mut self, opt: &mut dyn Optimizer, current: &[f64]) -> Result<Vec<f64>> {
        let step = self.state.last_epoch;
        if step > self.total_steps {
            return Err(Error::invalid(
                "OneCycleLR",
                format!(
                    "Tried to step {step} times. The specified number of total steps is {}",
                    self.total_steps
                ),
            ));
        }
        let step = step as f64;
        let mut lrs = Vec::with_capacity(current.len());
        for (gi, group) in opt.param_groups_mut().iter_mut().enumerate() {
            let mut start_step = 0.0;
            for (i, (end_step, lo, hi, m0, m1)) in self.phases.iter().enumerate() {
                if step <= *end_step || i == self.phases.len() - 1 {
                    let pct = (step - start_step) / (end_step - start_step);
                    lrs.push(cos_anneal(lo[gi], hi[gi], pct));
                    if self.cycle_momentum {
                        let key = momentum_key(group)?;
                        group.options.insert(key.into(), cos_anneal(*m0, *m1, pct));
                    }
                    break;
                }
                start_step = *end_step;
            }
        }
        Ok(lrs)
    }
}

/// Reduce the lr by `factor` when a metric stops improving
/// (`torch.optim.lr_scheduler.ReduceLROnPlateau`, `threshold_mode` 'rel' or 'abs').
pub struct ReduceLROnPlateau {
    maximize: bool,
    factor: f64,
    patience: usize,
    threshold: f64,
    relative: bool,
    cooldown: usize,
    min_lrs: Vec<f64>,
    eps: f64,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

/// Options of [`ReduceLROnPlateau`] with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct PlateauOptions {
    /// "min" (default) or "max".
    pub mode: &'static str,
    /// lr multiplier on a plateau, < 1 (default 0.1).
    pub factor: f64,
    /// Bad epochs tolerated before reducing (default 10).
    pub patience: usize,
    /// Minimum significant improvement (default 1e-4).
    pub threshold: f64,
    /// "rel" (default) or "abs".
    pub threshold_mode: &'static str,
    /// Epochs to wait after a reduction (default 0).
    pub cooldown: usize,
    /// Lower bound of the lr, one value or one per group (default [0]).
    pub min_lr: Vec<f64>,
    /// Reductions smaller than this are skipped (default 1e-8).
    pub eps: f64,
}

impl Default for PlateauOptions {
    fn default() -> Self {
        PlateauOptions {
            mode: "min",
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: "rel",
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

impl ReduceLROnPlateau {
    /// `ReduceLROnPlateau(optimizer, mode, factor, patience, threshold, ...)`.
    pub fn new(opt: &dyn Optimizer, o: PlateauOptions) -> Result<Self> {
        let op = "ReduceLROnPlateau";
        if o.factor >= 1.0 {
            return Err(Error::invalid(op, "Factor should be < 1.0."));
        }
        let maximize = match o.mode {
            "min" => false,
            "max" => true,
            m => return Err(Error::invalid(op, format!("mode {m} is unknown!"))),
        };
        let relative = match o.threshold_mode {
            "rel" => true,
            "abs" => false,
            m => {
                return Err(Error::invalid(
                    op,
                    format!("threshold mode {m} is unknown!"),
                ))
            }
        };
        let n = opt.param_groups().len();
        let min_lrs = match o.min_lr.len() {
            1 => vec![o.min_lr[0]; n],
            m if m == n => o.min_lr.clone(),
            m => return Err(Error::invalid(op, format!("expected {n} min_lrs, got {m}"))),
        };
        Ok(ReduceLROnPlateau {
            maximize,
            factor: o.factor,
            patience: o.patience,
            threshold: o.threshold,
            relative,
            cooldown: o.cooldown,
            min_lrs,
            eps: o.eps,
            best: if maximize {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lr: opt.lrs(),
        })
    }

    fn is_better(&self, a: f64) -> bool {
        let best = self.best;
        match (self.maximize, self.relative) {
            (false, true) => a < best * (1.0 - self.threshold),
            (false, false) => a < best - self.threshold,
            (true, true) => a > best * (self.threshold + 1.0),
            (true, false) => a > best + self.threshold,
        }
    }

    /// Record `metric` for this epoch and reduce the lrs after `patience` bad epochs
    /// (`scheduler.step(metrics)`).
    pub fn step(&mut self, opt: &mut dyn Optimizer, metric: f64) -> Result<()> {
        self.last_epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.patience {
            for (i, g) in opt.param_groups_mut().iter_mut().enumerate() {
                let old = g.learning_rate();
                let new = (old * self.factor).max(self.min_lrs[i]);
                if old - new > self.eps {
                    g.lr = Some(new);
                }
            }
            self.cooldown_counter = self.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = opt.lrs();
        Ok(())
    }

    /// The lrs after the last step (`get_last_lr()`).
    pub fn get_last_lr(&self) -> Vec<f64> {
        self.last_lr.clone()
    }

    /// The changing state as named scalars, for checkpoints (`scheduler.state_dict()`; the
    /// options come from the constructor): `best`, `num_bad_epochs`, `cooldown_counter`,
    /// `last_epoch` and `last_lr.<group>`.
    pub fn state_dict(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::from([
            ("best".to_string(), self.best),
            ("num_bad_epochs".to_string(), self.num_bad_epochs as f64),
            ("cooldown_counter".to_string(), self.cooldown_counter as f64),
            ("last_epoch".to_string(), self.last_epoch as f64),
        ]);
        for (i, lr) in self.last_lr.iter().enumerate() {
            m.insert(format!("last_lr.{i}"), *lr);
        }
        m
    }

    /// Restore the state saved by [`ReduceLROnPlateau::state_dict`].
    pub fn load_state_dict(&mut self, state: &BTreeMap<String, f64>) -> Result<()> {
        let get = |k: &str| {
            state.get(k).copied().ok_or_else(|| {
                Error::invalid(
                    "ReduceLROnPlateau::load_state_dict",
                    format!("missing '{k}'"),
                )
            })
        };
        let last_lr = (0..self.last_lr.len())
            .map(|i| get(&format!("last_lr.{i}")))
            .collect::<Result<Vec<f64>>>()?;
        self.best = get("best")?;
        self.num_bad_epochs = get("num_bad_epochs")? as usize;
        self.cooldown_counter = get("cooldown_counter")? as usize;
        self.last_epoch = get("last_epoch")? as i64;
        self.last_lr = last_lr;
        Ok(())
    }
}
