//! Optimizers, learning-rate schedulers and gradient clipping (`torch.optim`,
//! `torch.optim.lr_scheduler`, `torch.nn.utils.clip_grad_*`).
//!
//! Every optimizer keeps PyTorch's param-group model: a list of [`ParamGroup`]s, each with its
//! own `lr` and hyperparameters (missing ones take the optimizer's defaults), and per-parameter
//! state keyed by the parameter's index across all groups, as `optimizer.state_dict()`.
//! Updates run under `no_grad()` with in-place ops, so parameter buffers are never reallocated
//! and handles held by modules see the new values.

mod adadelta;
mod adagrad;
mod adam;
mod clip_grad;
mod grad_scaler;
pub mod lr_scheduler;
mod rmsprop;
mod sgd;

pub use adadelta::{Adadelta, AdadeltaOptions};
pub use adagrad::{Adagrad, AdagradOptions};
pub use adam::{Adam, AdamOptions, AdamW};
pub use clip_grad::{clip_grad_norm_, clip_grad_value_};
pub use grad_scaler::{GradScaler, GradScalerOptions};
pub use rmsprop::{RMSprop, RMSpropOptions};
pub use sgd::{SgdOptions, SGD};

use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};
use std::collections::BTreeMap;

/// One group of parameters with its own learning rate and hyperparameters (an entry of
/// PyTorch's `optimizer.param_groups`). Options not set here take the optimizer's defaults;
/// boolean options (`nesterov`, `amsgrad`, `maximize`, `centered`) are stored as 0.0 / 1.0 and
/// `betas` as `beta1` / `beta2`.
#[derive(Clone, Debug)]
pub struct ParamGroup {
    /// The parameters this group updates.
    pub params: Vec<Tensor>,
    /// The learning rate; `None` takes the optimizer's default.
    pub lr: Option<f64>,
    /// Other hyperparameters by PyTorch name.
    pub options: BTreeMap<String, f64>,
}

impl ParamGroup {
    /// A group of `params` using the optimizer's defaults.
    pub fn new(params: Vec<Tensor>) -> Self {
        ParamGroup {
            params,
            lr: None,
            options: BTreeMap::new(),
        }
    }
    /// Set this group's learning rate.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = Some(lr);
        self
    }
    /// Set one hyperparameter of this group by its PyTorch name (e.g. `"momentum"`).
    pub fn with(mut self, name: &str, value: f64) -> Self {
        self.options.insert(name.to_string(), value);
        self
    }
    /// The value of option `name`; an option this group does not have (a misspelt name, or
    /// one of another optimizer) is an error naming the options it has. After construction
    /// a group has every option of its optimizer.
    pub fn option(&self, op: &'static str, name: &str) -> Result<f64> {
        self.options.get(name).copied().ok_or_else(|| {
            let known: Vec<&str> = self.options.keys().map(String::as_str).collect();
            Error::invalid(
                op,
                format!(
                    "param group has no option '{name}' (it has: {})",
                    known.join(", ")
                ),
            )
        })
    }
    /// Option `name` read as a flag (stored as 0.0 / 1.0).
    pub fn flag(&self, op: &'static str, name: &str) -> Result<bool> {
        Ok(self.option(op, name)? != 0.0)
    }
    /// The group's learning rate (0 before the optimizer fills in defaults).
    pub fn learning_rate(&self) -> f64 {
        self.lr.unwrap_or(0.0)
    }
}

/// Parameters given to an optimizer constructor: one list (one group) or several groups.
pub enum Params {
    /// A single group with the optimizer's defaults.
    List(Vec<Tensor>),
    /// Explicit param groups.
    Groups(Vec<ParamGroup>),
}

impl From<Vec<Tensor>> for Params {
    fn from(v: Vec<Tensor>) -> Self {
        Params::List(v)
    }
}
impl From<Vec<ParamGroup>> for Params {
    fn from(v: Vec<ParamGroup>) -> Self {
        Params::Groups(v)
    }
}

/// A value of per-parameter optimizer state: a buffer or a scalar (such as `step`).
#[derive(Clone, Debug)]
pub enum StateValue {
    /// A buffer shaped like the parameter (momentum, running averages, ...).
    Tensor(Tensor),
    /// A scalar such as the step count.
    Scalar(f64),
}

/// The state of one parameter, by PyTorch's state names (`step`, `exp_avg`, ...).
pub type ParamState = BTreeMap<String, StateValue>;

/// The hyperparameters of one group in a state dict; `params` are indices into the flat list
/// of all parameters, as PyTorch's `state_dict()["param_groups"]`.
#[derive(Clone, Debug)]
pub struct GroupState {
    /// The learning rate.
    pub lr: f64,
    /// Every other hyperparameter by name.
    pub options: BTreeMap<String, f64>,
    /// Indices of this group's parameters.
    pub params: Vec<usize>,
}

/// An optimizer's hyperparameters as a typed struct (`SgdOptions`, `AdamOptions`, ...), which
/// a param group stores by PyTorch name. Updates read them back through [`Self::from_group`],
/// so a misspelt name is an error at the first step, never a silent 0.0.
pub trait GroupOptions: Sized {
    /// The default learning rate.
    fn lr(&self) -> f64;
    /// Every option but `lr`, by PyTorch name (flags as 0.0 / 1.0, `betas` as `beta1` /
    /// `beta2`).
    fn named(&self) -> Vec<(&'static str, f64)>;
    /// The options of `group`, `lr` included; `op` names the optimizer in errors.
    fn from_group(op: &'static str, group: &ParamGroup) -> Result<Self>;
    /// PyTorch's constructor checks of the values ("Invalid learning rate: -1", ...).
    fn validate(&self, op: &'static str) -> Result<()>;
}

/// A serialisable snapshot of an optimizer (`optimizer.state_dict()`): per-parameter state
/// keyed by parameter index, and the param groups' hyperparameters.
#[derive(Clone, Debug, Default)]
pub struct OptimizerState {
    /// Per-parameter state; parameters never updated have no entry.
    pub state: BTreeMap<usize, ParamState>,
    /// One entry per param group.
    pub param_groups: Vec<GroupState>,
}

/// What every optimizer shares: groups, per-parameter state and the defaults.
#[derive(Clone, Debug)]
pub struct OptimizerCore {
    /// The optimizer's name, for errors.
    op: &'static str,
    /// The param groups with every option filled in.
    pub groups: Vec<ParamGroup>,
    /// Per-parameter state keyed by flat parameter index.
    pub state: BTreeMap<usize, ParamState>,
}

impl OptimizerCore {
    /// Build groups from `params`, filling each group's missing options (`lr` included) from
    /// `defaults`, rejecting unknown option names and values the optimizer refuses.
    pub fn new<O: GroupOptions>(op: &'static str, params: Params, defaults: &O) -> Result<Self> {
        let lr = defaults.lr();
        let mut groups = match params {
            Params::List(p) => vec![ParamGroup::new(p)],
            Params::Groups(g) => g,
        };
        if groups.is_empty() || groups.iter().all(|g| g.params.is_empty()) {
            return Err(Error::invalid(op, "optimizer got an empty parameter list"));
        }
        let defaults = defaults.named();
        for g in &mut groups {
            for name in g.options.keys() {
                if !defaults.iter().any(|(d, _)| d == name) {
                    return Err(Error::invalid(
                        op,
                        format!("unknown param group option '{name}'"),
                    ));
                }
            }
            g.lr.get_or_insert(lr);
            for (name, value) in &defaults {
                g.options.entry(name.to_string()).or_insert(*value);
            }
            O::from_group(op, g)?.validate(op)?;
            for p in &g.params {
                if !p.dtype().is_float() {
                    return Err(Error::dtype(
                        op,
                        format!(
                            "can only optimize floating point tensors, got {}",
                            p.dtype()
                        ),
                    ));
                }
            }
        }
        Ok(OptimizerCore {
            op,
            groups,
            state: BTreeMap::new(),
        })
    }

    /// Run `update(options, param, grad, state)` for every parameter that has a gradient,
    /// under `no_grad()`, with its group's options read as `O`.
    pub fn for_each_param<O: GroupOptions>(
        &mut self,
        update: impl FnMut(&O, &Tensor, &Tensor, &mut ParamState) -> Result<()> + Send,
    ) -> Result<()> {
        let params = self.groups.iter().flat_map(|g| &g.params);
        let device = params.map(|p| p.device()).find(|d| !d.is_cpu());
        // A few small kernels per parameter: on the CPU, all of them run on a compute thread.
        crate::parallel::run_for(device.unwrap_or(Device::Cpu), || self.update_each(update))
    }

    /// The loop of [`Self::for_each_param`], on the calling thread.
    fn update_each<O: GroupOptions>(
        &mut self,
        mut update: impl FnMut(&O, &Tensor, &Tensor, &mut ParamState) -> Result<()>,
    ) -> Result<()> {
        let _guard = crate::autograd::no_grad();
        let mut index = 0;
        for group in &self.groups {
            let options = O::from_group(self.op, group)?;
            for p in &group.params {
                if let Some(g) = p.grad() {
                    let state = self.state.entry(index).or_default();
                    update(&options, p, &g, state)?;
                    if state.is_empty() {
                        // Stateless updates (plain SGD) leave no entry, as PyTorch.
                        self.state.remove(&index);
                    }
                }
                index += 1;
            }
        }
        Ok(())
    }

    fn state_dict(&self) -> OptimizerState {
        let mut next = 0;
        let param_groups = self
            .groups
            .iter()
            .map(|g| {
                let params: Vec<usize> = (next..next + g.params.len()).collect();
                next += g.params.len();
                GroupState {
                    lr: g.learning_rate(),
                    options: g.options.clone(),
                    params,
                }
            })
            .collect();
        let state = self
            .state
            .iter()
            .map(|(i, s)| {
                let copy = s
                    .iter()
                    .map(|(k, v)| {
                        let v = match v {
                            StateValue::Tensor(t) => StateValue::Tensor(
                                t.detach().contiguous_copy().unwrap_or_else(|_| t.clone()),
                            ),
                            StateValue::Scalar(x) => StateValue::Scalar(*x),
                        };
                        (k.clone(), v)
                    })
                    .collect();
                (*i, copy)
            })
            .collect();
        OptimizerState {
            state,
            param_groups,
        }
    }

    fn load_state_dict(&mut self, op: &'static str, sd: &OptimizerState) -> Result<()> {
        if sd.param_groups.len() != self.groups.len() {
            return Err(Error::invalid(
                op,
                format!(
                    "loaded state dict has {} parameter groups, the optimizer has {}",
                    sd.param_groups.len(),
                    self.groups.len()
                ),
            ));
        }
        let mut shapes = Vec::new();
        for (g, s) in self.groups.iter().zip(&sd.param_groups) {
            if g.params.len() != s.params.len() {
                return Err(Error::invalid(
                    op,
                    format!(
                        "loaded state dict contains a parameter group of {} parameters that \
                         doesn't match the size of the optimizer's group ({})",
                        s.params.len(),
                        g.params.len()
                    ),
                ));
            }
            shapes.extend(g.params.iter().cloned());
        }
        let mut state = BTreeMap::new();
        for (i, s) in &sd.state {
            let p = shapes.get(*i).ok_or_else(|| {
                Error::index(
                    op,
                    format!("state for parameter {i}, but there are {}", shapes.len()),
                )
            })?;
            let mut copy = ParamState::new();
            for (k, v) in s {
                let v = match v {
                    StateValue::Tensor(t) => {
                        if t.shape() != p.shape() {
                            return Err(Error::shape(
                                op,
                                format!(
                                    "state '{k}' of parameter {i} has shape {:?}, the parameter {:?}",
                                    t.shape(),
                                    p.shape()
                                ),
                            ));
                        }
                        // Cast to the parameter's dtype and take a private copy, as PyTorch.
                        StateValue::Tensor(t.detach().to_dtype(p.dtype())?.contiguous_copy()?)
                    }
                    StateValue::Scalar(x) => StateValue::Scalar(*x),
                };
                copy.insert(k.clone(), v);
            }
            state.insert(*i, copy);
        }
        for (g, s) in self.groups.iter_mut().zip(&sd.param_groups) {
            g.lr = Some(s.lr);
            g.options = s.options.clone();
        }
        self.state = state;
        Ok(())
    }
}

/// The interface of every optimizer (`torch.optim.Optimizer`). `Send` so that a training
/// step can run on a compute thread (`parallel::run`).
pub trait Optimizer: Send {
    /// The shared groups and state.
    fn core(&self) -> &OptimizerCore;
    /// The shared groups and state, mutably.
    fn core_mut(&mut self) -> &mut OptimizerCore;
    /// The name used in error messages.
    fn name(&self) -> &'static str;
    /// Perform one update of every parameter that has a gradient (`optimizer.step()`).
    fn step(&mut self) -> Result<()>;

    /// Clear every parameter's gradient (`zero_grad(set_to_none=True)`, PyTorch's default).
    fn zero_grad(&self) {
        for g in &self.core().groups {
            for p in &g.params {
                p.set_grad(None);
            }
        }
    }
    /// The param groups (`optimizer.param_groups`).
    fn param_groups(&self) -> &[ParamGroup] {
        &self.core().groups
    }
    /// The param groups, mutably (to change hyperparameters between steps).
    fn param_groups_mut(&mut self) -> &mut [ParamGroup] {
        &mut self.core_mut().groups
    }
    /// The learning rate of every group.
    fn lrs(&self) -> Vec<f64> {
        self.core()
            .groups
            .iter()
            .map(|g| g.learning_rate())
            .collect()
    }
    /// The learning rate of group `group`.
    fn lr(&self, group: usize) -> Result<f64> {
        let n = self.core().groups.len();
        self.core()
            .groups
            .get(group)
            .map(|g| g.learning_rate())
            .ok_or_else(|| Error::index("lr", format!("group {group} of {n}")))
    }
    /// Set the learning rate of group `group`; it must be non-negative.
    fn set_lr(&mut self, group: usize, lr: f64) -> Result<()> {
        check_nonneg("set_lr", "learning rate", lr)?;
        let n = self.core().groups.len();
        let g = self
            .core_mut()
            .groups
            .get_mut(group)
            .ok_or_else(|| Error::index("set_lr", format!("group {group} of {n}")))?;
        g.lr = Some(lr);
        Ok(())
    }
    /// A snapshot of the state and hyperparameters (`optimizer.state_dict()`); buffers are
    /// copied, so later steps do not change the snapshot.
    fn state_dict(&self) -> OptimizerState {
        self.core().state_dict()
    }
    /// Restore a snapshot taken with [`Optimizer::state_dict`] from an optimizer over
    /// parameters of the same group sizes and shapes (`optimizer.load_state_dict`).
    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        let name = self.name();
        self.core_mut().load_state_dict(name, state)
    }
}

/// Error unless `value >= 0` (PyTorch's "Invalid learning rate: -1" style checks).
pub(crate) fn check_nonneg(op: &'static str, what: &str, value: f64) -> Result<()> {
    if value.is_nan() || value < 0.0 {
        return Err(Error::invalid(op, format!("Invalid {what}: {value}")));
    }
    Ok(())
}

/// Error unless `lo <= value < hi` (or `<= hi` when `hi_inclusive`).
pub(crate) fn check_range(
    op: &'static str,
    what: &str,
    value: f64,
    lo: f64,
    hi: f64,
    hi_inclusive: bool,
) -> Result<()> {
    let ok = value >= lo && (value < hi || (hi_inclusive && value == hi));
    if !ok {
        let close = if hi_inclusive { ']' } else { ')' };
        return Err(Error::invalid(
            op,
            format!("Invalid {what}: {value} (must be in [{lo}, {hi}{close})"),
        ));
    }
    Ok(())
}

/// Error unless every value is `>= 0`: each `(what, value)` pair, `lr` first.
pub(crate) fn check_nonnegs(op: &'static str, values: &[(&str, f64)]) -> Result<()> {
    values
        .iter()
        .try_for_each(|(what, v)| check_nonneg(op, what, *v))
}

/// A flag as a param group stores it.
pub(crate) fn flag_value(flag: bool) -> f64 {
    f64::from(u8::from(flag))
}

/// A state buffer by name, created zero-filled like `p` on first use.
pub(crate) fn buffer(state: &mut ParamState, name: &str, p: &Tensor, init: f64) -> Result<Tensor> {
    if let Some(StateValue::Tensor(t)) = state.get(name) {
        return Ok(t.clone());
    }
    let t = p.detach().full_like(init)?;
    state.insert(name.to_string(), StateValue::Tensor(t.clone()));
    Ok(t)
}

/// Increment the `step` scalar and return the new count.
pub(crate) fn next_step(state: &mut ParamState) -> f64 {
    let step = match state.get("step") {
        Some(StateValue::Scalar(s)) => *s + 1.0,
        _ => 1.0,
    };
    state.insert("step".into(), StateValue::Scalar(step));
    step
}

/// The gradient with `maximize` and L2 `weight_decay` applied (`g = ±grad + wd * p`).
pub(crate) fn effective_grad(g: &Tensor, p: &Tensor, maximize: bool, wd: f64) -> Result<Tensor> {
    let mut g = if maximize { g.neg()? } else { g.clone() };
    if wd != 0.0 {
        g = g.add(&p.mul_scalar(wd)?)?;
    }
    Ok(g)
}
