//! Adam and AdamW (`torch.optim.Adam`, `torch.optim.AdamW`).

use super::{
    buffer, check_groups, check_range, effective_grad, next_step, Optimizer, OptimizerCore,
    ParamGroup, ParamState, Params,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// Hyperparameters of [`Adam`] and [`AdamW`], with PyTorch's defaults
/// (`weight_decay` defaults to 0 for Adam and 1e-2 for AdamW: see [`AdamOptions::adamw`]).
#[derive(Clone, Copy, Debug)]
pub struct AdamOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Running-average coefficients of the gradient and its square (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
    /// L2 penalty for Adam, decoupled decay for AdamW.
    pub weight_decay: f64,
    /// Use the AMSGrad variant (default false).
    pub amsgrad: bool,
    /// Maximize the objective (default false).
    pub maximize: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
        }
    }
}

impl AdamOptions {
    /// AdamW's defaults (weight_decay 1e-2).
    pub fn adamw() -> Self {
        AdamOptions {
            weight_decay: 1e-2,
            ..Default::default()
        }
    }
}

fn adam_core(op: &'static str, params: Params, o: AdamOptions) -> Result<OptimizerCore> {
    let core = OptimizerCore::new(
        op,
        params,
        o.lr,
        &[
            ("beta1", o.betas.0),
            ("beta2", o.betas.1),
            ("eps", o.eps),
            ("weight_decay", o.weight_decay),
            ("amsgrad", f64::from(u8::from(o.amsgrad))),
            ("maximize", f64::from(u8::from(o.maximize))),
        ],
    )?;
    check_groups(op, &core, &["eps", "weight_decay"])?;
    for g in &core.groups {
        check_range(
            op,
            "beta parameter at index 0",
            g.get("beta1"),
            0.0,
            1.0,
            false,
        )?;
        check_range(
            op,
            "beta parameter at index 1",
            g.get("beta2"),
            0.0,
            1.0,
            false,
        )?;
    }
    Ok(core)
}

/// One Adam update; `decoupled` selects AdamW's `p *= 1 - lr * wd` instead of L2 on the grad.
fn adam_update(
    group: &ParamGroup,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
    decoupled: bool,
) -> Result<()> {
    let lr = group.learning_rate();
    let wd = group.get("weight_decay");
    let (beta1, beta2) = (group.get("beta1"), group.get("beta2"));
    let step = next_step(state);
    let grad = if decoupled {
        p.mul_scalar_(1.0 - lr * wd)?;
        effective_grad(grad, p, group.flag("maximize"), 0.0)?
    } else {
        effective_grad(grad, p, group.flag("maximize"), wd)?
    };
    let exp_avg = buffer(state, "exp_avg", p, 0.0)?;
    let exp_avg_sq = buffer(state, "exp_avg_sq", p, 0.0)?;
    exp_avg.mul_scalar_(beta1)?;
    exp_avg.add_scaled_(&grad, 1.0 - beta1)?;
    exp_avg_sq.mul_scalar_(beta2)?;
    exp_avg_sq.add_scaled_(&grad.mul(&grad)?, 1.0 - beta2)?;
    let bias_correction1 = 1.0 - beta1.powf(step);
    let bias_correction2_sqrt = (1.0 - beta2.powf(step)).sqrt();
    let second = if group.flag("amsgrad") {
        let max_sq = buffer(state, "max_exp_avg_sq", p, 0.0)?;
        max_sq.copy_(&max_sq.maximum(&exp_avg_sq)?)?;
        max_sq
    } else {
        exp_avg_sq
    };
    let denom = second
        .sqrt()?
        .mul_scalar(1.0 / bias_correction2_sqrt)?
        .add_scalar(group.get("eps"))?;
    p.add_scaled_(&exp_avg.div(&denom)?, -lr / bias_correction1)?;
    Ok(())
}

/// Adam (`torch.optim.Adam`): weight decay is an L2 term added to the gradient.
pub struct Adam {
    core: OptimizerCore,
}

impl Adam {
    /// Build from a parameter list or param groups (`torch.optim.Adam(params, ...)`).
    pub fn new(params: impl Into<Params>, opts: AdamOptions) -> Result<Self> {
        Ok(Adam {
            core: adam_core("Adam", params.into(), opts)?,
        })
    }
}

impl Optimizer for Adam {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "Adam"
    }
    fn step(&mut self) -> Result<()> {
        self.core
            .for_each_param(|g, p, grad, s| adam_update(g, p, grad, s, false))
    }
}

/// AdamW (`torch.optim.AdamW`): Adam with decoupled weight decay.
pub struct AdamW {
    core: OptimizerCore,
}

impl AdamW {
    /// Build from a parameter list or param groups (`torch.optim.AdamW(params, ...)`); pass
    /// [`AdamOptions::adamw`] for PyTorch's defaults.
    pub fn new(params: impl Into<Params>, opts: AdamOptions) -> Result<Self> {
        Ok(AdamW {
            core: adam_core("AdamW", params.into(), opts)?,
        })
    }
}

impl Optimizer for AdamW {
    fn core(&self) -> &OptimizerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut OptimizerCore {
        &mut self.core
    }
    fn name(&self) -> &'static str {
        "AdamW"
    }
    fn step(&mut self) -> Result<()> {
        self.core
            .for_each_param(|g, p, grad, s| adam_update(g, p, grad, s, true))
    }
}
