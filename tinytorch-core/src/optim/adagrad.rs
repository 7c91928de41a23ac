//! Adagrad (`torch.optim.Adagrad`).

use super::{
    buffer, check_nonnegs, effective_grad, flag_value, next_step, GroupOptions, Optimizer,
    OptimizerCore, ParamGroup, ParamState, Params,
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

impl GroupOptions for AdagradOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("lr_decay", self.lr_decay),
            ("weight_decay", self.weight_decay),
            ("initial_accumulator_value", self.initial_accumulator_value),
            ("eps", self.eps),
            ("maximize", flag_value(self.maximize)),
        ]
    }
    fn from_group(op: &'static str, g: &ParamGroup) -> Result<Self> {
        Ok(AdagradOptions {
            lr: g.learning_rate(),
            lr_decay: g.option(op, "lr_decay")?,
            weight_decay: g.option(op, "weight_decay")?,
            initial_accumulator_value: g.option(op, "initial_accumulator_value")?,
            eps: g.option(op, "eps")?,
            maximize: g.flag(op, "maximize")?,
        })
    }
    fn validate(&self, op: &'static str) -> Result<()> {
        check_nonnegs(
            op,
            &[
                ("learning rate", self.lr),
                ("lr_decay value", self.lr_decay),
                ("weight_decay value", self.weight_decay),
                (
                    "initial_accumulator_value value",
                    self.initial_accumulator_value,
                ),
                ("epsilon value", self.eps),
            ],
        )
    }
}

/// Adagrad (`torch.optim.Adagrad`).
pub struct Adagrad {
    core: OptimizerCore,
}

impl Adagrad {
    /// Build from a parameter list or param groups (`torch.optim.Adagrad(params, ...)`).
    pub fn new(params: impl Into<Params>, o: AdagradOptions) -> Result<Self> {
        Ok(Adagrad {
            core: OptimizerCore::new("Adagrad", params.into(), &o)?,
        })
    }
}

fn adagrad_update(
    o: &AdagradOptions,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    let step = next_step(state);
    let grad = effective_grad(grad, p, o.maximize, o.weight_decay)?;
    let clr = o.lr / (1.0 + (step - 1.0) * o.lr_decay);
    let sum = buffer(state, "sum", p, o.initial_accumulator_value)?;
    sum.add_(&grad.mul(&grad)?)?;
    let std = sum.sqrt()?.add_scalar(o.eps)?;
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
