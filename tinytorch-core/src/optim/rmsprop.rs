//! RMSprop (`torch.optim.RMSprop`).

use super::{
    buffer, check_nonnegs, effective_grad, flag_value, next_step, GroupOptions, Optimizer,
    OptimizerCore, ParamGroup, ParamState, Params,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// Hyperparameters of [`RMSprop`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct RMSpropOptions {
    /// Learning rate (default 1e-2).
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average (default 0.99).
    pub alpha: f64,
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Momentum factor (default 0).
    pub momentum: f64,
    /// Normalise by the estimated variance instead of the raw second moment (default false).
    pub centered: bool,
    /// Maximize the objective (default false).
    pub maximize: bool,
}

impl Default for RMSpropOptions {
    fn default() -> Self {
        RMSpropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
        }
    }
}

impl GroupOptions for RMSpropOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("alpha", self.alpha),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("momentum", self.momentum),
            ("centered", flag_value(self.centered)),
            ("maximize", flag_value(self.maximize)),
        ]
    }
    fn from_group(op: &'static str, g: &ParamGroup) -> Result<Self> {
        Ok(RMSpropOptions {
            lr: g.learning_rate(),
            alpha: g.option(op, "alpha")?,
            eps: g.option(op, "eps")?,
            weight_decay: g.option(op, "weight_decay")?,
            momentum: g.option(op, "momentum")?,
            centered: g.flag(op, "centered")?,
            maximize: g.flag(op, "maximize")?,
        })
    }
    fn validate(&self, op: &'static str) -> Result<()> {
        check_nonnegs(
            op,
            &[
                ("learning rate", self.lr),
                ("epsilon value", self.eps),
                ("momentum value", self.momentum),
                ("weight_decay value", self.weight_decay),
                ("alpha value", self.alpha),
            ],
        )
    }
}

/// RMSprop (`torch.optim.RMSprop`).
pub struct RMSprop {
    core: OptimizerCore,
}

impl RMSprop {
    /// Build from a parameter list or param groups (`torch.optim.RMSprop(params, ...)`).
    pub fn new(params: impl Into<Params>, o: RMSpropOptions) -> Result<Self> {
        Ok(RMSprop {
            core: OptimizerCore::new("RMSprop", params.into(), &o)?,
        })
    }
}

fn rmsprop_update(
    o: &RMSpropOptions,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
) -> Result<()> {
    let alpha = o.alpha;
    next_step(state);
    let grad = effective_grad(grad, p, o.maximize, o.weight_decay)?;
    let square_avg = buffer(state, "square_avg", p, 0.0)?;
    square_avg.mul_scalar_(alpha)?;
    square_avg.add_scaled_(&grad.mul(&grad)?, 1.0 - alpha)?;
    let avg = if o.centered {
        let grad_avg = buffer(state, "grad_avg", p, 0.0)?;
        grad_avg.mul_scalar_(alpha)?;
        grad_avg.add_scaled_(&grad, 1.0 - alpha)?;
        square_avg.sub(&grad_avg.mul(&grad_avg)?)?.sqrt()?
    } else {
        square_avg.sqrt()?
    };
    let avg = avg.add_scalar(o.eps)?;
    if o.momentum > 0.0 {
        let buf = buffer(state, "momentum_buffer", p, 0.0)?;
        buf.mul_scalar_(o.momentum)?;
        buf.add_(&grad.div(&avg)?)?;
        p.add_scaled_(&buf, -o.lr)?;
    } else {
        p.add_scaled_(&grad.div(&avg)?, -o.lr)?;
    }
    Ok(())
}

impl Optimizer for RMSprop {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "RMSprop"
    }
    fn step(&mut self) -> Result<()> {
        self.core.for_each_param(rmsprop_update)
    }
}
