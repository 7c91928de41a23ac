//! Adagrad (`torch.optim.Adagrad`).

use super::{
    buffer, check_groups, effective_grad, next_step, Optimizer, OptimizerCore, ParamGroup,
    ParamState, Params,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// Hyperparameters of [`Adagrad`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct AdagradOptions {
    /// Learning rate (default 1e-2).
    pub lr: f64,
    /// Learning-rate decay per step (default 0).
    pub lr_decay: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Starting value of the squared-gradient sum (default 0).
    pub initial_accumulator_value: f64,
    /// Added to the denominator (default 1e-10).
    pub eps: f64,
    /// Maximize the objective (default false).
    pub maximize: bool,
}

impl Default for AdagradOptions {
    fn default() -> Self {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

/// Adagrad (`torch.optim.Adagrad`).
pub struct Adagrad {
    core: OptimizerCore,
}

impl Adagrad {
    /// Build from a parameter list or param groups (`torch.optim.Adagrad(params, ...)`).
    pub fn new(params: impl Into<Params>, o: AdagradOptions) -> Result<Self> {
        let core = OptimizerCore::new(
            "Adagrad",
            params.into(),
            o.lr,
            &[
                ("lr_decay", o.lr_decay),
                ("weight_decay", o.weight_decay),
                ("initial_accumulator_value", o.initial_accumulator_value),
                ("eps", o.eps),
                ("maximize", f64::from(u8::from(o.maximize))),
            ],
        )?;
        check_groups(
            "Adagrad",
            &core,
            &[
                "lr_decay",
                "weight_decay",
                "initial_accumulator_value",
                "eps",
            ],
        )?;
        Ok(Adagrad { core })
    }
}

fn adagrad_update(
    group: &ParamGroup,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    let step = next_step(state);
    let grad = effective_grad(grad, p, group.flag("maximize"), group.get("weight_decay"))?;
    let clr = group.learning_rate() / (1.0 + (step - 1.0) * group.get("lr_decay"));
    let sum = buffer(state, "sum", p, group.get("initial_accumulator_value"))?;
    sum.add_(&grad.mul(&grad)?)?;
    let std = sum.sqrt()?.add_scalar(group.get("eps"))?;
    p.add_scaled_(&grad.div(&std)?, -clr)?;
    Ok(())
}

impl Optimizer for Adagrad {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "Adagrad"
    }
    fn step(&mut self) -> Result<()> {
        self.core.for_each_param(adagrad_update)
    }
}
