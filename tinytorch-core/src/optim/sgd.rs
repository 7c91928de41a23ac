//! Stochastic gradient descent with momentum (`torch.optim.SGD`).

use super::{
    buffer, check_nonnegs, effective_grad, flag_value, GroupOptions, Optimizer, OptimizerCore,
    ParamGroup, ParamState, Params, StateValue,
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

impl GroupOptions for SgdOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("momentum", self.momentum),
            ("dampening", self.dampening),
            ("weight_decay", self.weight_decay),
            ("nesterov", flag_value(self.nesterov)),
            ("maximize", flag_value(self.maximize)),
        ]
    }
    fn from_group(op: &'static str, g: &ParamGroup) -> Result<Self> {
        Ok(SgdOptions {
            lr: g.learning_rate(),
            momentum: g.option(op, "momentum")?,
            dampening: g.option(op, "dampening")?,
            weight_decay: g.option(op, "weight_decay")?,
            nesterov: g.flag(op, "nesterov")?,
            maximize: g.flag(op, "maximize")?,
        })
    }
    fn validate(&self, op: &'static str) -> Result<()> {
        check_nonnegs(
            op,
            &[
                ("learning rate", self.lr),
                ("momentum value", self.momentum),
                ("weight_decay value", self.weight_decay),
            ],
        )?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::invalid(
                op,
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        Ok(())
    }
}

/// Stochastic gradient descent, optionally with (Nesterov) momentum (`torch.optim.SGD`).
pub struct SGD {
    core: OptimizerCore,
}

impl SGD {
    /// Build from a parameter list or param groups (`torch.optim.SGD(params, lr=..., ...)`).
    pub fn new(params: impl Into<Params>, opts: SgdOptions) -> Result<Self> {
        Ok(SGD {
            core: OptimizerCore::new("SGD", params.into(), &opts)?,
        })
    }
}

fn sgd_update(o: &SgdOptions, p: &Tensor, grad: &Tensor, state: &mut ParamState) -> Result<()> {
    let mut d_p = effective_grad(grad, p, o.maximize, o.weight_decay)?;
    if o.momentum != 0.0 {
        let buf = if state.contains_key("momentum_buffer") {
            let buf = buffer(state, "momentum_buffer", p, 0.0)?;
            buf.mul_scalar_(o.momentum)?;
            buf.add_scaled_(&d_p, 1.0 - o.dampening)?;
            buf
        } else {
            // The first step stores the gradient itself, undampened (as PyTorch).
            let buf = d_p.detach().contiguous_copy()?;
            state.insert("momentum_buffer".into(), StateValue::Tensor(buf.clone()));
            buf
        };
        d_p = if o.nesterov {
            d_p.add(&buf.mul_scalar(o.momentum)?)?
        } else {
            buf
        };
    }
    p.add_scaled_(&d_p, -o.lr)?;
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
