//! Stochastic gradient descent with momentum (`torch.optim.SGD`).

use super::{
    buffer, check_groups, effective_grad, Optimizer, OptimizerCore, ParamState, Params, StateValue,
};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Hyperparameters of [`SGD`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct SgdOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Momentum factor (default 0).
    pub momentum: f64,
    /// Dampening for momentum (default 0).
    pub dampening: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Nesterov momentum; needs momentum > 0 and dampening 0 (default false).
    pub nesterov: bool,
    /// Maximize the objective instead of minimizing (default false).
    pub maximize: bool,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

/// Stochastic gradient descent, optionally with (Nesterov) momentum (`torch.optim.SGD`).
pub struct SGD {
    core: OptimizerCore,
}

impl SGD {
    /// Build from a parameter list or param groups (`torch.optim.SGD(params, lr=..., ...)`).
    pub fn new(params: impl Into<Params>, opts: SgdOptions) -> Result<Self> {
        let core = OptimizerCore::new(
            "SGD",
            params.into(),
            opts.lr,
            &[
                ("momentum", opts.momentum),
                ("dampening", opts.dampening),
                ("weight_decay", opts.weight_decay),
                ("nesterov", f64::from(u8::from(opts.nesterov))),
                ("maximize", f64::from(u8::from(opts.maximize))),
            ],
        )?;
        check_groups("SGD", &core, &["momentum", "weight_decay"])?;
        for g in &core.groups {
            if g.flag("nesterov") && (g.get("momentum") <= 0.0 || g.get("dampening") != 0.0) {
                return Err(Error::invalid(
                    "SGD",
                    "Nesterov momentum requires a momentum and zero dampening",
                ));
            }
        }
        Ok(SGD { core })
    }
}

fn sgd_update(
    group: &super::ParamGroup,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    let mut d_p = effective_grad(grad, p, group.flag("maximize"), group.get("weight_decay"))?;
    let momentum = group.get("momentum");
    if momentum != 0.0 {
        let buf = if state.contains_key("momentum_buffer") {
            let buf = buffer(state, "momentum_buffer", p, 0.0)?;
            buf.mul_scalar_(momentum)?;
            buf.add_scaled_(&d_p, 1.0 - group.get("dampening"))?;
            buf
        } else {
            // The first step stores the gradient itself, undampened (as PyTorch).
            let buf = d_p.detach().contiguous_copy()?;
            state.insert("momentum_buffer".into(), StateValue::Tensor(buf.clone()));
            buf
        };
        d_p = if group.flag("nesterov") {
            d_p.add(&buf.mul_scalar(momentum)?)?
        } else {
            buf
        };
    }
    p.add_scaled_(&d_p, -group.learning_rate())?;
    Ok(())
}

impl Optimizer for SGD {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "SGD"
    }
    fn step(&mut self) -> Result<()> {
        self.core.for_each_param(sgd_update)
    }
}
