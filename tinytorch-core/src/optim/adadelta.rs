//! Adadelta (`torch.optim.Adadelta`).

use super::{
    buffer, check_nonnegs, check_range, effective_grad, flag_value, next_step, GroupOptions,
    Optimizer, OptimizerCore, ParamGroup, ParamState, Params,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// Hyperparameters of [`Adadelta`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct AdadeltaOptions {
    /// Scale of the delta (default 1.0).
    pub lr: f64,
    /// Running-average coefficient (default 0.9).
    pub rho: f64,
    /// Added inside the square roots (default 1e-6).
    pub eps: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Maximize the objective (default false).
    pub maximize: bool,
}

impl Default for AdadeltaOptions {
    fn default() -> Self {
        AdadeltaOptions {
            lr: 1.0,
            rho: 0.9,
            eps: 1e-6,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

impl GroupOptions for AdadeltaOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("rho", self.rho),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("maximize", flag_value(self.maximize)),
        ]
    }
    fn from_group(op: &'static str, g: &ParamGroup) -> Result<Self> {
        Ok(AdadeltaOptions {
            lr: g.learning_rate(),
            rho: g.option(op, "rho")?,
            eps: g.option(op, "eps")?,
            weight_decay: g.option(op, "weight_decay")?,
            maximize: g.flag(op, "maximize")?,
        })
    }
    fn validate(&self, op: &'static str) -> Result<()> {
        check_nonnegs(
            op,
            &[
                ("learning rate", self.lr),
                ("epsilon value", self.eps),
                ("weight_decay value", self.weight_decay),
            ],
        )?;
        check_range(op, "rho value", self.rho, 0.0, 1.0, true)
    }
}

/// Adadelta (`torch.optim.Adadelta`).
pub struct Adadelta {
    core: OptimizerCore,
}

impl Adadelta {
    /// Build from a parameter list or param groups (`torch.optim.Adadelta(params, ...)`).
    pub fn new(params: impl Into<Params>, o: AdadeltaOptions) -> Result<Self> {
        Ok(Adadelta {
            core: OptimizerCore::new("Adadelta", params.into(), &o)?,
        })
    }
}

fn adadelta_update(
    o: &AdadeltaOptions,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    next_step(state);
    let grad = effective_grad(grad, p, o.maximize, o.weight_decay)?;
    let square_avg = buffer(state, "square_avg", p, 0.0)?;
    let acc_delta = buffer(state, "acc_delta", p, 0.0)?;
    square_avg.mul_scalar_(o.rho)?;
    square_avg.add_scaled_(&grad.mul(&grad)?, 1.0 - o.rho)?;
    let std = square_avg.add_scalar(o.eps)?.sqrt()?;
    let delta = acc_delta.add_scalar(o.eps)?.sqrt()?.div(&std)?.mul(&grad)?;
    acc_delta.mul_scalar_(o.rho)?;
    acc_delta.add_scaled_(&delta.mul(&delta)?, 1.0 - o.rho)?;
    p.add_scaled_(&delta, -o.lr)?;
    Ok(())
}

impl Optimizer for Adadelta {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "Adadelta"
    }
    fn step(&mut self) -> Result<()> {
        self.core.for_each_param(adadelta_update)
    }
}
