//! Adam and AdamW (`torch.optim.Adam`, `torch.optim.AdamW`).

use super::{
    buffer, check_nonnegs, check_range, effective_grad, flag_value, next_step, GroupOptions,
    Optimizer, OptimizerCore, ParamGroup, ParamState, Params,
};
use crate::error::Result;
use crate::ops::adam::{fused_adam_update, AdamMoments as Moments, AdamStep};
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

impl GroupOptions for AdamOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("beta1", self.betas.0),
            ("beta2", self.betas.1),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("amsgrad", flag_value(self.amsgrad)),
            ("maximize", flag_value(self.maximize)),
        ]
    }
    fn from_group(op: &'static str, g: &ParamGroup) -> Result<Self> {
        Ok(AdamOptions {
            lr: g.learning_rate(),
            betas: (g.option(op, "beta1")?, g.option(op, "beta2")?),
            eps: g.option(op, "eps")?,
            weight_decay: g.option(op, "weight_decay")?,
            amsgrad: g.flag(op, "amsgrad")?,
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
        let (beta1, beta2) = self.betas;
        check_range(op, "beta parameter at index 0", beta1, 0.0, 1.0, false)?;
        check_range(op, "beta parameter at index 1", beta2, 0.0, 1.0, false)
    }
}

/// One Adam update; `decoupled` selects AdamW's `p *= 1 - lr * wd` instead of L2 on the grad.
fn adam_update(
    o: &AdamOptions,
    p: &Tensor,
    grad: &Tensor,
    state: &mut ParamState,
    decoupled: bool,
) -> Result<()> {
    let step = next_step(state);
    let (beta1, beta2) = o.betas;
    let s = AdamStep {
        lr: o.lr,
        weight_decay: o.weight_decay,
        decoupled,
        maximize: o.maximize,
        beta1,
        beta2,
        eps: o.eps,
        bias_correction1: 1.0 - beta1.powf(step),
        bias_correction2_sqrt: (1.0 - beta2.powf(step)).sqrt(),
    };
    let moments = Moments {
        exp_avg: buffer(state, "exp_avg", p, 0.0)?,
        exp_avg_sq: buffer(state, "exp_avg_sq", p, 0.0)?,
        max_sq: match o.amsgrad {
            true => Some(buffer(state, "max_exp_avg_sq", p, 0.0)?),
            false => None,
        },
    };
    if fused_adam_update(p, grad, &moments, &s)? {
        return Ok(());
    }
    composed_update(p, grad, &moments, &s)
}

/// The update as tensor ops (any device, dtype and layout).
fn composed_update(p: &Tensor, grad: &Tensor, moments: &Moments, s: &AdamStep) -> Result<()> {
    let Moments {
        exp_avg,
        exp_avg_sq,
        max_sq,
    } = moments;
    let grad = if s.decoupled {
        p.mul_scalar_(1.0 - s.lr * s.weight_decay)?;
        effective_grad(grad, p, s.maximize, 0.0)?
    } else {
        effective_grad(grad, p, s.maximize, s.weight_decay)?
    };
    exp_avg.mul_scalar_(s.beta1)?;
    exp_avg.add_scaled_(&grad, 1.0 - s.beta1)?;
    exp_avg_sq.mul_scalar_(s.beta2)?;
    exp_avg_sq.add_scaled_(&grad.mul(&grad)?, 1.0 - s.beta2)?;
    let second = match max_sq {
        Some(max_sq) => {
            max_sq.copy_(&max_sq.maximum(exp_avg_sq)?)?;
            max_sq
        }
        None => exp_avg_sq,
    };
    let denom = second
        .sqrt()?
        .mul_scalar(1.0 / s.bias_correction2_sqrt)?
        .add_scalar(s.eps)?;
    p.add_scaled_(&exp_avg.div(&denom)?, -s.lr / s.bias_correction1)?;
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
            core: OptimizerCore::new("Adam", params.into(), &opts)?,
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
            .for_each_param(|o, p, grad, s| adam_update(o, p, grad, s, false))
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
            core: OptimizerCore::new("AdamW", params.into(), &opts)?,
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
            .for_each_param(|o, p, grad, s| adam_update(o, p, grad, s, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device};

    /// Random values of `dtype`, non-negative when `positive` (second moments).
    fn random(n: usize, dtype: DType, positive: bool) -> Tensor {
        let t = Tensor::randn(&[n], dtype, Device::Cpu).unwrap();
        match positive {
            true => t.abs().unwrap(),
            false => t,
        }
    }

    /// The fused kernel and the composed ops give the same bits, for f32 and f64, Adam's L2
    /// decay and AdamW's decoupled one, maximize and AMSGrad, on one task and on several.
    #[test]
    fn fused_and_composed_updates_agree_bit_for_bit() {
        for dtype in [DType::F32, DType::F64] {
            for n in [37, 40_000] {
                for (decoupled, maximize, amsgrad) in [
                    (false, false, false),
                    (true, false, false),
                    (false, true, true),
                    (true, true, true),
                ] {
                    let s = AdamStep {
                        lr: 1e-2,
                        weight_decay: 0.1,
                        decoupled,
                        maximize,
                        beta1: 0.9,
                        beta2: 0.999,
                        eps: 1e-8,
                        bias_correction1: 1.0 - 0.9f64.powi(3),
                        bias_correction2_sqrt: (1.0 - 0.999f64.powi(3)).sqrt(),
                    };
                    let inputs = [
                        random(n, dtype, false),
                        random(n, dtype, false),
                        random(n, dtype, false),
                        random(n, dtype, true),
                        random(n, dtype, true),
                    ];
                    let copies = || -> Vec<Tensor> {
                        inputs
                            .iter()
                            .map(|t| t.contiguous_copy().unwrap())
                            .collect()
                    };
                    let (a, b) = (copies(), copies());
                    let moments = |c: &[Tensor]| Moments {
                        exp_avg: c[2].clone(),
                        exp_avg_sq: c[3].clone(),
                        max_sq: amsgrad.then(|| c[4].clone()),
                    };
                    assert!(fused_adam_update(&a[0], &a[1], &moments(&a), &s).unwrap());
                    composed_update(&b[0], &b[1], &moments(&b), &s).unwrap();
                    for (x, y) in a.iter().zip(&b) {
                        let (x, y) = (x.to_vec_f64().unwrap(), y.to_vec_f64().unwrap());
                        let same = x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits());
                        assert!(same, "{dtype:?} n={n} decoupled={decoupled} maximize={maximize} amsgrad={amsgrad}");
                    }
                }
            }
        }
    }

    /// A non-contiguous operand or one buffer shared by two of them leaves the update to the
    /// composed ops.
    #[test]
    fn fused_path_declines_strided_and_shared_operands() {
        let s = AdamStep {
            lr: 1e-3,
            weight_decay: 0.0,
            decoupled: false,
            maximize: false,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            bias_correction1: 0.1,
            bias_correction2_sqrt: 0.1,
        };
        let m = || Tensor::zeros(&[4, 3], DType::F32, Device::Cpu).unwrap();
        let strided = Tensor::zeros(&[3, 4], DType::F32, Device::Cpu)
            .unwrap()
            .t()
            .unwrap();
        let moments = || Moments {
            exp_avg: m(),
            exp_avg_sq: m(),
            max_sq: None,
        };
        let g = m();
        assert!(!fused_adam_update(&strided, &g, &moments(), &s).unwrap());
        assert!(!fused_adam_update(&g, &g, &moments(), &s).unwrap());
        let half = Tensor::zeros(&[4, 3], DType::F16, Device::Cpu).unwrap();
        assert!(!fused_adam_update(&half, &half.ones_like().unwrap(), &moments(), &s).unwrap());
    }
}
