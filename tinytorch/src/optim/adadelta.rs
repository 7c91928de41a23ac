//! Adadelta (`torch.optim.Adadelta`).

use super::{
    buffer, check_groups, check_range, effective_grad, next_step, Optimizer, OptimizerCore,
    ParamGroup, ParamState, Params,
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

/// Adadelta (`torch.optim.Adadelta`).
pub struct Adadelta {
    core: OptimizerCore,
}

impl Adadelta {
    /// Build from a parameter list or param groups (`torch.optim.Adadelta(params, ...)`).
    pub fn new(params: impl Into<Params>, o: AdadeltaOptions) -> Result<Self> {
        let core = OptimizerCore::new(
            "Adadelta",
            params.into(),
            o.lr,
            &[
                ("rho", o.rho),
                ("eps", o.eps),
                ("weight_decay", o.weight_decay),
                ("maximize", f64::from(u8::from(o.maximize))),
            ],
        )?;
        check_groups("Adadelta", &core, &["eps", "weight_decay"])?;
        for g in &core.groups {
            check_range("Adadelta", "rho value", g.get("rho"), 0.0, 1.0, true)?;
        }
        Ok(Adadelta { core })
    }
}

fn adadelta_update(
    group: &ParamGroup,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    let rho = group.get("rho");
    let eps = group.get("eps");
    next_step(state);
    let grad = effective_grad(grad, p, group.flag("maximize"), group.get("weight_decay"))?;
    let square_avg = buffer(state, "square_avg", p, 0.0)?;
    let acc_delta = buffer(state, "acc_delta", p, 0.0)?;
    square_avg.mul_scalar_(rho)?;
    square_avg.add_scaled_(&grad.mul(&grad)?, 1.0 - rho)?;
    let std = square_avg.add_scalar(eps)?.sqrt()?;
    let delta = acc_delta.add_scalar(eps)?.sqrt()?.div(&std)?.mul(&grad)?;
    acc_delta.mul_scalar_(rho)?;
    acc_delta.add_scaled_(&delta.mul(&delta)?, 1.0 - rho)?;
    p.add_scaled_(&delta, -group.learning_rate())?;
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
